package informer

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// logBuffer collects log lines.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) logger() klog.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.lines = append(b.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (b *logBuffer) contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func TestSyncStatusSaysWhyNotSynced(t *testing.T) {
	s := newServer(t, 3)
	var forbid atomic.Bool
	forbid.Store(true)
	s.SetFault(func(_ context.Context, req fake.Request) error {
		if forbid.Load() {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New(`User "bob" cannot list resource "configmaps"`))
		}
		return nil
	})
	buf := &logBuffer{}
	inf := newInformer(s, 0, WithStrategy(ListWatch), WithSyncWarningAfter(20*time.Millisecond))
	if st := inf.SyncStatus(); st.Running || st.Synced {
		t.Fatalf("status before Run: %+v", st)
	}
	runCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), buf.logger()))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(runCtx) }()
	defer func() { cancel(); <-done }()

	eventually(t, "a failure to be recorded", func() bool { return inf.SyncStatus().Failures > 0 })
	st := inf.SyncStatus()
	if st.Synced || !st.Running || !apierrors.IsForbidden(st.LastError) || !strings.Contains(st.Reason, "RBAC") {
		t.Fatalf("status while forbidden: %+v", st)
	}
	if !strings.Contains(st.String(), "forbidden by RBAC") {
		t.Fatalf("status string %q does not say why", st.String())
	}
	eventually(t, "the watchdog's log line", func() bool { return buf.contains("Informer has not synced yet") && buf.contains("forbidden by RBAC") })

	forbid.Store(false)
	waitSynced(t, inf)
	if st := inf.SyncStatus(); !st.Synced || st.LastError != nil || st.Failures != 0 {
		t.Fatalf("status after sync: %+v", st)
	}
	eventually(t, "the synced log line", func() bool { return buf.contains("Informer synced") })
}

// SyncStatus's times, its String and the watchdog's log lines all come from
// the informer's clock.
func TestSyncStatusTimesComeFromTheClock(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	s := newServer(t, 3)
	var forbid atomic.Bool
	forbid.Store(true)
	s.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Verb == "list" && forbid.Load() {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no"))
		}
		return nil
	})
	inf := newInformer(s, 0, WithStrategy(ListWatch), WithClock(clk), WithMetrics(nil), WithSyncWarningAfter(20*time.Second))
	buf := &logBuffer{}
	runCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), buf.logger()))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(runCtx) }()
	defer func() { cancel(); <-done }()

	failures := func(n int) func() bool { return func() bool { return inf.SyncStatus().Failures == n } }
	eventually(t, "the first failure", failures(1))
	st := inf.SyncStatus()
	if !st.Since.Equal(t0) || !st.LastErrorTime.Equal(t0) || !st.At.Equal(t0) {
		t.Fatalf("status %+v, want Since, LastErrorTime and At at the fake clock's %v", st, t0)
	}

	// The watcher backs off on the same clock: each step lets it retry. The
	// watchdog's ticker waits on it all along, so the backoff's timer is the
	// second waiter: a step taken before it is set would be lost.
	backoffWaiting := func() bool { return clk.Waiters() >= 2 }
	eventually(t, "the backoff timer", backoffWaiting)
	clk.Step(10 * time.Second)
	eventually(t, "the second failure", failures(2))
	st = inf.SyncStatus()
	if want := t0.Add(10 * time.Second); !st.LastErrorTime.Equal(want) || !st.Since.Equal(t0) {
		t.Fatalf("status %+v, want the last error at %v, since %v", st, want, t0)
	}
	if got := st.String(); !strings.Contains(got, "not synced after 10s") || !strings.Contains(got, "last 0s ago") {
		t.Fatalf("status string %q, want durations measured on the fake clock", got)
	}

	eventually(t, "the backoff timer", backoffWaiting)
	clk.Step(10 * time.Second) // the watchdog's first tick, at 20s
	eventually(t, "the watchdog's log line", func() bool { return buf.contains(`"not synced after 20s`) })
	// The same step fired the backoff: let its LIST fail before the server
	// lets LISTs through, or it would sync at 20s rather than 30s.
	eventually(t, "the third failure", failures(3))

	forbid.Store(false)
	eventually(t, "the backoff timer", backoffWaiting)
	clk.Step(10 * time.Second)
	waitSynced(t, inf)
	eventually(t, "the synced log line", func() bool { return buf.contains(`"Informer synced"`) && buf.contains(`"after"="30s"`) })
}
