package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/internal/benchkit"
	"github.com/leaninformer/leaninformer/internal/memstat"
	"github.com/leaninformer/leaninformer/internal/testenv"
)

// TestMain lets the test binary serve as the smoke tests' child process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		if os.Getenv(checkEnvEnv) != "" {
			if off := offDefaults(os.Environ()); len(off) > 0 {
				fmt.Fprintf(os.Stderr, "the child runs off the defaults: %v\n", off)
				os.Exit(3)
			}
		}
		if canned := os.Getenv(cannedResultEnv); canned != "" {
			fmt.Println(msgResult + canned) // a child that measured this
			os.Exit(0)
		}
		os.Exit(childMain(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

// cannedResultEnv makes the test binary, as a child, print that Result.
const cannedResultEnv = "LOAD_TEST_CANNED_RESULT"

// checkEnvEnv makes the test binary, as a child, fail when its environment
// holds a setting users' processes do not have (offDefaults).
const checkEnvEnv = "LOAD_TEST_CHECK_ENV"

// offDefaults returns the variables of env that move a child off the
// defaults: a GOGC other than 100, a GOMEMLIMIT, any of client-go's KUBE_
// switches.
func offDefaults(env []string) []string {
	var off []string
	for _, kv := range env {
		if (strings.HasPrefix(kv, "GOGC=") && kv != "GOGC=100") || strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "KUBE_") {
			off = append(off, kv)
		}
	}
	return off
}

// A child runs as users' processes do whatever the parent's environment
// says: default GOGC, no GOMEMLIMIT, client-go's default feature gates and
// none of its debugging switches (KUBE_CACHE_MUTATION_DETECTOR, which
// Kubernetes' test scripts export, keeps a copy of every object client-go's
// informer stores).
func TestChildRunsWithTheDefaults(t *testing.T) {
	for kv, v := range map[string]string{"GOGC": "off", "GOMEMLIMIT": "1GiB", "KUBE_FEATURE_WatchListClient": "false",
		"KUBE_CACHE_MUTATION_DETECTOR": "true", "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR": "true"} {
		t.Setenv(kv, v)
	}
	t.Setenv(checkEnvEnv, "1")
	t.Setenv(cannedResultEnv, `{"backend":"fake","informer":"client-go","handlers":"fast","rate":200,"writes":100,"windowSeconds":1,"fast":{"calls":100}}`)
	o, err := parseOptions([]string{"--backends", "fake", "--rates", "200", "--handlers", "fast", "--informers", "client-go", "--out", t.TempDir()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o.exe = os.Args[0]
	if err := run(context.Background(), o, io.Discard, io.Discard); err != nil {
		t.Errorf("run with GOGC, GOMEMLIMIT and client-go's KUBE_ switches set in the parent: %v", err)
	}
}

// A run in which the fast handler missed writes, an informer relisted or an
// update came without its write time fails: it does not become a row.
func TestRunFailsOnLostEvents(t *testing.T) {
	for _, bad := range []string{`"missed":3`, `"relists":1`, `"fast":{"calls":100,"unstamped":2}`} {
		t.Run(bad, func(t *testing.T) {
			t.Setenv(cannedResultEnv, `{"backend":"fake","informer":"client-go","handlers":"fast","rate":200,"writes":100,"windowSeconds":1,`+bad+`}`)
			o, err := parseOptions([]string{"--backends", "fake", "--rates", "200", "--handlers", "fast", "--informers", "client-go", "--out", t.TempDir()}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			o.exe = os.Args[0]
			var stdout bytes.Buffer
			if err := run(context.Background(), o, &stdout, io.Discard); err == nil {
				t.Errorf("a child reporting %s: the run succeeded and reported\n%s", bad, stdout.String())
			}
		})
	}
}

func TestLatencyQuantiles(t *testing.T) {
	var h latencies
	if h.quantile(0.5) != 0 {
		t.Error("an empty histogram has a median")
	}
	// 1..100,000 µs: the q-quantile is q*100 ms.
	for i := 1; i <= 100000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	h.record(-time.Second) // a clock step: counted as 0
	if h.count() != 100001 {
		t.Fatalf("count = %d", h.count())
	}
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99} {
		want := q * 100 * float64(time.Millisecond)
		if got := float64(h.quantile(q)); math.Abs(got-want)/want > 1.0/64 {
			t.Errorf("quantile(%v) = %v, want %v within 1/64", q, time.Duration(got), time.Duration(want))
		}
	}
	if got := h.quantile(1); got != 100*time.Millisecond {
		t.Errorf("max = %v, want exactly 100ms", got)
	}
	for _, d := range []time.Duration{0, 1, 127, 128, 129, 1000, 1 << 40, math.MaxInt64} {
		if i := bucketOf(d); i < 0 || i >= histBuckets {
			t.Fatalf("bucketOf(%d) = %d, outside [0, %d)", d, i, histBuckets)
		}
		mid := bucketMid(bucketOf(d))
		if d >= histExact && math.Abs(float64(mid)-float64(d))/float64(d) > 1.0/64 {
			t.Errorf("bucket of %d has its middle at %d", d, mid)
		}
	}
}

// The q-quantile is the nearest rank, ceil(q*n): the smallest recorded
// value that at least q of the calls do not exceed. Rounding q*n instead
// put the p99 of 70 calls at the 69th, below which only 98.6% of them lie.
func TestLatencyQuantileIsTheNearestRank(t *testing.T) {
	for _, tc := range []struct {
		n    int
		q    float64
		want time.Duration
	}{
		{70, 0.99, 70}, {71, 0.99, 71}, {100, 0.99, 99}, {3, 0.5, 2}, {4, 0.5, 2}, {1, 0.99, 1},
	} {
		var h latencies
		for i := 1; i <= tc.n; i++ {
			h.record(time.Duration(i)) // below histExact: one bucket each, exact
		}
		if got := h.quantile(tc.q); got != tc.want {
			t.Errorf("%d values 1..%d: quantile(%v) = %d, want %d", tc.n, tc.n, tc.q, got, tc.want)
		}
	}
}

var retained []byte

// PeakLive is the largest live heap a GC marked in the window: a GC before
// the window, which marked what the program freed before it began (the
// initial list, say), is not the window's.
func TestPeakLiveIsTheWindows(t *testing.T) {
	base := memstat.HeapAfterGC()
	retained = make([]byte, 64<<20)
	runtime.GC() // marks the 64 MiB live
	retained = nil
	w, err := startWindow(time.Hour, base, []*handler{{}})
	if err != nil {
		t.Fatal(err)
	}
	res := w.stop(0)
	if res.GCs == 0 && res.PeakLive >= 32<<20 {
		t.Errorf("no GC in the window, yet peak live %.1f MiB: the 64 MiB a GC before the window marked (end heap %.1f MiB)",
			mib(res.PeakLive), mib(res.EndHeap))
	}
}

// Catch-up counts from the window's end, not from after the full GCs that
// end it and the wait for the fast handler (40 ms of 8 s in a run at
// 2,000/s on the fake, more with a larger heap).
func TestCatchUpCountsFromTheWindowsEnd(t *testing.T) {
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	s, caughtUp := catchUp(context.Background(), trackingLatest(0), store, time.Now().Add(-time.Second), time.Minute)
	if !caughtUp || s < 1 {
		t.Errorf("catch-up of a handler that had heard everything a second after the window: %.3f s, %v; want 1 s or a little more", s, caughtUp)
	}
}

// A GC in the window that marks a large live heap counts in PeakLive even
// when the heap samples (every --sample-interval) fall on either side of it.
func TestPeakLiveSeesEveryGC(t *testing.T) {
	base := memstat.HeapAfterGC()
	w, err := startWindow(time.Hour, base, []*handler{{}})
	if err != nil {
		t.Fatal(err)
	}
	retained = make([]byte, 64<<20)
	runtime.GC() // marks the 64 MiB live, between two samples
	time.Sleep(50 * time.Millisecond)
	retained = nil
	runtime.GC()
	res := w.stop(0)
	if res.PeakLive < 64<<20 {
		t.Errorf("peak live %.1f MiB after %d GCs in the window, one of which marked 64 MiB", mib(res.PeakLive), res.GCs)
	}
}

func TestScheduleKeepsTheRate(t *testing.T) {
	var calls atomic.Int64
	start := time.Now()
	n, err := schedule{rate: 200, duration: 500 * time.Millisecond, workers: 3}.run(context.Background(), func(context.Context, int) error {
		calls.Add(1)
		return nil
	})
	elapsed := time.Since(start)
	// 200/s for 0.5 s: the writes due at 0, 5, ..., 495 ms. A write whose
	// timer fires after the end is dropped, and so is every write due later:
	// a stall of the process near the end (a loaded machine) drops the writes
	// due in about its length, and shows as the run ending that much late.
	// So the writes missing are bounded by how late the run ended, plus one
	// per worker whose timer was the one that fired late.
	late := max(elapsed-500*time.Millisecond, 0)
	mayMiss := int64(late.Seconds()*200) + 1 + 3
	if err != nil || n < 100-mayMiss || n > 100 || calls.Load() != n {
		t.Errorf("run = %d, %v after %d calls in %v; want 100 writes, or at most %d less for ending %v late",
			n, err, calls.Load(), elapsed, mayMiss, late)
	}
	if elapsed < 490*time.Millisecond {
		t.Errorf("100 writes at 200/s took %v, want about 500ms", elapsed)
	}

	boom := errors.New("boom")
	start = time.Now()
	n, err = schedule{rate: 0, duration: time.Minute, workers: 2}.run(context.Background(), func(_ context.Context, i int) error {
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "write 10") || time.Since(start) > 10*time.Second {
		t.Errorf("a failing write: %d writes in %v, error %v; want it named and the minute's schedule stopped", n, time.Since(start), err)
	}

	// A closed loop: ready holds every write back while 5 are in flight.
	var written, seen atomic.Int64
	ready := func() bool { return written.Load()-seen.Load() < 5 }
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				seen.Store(written.Load()) // a consumer catching up every 10 ms
			}
		}
	}()
	n, err = schedule{duration: 200 * time.Millisecond, workers: 1, ready: ready}.run(context.Background(), func(context.Context, int) error {
		if written.Load()-seen.Load() >= 5 {
			return errors.New("wrote past the window")
		}
		written.Add(1)
		return nil
	})
	close(stop)
	if err != nil || n < 5 || n > 5*25 {
		t.Errorf("closed loop: %d writes, %v; want between one window and one per 2 ms", n, err)
	}
	if _, err := (schedule{duration: time.Second}).run(context.Background(), nil); err == nil {
		t.Error("a schedule without workers ran")
	}
}

func TestSlowHandlerAveragesItsDelay(t *testing.T) {
	h := &handler{delay: time.Millisecond}
	obj := configMap(1)
	start := time.Now()
	for range 500 {
		h.OnUpdate(obj, obj)
	}
	// 500 calls of 1 ms each; a sleep's overshoot (50 µs and more) is paid
	// back by the next calls, so the whole stays near 500 ms however coarse
	// the timer: sleeping 1 ms per call would take 525 ms or more.
	if elapsed := time.Since(start); elapsed < 500*time.Millisecond || elapsed > 520*time.Millisecond {
		t.Errorf("500 calls of a 1 ms handler took %v, want about 500ms", elapsed)
	}
	if h.updates.Load() != 500 || h.windowUpdates.Load() != 0 {
		t.Errorf("updates %d, window updates %d: want 500, and none outside a window", h.updates.Load(), h.windowUpdates.Load())
	}
}

func TestHandlerMeasuresFromTheWriteTime(t *testing.T) {
	h := &handler{}
	h.recording.Store(true)
	obj := configMap(1)
	obj.Annotations = map[string]string{writtenAtAnnotation: stamp(time.Now().Add(-30 * time.Millisecond))}
	h.OnUpdate(nil, obj)
	h.OnUpdate(nil, configMap(2)) // no annotation
	f := h.figures(3, 1)
	if f.Calls != 2 || f.Unstamped != 1 || f.Backlog != 1 || f.P50Ms < 30 || f.P50Ms > 1000 {
		t.Errorf("figures %+v: want 2 calls, 1 unstamped, backlog 1, a latency of 30 ms or a little more", f)
	}
	if _, ok := writtenAt(&metav1.Status{}); ok {
		t.Error("a Status has a write time")
	}
}

func TestParseOptions(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseOptions([]string{"--backends", "fake", "--rates", "100, max", "--handlers", "fast+slow", "--informers", "ours"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.backends) != 1 || len(o.rates) != 2 || o.rates[1] != 0 || o.handlerSets[0] != fastAndSlow || o.informers[0].name != "ours" {
		t.Errorf("parsed %+v", o)
	}
	// The control runs only when named.
	o, err = parseOptions(nil, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range o.informers {
		names = append(names, v.name)
	}
	if got, want := strings.Join(names, ","), "client-go,ours,ours-coalesce"; got != want {
		t.Errorf("default informers %s, want %s", got, want)
	}
	if o, err = parseOptions([]string{"--informers", "client-go," + controlInformer}, &stderr); err != nil || !o.informers[1].control {
		t.Errorf("--informers client-go,%s: %+v, %v", controlInformer, o.informers, err)
	}
	for _, tc := range []struct{ args, want string }{
		{"--rates 0", `rate "0"`},
		{"--rates fast", `rate "fast"`},
		{"--backends kind", `unknown backend "kind"`},
		{"--handlers slow", `unknown handler set "slow"`},
		{"--informers upstream", `unknown informer "upstream"`},
		{"--rates ,", "--rates is empty"},
		{"--objects 0", "--objects must be positive"},
		{"--duration 0s", "--duration must be positive"},
		{"--inflight 0", "--inflight must be positive"},
	} {
		if _, err := parseOptions(strings.Fields(tc.args), &stderr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseOptions(%s) error %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}

func TestJobsSkipTheSlowHandlerAtMaxAndAlternate(t *testing.T) {
	o := options{rates: []float64{500, 0}, handlerSets: []handlerSet{fastOnly, fastAndSlow}, informers: informerVariants[:2], runs: 2}
	var got []string
	for _, j := range o.jobs(fakeBackend) {
		got = append(got, j.String())
	}
	want := []string{
		"fake 500/s fast client-go run 1", "fake 500/s fast ours run 1", "fake 500/s fast ours run 2", "fake 500/s fast client-go run 2",
		"fake 500/s fast+slow client-go run 1", "fake 500/s fast+slow ours run 1", "fake 500/s fast+slow ours run 2", "fake 500/s fast+slow client-go run 2",
		"fake max/s fast client-go run 1", "fake max/s fast ours run 1", "fake max/s fast ours run 2", "fake max/s fast client-go run 2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("jobs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	o.slowAtMax = true
	if n := len(o.jobs(fakeBackend)); n != 16 {
		t.Errorf("with --slow-at-max: %d jobs, want 16", n)
	}
	// The coalescing variant differs from ours only with the slow handler.
	o.slowAtMax, o.informers = false, informerVariants
	var coalescing []string
	for _, j := range o.jobs(fakeBackend) {
		if j.informer.coalesceSlow {
			coalescing = append(coalescing, j.String())
		}
	}
	if want := []string{"fake 500/s fast+slow ours-coalesce run 1", "fake 500/s fast+slow ours-coalesce run 2"}; fmt.Sprint(coalescing) != fmt.Sprint(want) {
		t.Errorf("coalescing jobs %q, want %q", coalescing, want)
	}
	// Without the slow handler the order rotates among the informers that
	// run: over 4 runs each of the two goes first twice. (Rotating all
	// three and then skipping the coalescing one put client-go first 3
	// times.)
	o.informers = nil
	for _, name := range defaultInformerNames() {
		inf, err := findInformer(name)
		if err != nil {
			t.Fatal(err)
		}
		o.informers = append(o.informers, inf)
	}
	o.runs = 4
	first := map[string]int{}
	last := -1
	for _, j := range o.jobs(fakeBackend) {
		if !j.handlers.slow() && j.rate == 500 && j.run != last {
			first[j.informer.name]++
			last = j.run
		}
	}
	if first["client-go"] != 2 || first["ours"] != 2 {
		t.Errorf("with the fast handler alone, first places over 4 runs: %v, want 2 each", first)
	}
}

// With more than two informers the order rotates, so that over as many runs
// as informers each one takes every place once (reversing would keep the
// middle one in the middle).
func TestJobsRotateTheInformers(t *testing.T) {
	control, err := findInformer(controlInformer)
	if err != nil {
		t.Fatal(err)
	}
	o := options{rates: []float64{500}, handlerSets: []handlerSet{fastOnly}, informers: append(slices.Clone(informerVariants[:2]), control), runs: 3}
	var got []string
	for _, j := range o.jobs(fakeBackend) {
		got = append(got, j.informer.name)
	}
	want := "client-go ours client-go-control ours client-go-control client-go client-go-control client-go ours"
	if strings.Join(got, " ") != want {
		t.Errorf("informer order %s, want %s", strings.Join(got, " "), want)
	}
}

func TestGoals(t *testing.T) {
	row := func(inf string, rate float64, writes, calls int64, perSecond, p99 float64) Row {
		return Row{Backend: fakeBackend, Rate: rate, Handlers: string(fastOnly), Informer: inf,
			Median: Result{Rate: rate, Writes: writes, Fast: Handler{Calls: calls, Share: share(calls, writes), PerSecond: perSecond, P99Ms: p99}}}
	}
	gs := goals([]Row{
		// At a target rate, throughput is the share of the writes: 59,999
		// of 60,000 rounds to the same as all of 60,100.
		row("client-go", 1000, 60100, 60100, 1001, 10),
		row("ours", 1000, 60000, 59999, 999, 10.004),
		row("client-go", 0, 0, 0, 20000, 50),
		row("ours", 0, 0, 0, 19000, 40),
	})
	want := []string{
		"fake 1000/s fast fast handler: throughput >= client-go's 1.000 true",
		"fake 1000/s fast fast handler: p99 latency <= client-go's 1.000 true",
		"fake max/s fast fast handler: throughput >= client-go's 0.950 false",
		"fake max/s fast fast handler: p99 latency <= client-go's 0.800 true",
	}
	var got []string
	for _, g := range gs {
		got = append(got, fmt.Sprintf("%s %s %.3f %v", g.Scenario, g.Goal, g.Ratio, g.Met))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("goals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// At a target rate, a row's throughput is the median over its runs of the
// share of the writes each got, not the median calls over the median
// writes, which mixes runs: ours got every write in two runs of three, and
// the ratio of medians made that 0.990.
func TestThroughputIsTheMedianShare(t *testing.T) {
	var results []Result
	add := func(inf string, writes, calls int64) {
		h := &handler{}
		h.windowUpdates.Store(calls)
		results = append(results, Result{Backend: fakeBackend, Rate: 1000, Handlers: string(fastOnly), Informer: inf,
			Writes: writes, WindowSeconds: 1, Fast: h.figures(writes, 1)})
	}
	for range 3 {
		add("client-go", 1000, 1000)
	}
	add("ours", 1000, 1000)
	add("ours", 1010, 1010)
	add("ours", 1020, 1000)
	var rows []Row
	for _, inf := range []string{"client-go", "ours"} {
		row, ok := aggregate(results, fakeBackend, 1000, string(fastOnly), inf)
		if !ok {
			t.Fatal(inf, "has no row")
		}
		rows = append(rows, row)
	}
	for _, g := range goals(rows) {
		if g.AtLeast && (g.Ratio != 1 || !g.Met) {
			t.Errorf("%s: ratio %.3f, met %v; want 1.000 (the median run got every write)", g.Goal, g.Ratio, g.Met)
		}
	}
}

// The control's comparisons are marked as such and show beside ours in the
// goal table, not as goals of their own.
func TestGoalsWithTheControl(t *testing.T) {
	row := func(inf string, p99 float64) Row {
		return Row{Backend: fakeBackend, Rate: 0, Handlers: string(fastOnly), Informer: inf,
			Median: Result{Fast: Handler{PerSecond: 1000, P99Ms: p99}}}
	}
	r := &Report{Goals: goals([]Row{row("client-go", 10), row("ours", 11), row(controlInformer, 12)})}
	var got []string
	for _, g := range r.Goals {
		got = append(got, fmt.Sprintf("%s %s %.3f %v %v", g.Ours, g.Goal, g.Ratio, g.Met, g.Control))
	}
	want := []string{
		"ours fast handler: throughput >= client-go's 1.000 true false",
		"ours fast handler: p99 latency <= client-go's 1.100 false false",
		"client-go-control fast handler: throughput >= client-go's 1.000 true true",
		"client-go-control fast handler: p99 latency <= client-go's 1.200 false true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("goals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	table := r.goalTable()
	for _, line := range []string{
		"| scenario | informer | goal | ratio | met | control |",
		"| fake max/s fast | ours | fast handler: p99 latency <= client-go's | 1.100 | no | 1.200 |",
	} {
		if !strings.Contains(table, line+"\n") {
			t.Errorf("goal table lacks %q:\n%s", line, table)
		}
	}
	if strings.Contains(table, "| client-go-control |") {
		t.Errorf("the control has rows of its own beside ours:\n%s", table)
	}
	// Without ours in the run, the control's ratios are rows of their own.
	r = &Report{Goals: goals([]Row{row("client-go", 10), row(controlInformer, 12)})}
	if line := "| fake max/s fast | client-go-control | fast handler: p99 latency <= client-go's | 1.200 | control | |"; !strings.Contains(r.goalTable(), line+"\n") {
		t.Errorf("goal table lacks %q:\n%s", line, r.goalTable())
	}
}

func TestHeapChartIsValidSVG(t *testing.T) {
	series := func(scale int64) []Sample {
		return []Sample{{Seconds: 0, Heap: 0, Live: -1 << 20}, {Seconds: 30, Heap: scale << 20, Live: scale << 19}, {Seconds: 61, Heap: 2 * scale << 20, Live: scale << 20}}
	}
	svg := heapChartSVG("a <title> & more", []line{{"client-go", series(100)}, {"ours", series(40)}})
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Fatalf("chart is not well-formed XML: %v\n%s", err, svg)
	}
	if n := bytes.Count(svg, []byte("<polyline")); n != 4 {
		t.Errorf("chart has %d lines, want 4 (heap and live per informer)", n)
	}
}

// smokeOptions are a run small enough for go test.
func smokeOptions(t *testing.T, backend string) options {
	t.Helper()
	o, err := parseOptions([]string{
		"--backends", backend, "--rates", "200,max", "--objects", "300", "--duration", "2s",
		"--sample-interval", "100ms", "--writers", "8", "--inflight", "50", "--out", t.TempDir(),
	}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	o.exe = os.Args[0] // this test binary, see TestMain
	return o
}

// runSmoke runs o and checks what every backend's report must hold: a row
// per informer and scenario, every write delivered, no relist, figures that
// add up, and a heap chart per rate run with the slow handler.
func runSmoke(t *testing.T, ctx context.Context, o options) *Report {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, o, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(o.out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	// 200/s: fast and fast+slow, max: fast alone, each with client-go and
	// ours; the coalescing variant with the slow handler only.
	if len(rep.Rows) != 7 || len(rep.AllRuns) != 7 {
		t.Fatalf("%d rows from %d runs, want 7 of each:\n%s", len(rep.Rows), len(rep.AllRuns), stdout.String())
	}
	for _, row := range rep.Rows {
		m := row.Median
		name := row.scenario() + " " + row.Informer
		if m.Writes < 50 || m.Missed != 0 || m.Relists != 0 || m.Fast.Calls == 0 || m.Fast.Unstamped != 0 {
			t.Errorf("%s: %d writes, %d missed, %d relists, fast handler %+v", name, m.Writes, m.Missed, m.Relists, m.Fast)
		}
		if m.Fast.P50Ms <= 0 || m.Fast.P99Ms < m.Fast.P50Ms || m.Fast.MaxMs < m.Fast.P99Ms {
			t.Errorf("%s: fast handler latencies %+v are not ordered", name, m.Fast)
		}
		if m.PeakLive <= 0 || m.CPUSeconds <= 0 || m.BaselineHeap == 0 || len(m.Series) < 10 {
			t.Errorf("%s: implausible figures %+v", name, m)
		}
		if (m.Slow != nil) != (row.Handlers == string(fastAndSlow)) {
			t.Errorf("%s: slow handler figures %+v", name, m.Slow)
		}
		if m.Slow != nil && (m.Slow.Calls == 0 || m.Slow.Calls+m.Slow.Backlog != m.Writes || !m.Slow.CaughtUp) {
			t.Errorf("%s: slow handler %+v does not account for the %d writes, or never caught up", name, *m.Slow, m.Writes)
		}
		// Never faster than the target; on the fake, which takes any rate
		// here, about the target (a real API server on a loaded machine may
		// take fewer).
		rate := float64(m.Writes) / m.WindowSeconds
		if row.Rate > 0 && (rate > row.Rate*1.1 || row.Backend == fakeBackend && rate < row.Rate*0.75) {
			t.Errorf("%s: %d writes in %.1f s, want about %v/s", name, m.Writes, m.WindowSeconds, row.Rate)
		}
	}
	md, err := os.ReadFile(filepath.Join(o.out, "results.md"))
	if err != nil || string(md) != stdout.String() {
		t.Errorf("results.md (err %v) differs from stdout", err)
	}
	if !strings.Contains(string(md), "Coalescing against the unbounded queue") || !strings.Contains(string(md), "| ours-coalesce |") {
		t.Errorf("results.md has no coalescing comparison:\n%s", md)
	}
	svg, err := os.ReadFile(filepath.Join(o.out, chartName(o.backends[0], 200)))
	if err != nil || xml.Unmarshal(svg, new(struct{})) != nil {
		t.Errorf("heap chart missing or not XML: %v", err)
	}
	return &rep
}

// TestSmokeFake runs the whole program on the fake backend: children (this
// test binary), their in-process fake servers and writers.
func TestSmokeFake(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six child processes for a few seconds each")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep := runSmoke(t, ctx, smokeOptions(t, fakeBackend))
	for _, row := range rep.Rows {
		// The closed loop keeps at most --inflight writes ahead: the
		// backlog at the end cannot exceed it.
		if row.Rate == 0 && row.Median.Fast.Backlog > 50 {
			t.Errorf("%s %s: backlog %d at the max rate, want at most --inflight 50", row.scenario(), row.Informer, row.Median.Fast.Backlog)
		}
	}
}

// TestSmokeEnvtest runs the whole program on a real API server, which the
// parent writes to while the children watch. The cluster holds more load
// ConfigMaps than the run asks for, as after an earlier, larger run: the
// parent must delete them, or the children's store checks fail.
func TestSmokeEnvtest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	if _, err := testenv.AssetsDir(); err != nil {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			t.Skipf("no envtest binaries (make test builds them): %v", err)
		}
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := testenv.StartCluster("")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	}()
	cs, err := kubernetes.NewForConfig(cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := populate(ctx, cs, 320, 8, benchkit.NewProgress(io.Discard)); err != nil {
		t.Fatal(err)
	}

	o := smokeOptions(t, envtestBackend)
	o.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(o.kubeconfig, cl.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	rep := runSmoke(t, ctx, o)
	if rep.ServerVersion == "" || rep.ServerVersion == "unknown" {
		t.Errorf("server version %q", rep.ServerVersion)
	}
	list, err := cs.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: loadLabel + "=" + loadLabelValue})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 300 {
		t.Errorf("the cluster holds %d load ConfigMaps after a run of 300, want 300", len(list.Items))
	}
	stamped := 0
	for _, cm := range list.Items {
		if _, ok := writtenAt(&cm); ok {
			stamped++
		}
	}
	if stamped == 0 {
		t.Error("no load ConfigMap carries a write time: the parent wrote nothing")
	}
}
