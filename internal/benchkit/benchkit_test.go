package benchkit

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

// Parallel runs goroutines: none may outlive it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), tc.xs...)
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.xs[i] {
				t.Errorf("Median reordered its input: %v", tc.xs)
			}
		}
	}
}

func TestAxisStep(t *testing.T) {
	for raw, want := range map[float64]float64{0.3: 0.5, 7: 10, 42: 50, 180: 200, 1: 1, 0: 1, -3: 1} {
		if got := AxisStep(raw); got != want {
			t.Errorf("AxisStep(%v) = %v, want %v", raw, got, want)
		}
	}
}

func TestParallel(t *testing.T) {
	var sum atomic.Int64
	var last int
	err := Parallel(context.Background(), 4, 100, func(_ context.Context, i int) error {
		sum.Add(int64(i))
		return nil
	}, func(done int) { last = done })
	if err != nil || sum.Load() != 4950 || last != 100 {
		t.Errorf("Parallel over 0..99: error %v, sum %d, last progress %d; want nil, 4950, 100", err, sum.Load(), last)
	}

	boom := errors.New("boom")
	var calls atomic.Int64
	err = Parallel(context.Background(), 2, 1000, func(_ context.Context, i int) error {
		calls.Add(1)
		if i == 3 {
			return boom
		}
		return nil
	}, func(int) {})
	if !errors.Is(err, boom) || calls.Load() == 1000 {
		t.Errorf("Parallel with a failing call: error %v after %d calls; want boom, and a stop before all 1000", err, calls.Load())
	}
}

func TestProcessFigures(t *testing.T) {
	rss, err := ProcStatus("VmRSS")
	if err != nil || rss < 1<<20 {
		t.Fatalf("VmRSS = %d, %v; want at least 1 MiB", rss, err)
	}
	if _, err := ProcStatus("NoSuchField"); err == nil || !strings.Contains(err.Error(), "NoSuchField") {
		t.Errorf("ProcStatus(NoSuchField) error %v, want one naming the field", err)
	}
	if err := ResetPeakRSS(); err != nil {
		t.Fatal(err)
	}
	if hwm, err := ProcStatus("VmHWM"); err != nil || hwm < rss/2 {
		t.Errorf("VmHWM after reset = %d, %v; want about VmRSS %d", hwm, err, rss)
	}
	cpu := CPUSeconds()
	for x := 0; CPUSeconds() == cpu; x++ { // spin until the kernel accounts a tick
		_ = x * x
	}
	if l, err := LoadAverage(); err != nil || l < 0 {
		t.Errorf("LoadAverage() = %v, %v", l, err)
	}
	if m := DescribeMachine(); m.Cores < 1 || m.Go == "" || !strings.Contains(m.String(), "cores") {
		t.Errorf("DescribeMachine() = %+v (%s)", m, m)
	}
}

func TestProgressInALogPrintsLines(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b)
	p.Step("one")
	p.Set("dropped: within 5 s of the last line")
	p.Finish("two")
	if got := b.String(); got != "one\ntwo\n" {
		t.Errorf("log = %q, want %q", got, "one\ntwo\n")
	}
}

func TestWaitFor(t *testing.T) {
	done := make(chan struct{})
	close(done)
	if err := WaitFor(context.Background(), done, "a closed channel"); err != nil {
		t.Errorf("WaitFor(closed) = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := WaitFor(ctx, make(chan struct{}), "the informer to sync")
	if err == nil || !strings.Contains(err.Error(), "the informer to sync") || !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor(cancelled) = %v, want an error naming what it waited for, wrapping context.Canceled", err)
	}
}

func TestChildEnv(t *testing.T) {
	env := ChildEnv([]string{"PATH=/bin", "GOGC=off", "GOMEMLIMIT=1", "KUBE_FEATURE_WatchListClient=false",
		"KUBE_CACHE_MUTATION_DETECTOR=true", "KUBECONFIG=/k", "KUBEBUILDER_ASSETS=/a"}, 100, 0, "X=1")
	want := []string{"PATH=/bin", "KUBECONFIG=/k", "KUBEBUILDER_ASSETS=/a", "GOGC=100", "X=1"}
	if !slices.Equal(env, want) {
		t.Errorf("ChildEnv = %v, want %v", env, want)
	}
	if env := ChildEnv(nil, 50, 1234); !slices.Equal(env, []string{"GOGC=50", "GOMEMLIMIT=1234"}) {
		t.Errorf("ChildEnv with a memory limit = %v", env)
	}
}
