package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/internal/benchkit"
	"github.com/leaninformer/leaninformer/internal/memstat"
)

// childFlag, as the first argument, makes the program a child that measures
// one informer under one load and prints its Result.
const childFlag = "--child"

// The backends.
const (
	envtestBackend = "envtest"
	fakeBackend    = "fake"
)

type childOptions struct {
	backend    string
	informer   string
	handlers   string
	kubeconfig string
	objects    int
	rate       float64
	duration   time.Duration
	interval   time.Duration
	inflight   int64
	run        int
	catchUp    time.Duration
}

func childMain(args []string) int {
	var o childOptions
	fs := flag.NewFlagSet("load "+childFlag, flag.ContinueOnError)
	fs.StringVar(&o.backend, "backend", fakeBackend, "envtest (the parent writes to the API server) or fake (an in-process fake server and writer)")
	fs.StringVar(&o.informer, "informer", "", "informer to measure: "+strings.Join(informerNames(), ", "))
	fs.StringVar(&o.handlers, "handlers", string(fastOnly), "handler set: fast or fast+slow")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (envtest backend)")
	fs.IntVar(&o.objects, "objects", 10000, "load objects")
	fs.Float64Var(&o.rate, "rate", 500, "writes per second (fake backend); 0 keeps --inflight writes ahead of the fast handler")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long the writes go on (fake backend)")
	fs.DurationVar(&o.interval, "sample-interval", 500*time.Millisecond, "heap sampling interval")
	fs.Int64Var(&o.inflight, "inflight", 1000, "writes ahead of the fast handler at rate 0 (fake backend)")
	fs.IntVar(&o.run, "run", 0, "run number, for the report")
	fs.DurationVar(&o.catchUp, "catch-up", 2*time.Minute, "how long the fast handler may take to get every write after the window")
	timeout := fs.Duration("timeout", 20*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := runChild(ctx, o, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "load child %s/%s: %v\n", o.backend, o.informer, err)
		return 1
	}
	return 0
}

func runChild(ctx context.Context, o childOptions, in io.Reader, out io.Writer) error {
	v, err := findInformer(o.informer)
	if err != nil {
		return err
	}
	hs, err := parseHandlerSet(o.handlers)
	if err != nil {
		return err
	}
	var src source
	switch o.backend {
	case envtestBackend:
		src, err = newClusterSource(o.kubeconfig, in, out)
	case fakeBackend:
		src, err = newFakeSource(o.objects, schedule{rate: o.rate, duration: o.duration}, o.inflight)
	default:
		err = fmt.Errorf("unknown backend %q (known: %s, %s)", o.backend, envtestBackend, fakeBackend)
	}
	if err != nil {
		return err
	}
	defer src.close()

	base := memstat.HeapAfterGC()
	lw, lists := src.listWatch()
	inf := v.new(lw, toolscache.SharedIndexInformerOptions{
		Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
	})
	fast := &handler{}
	handlers := []*handler{fast}
	registered := []toolscache.ResourceEventHandler{fast}
	var slow *handler
	if hs.slow() {
		slow = trackingLatest(slowHandlerDelay)
		handlers = append(handlers, slow)
		registered = append(registered, v.slowHandler(slow))
	}
	var regs []toolscache.ResourceEventHandlerRegistration
	for _, h := range registered {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return fmt.Errorf("add event handler: %w", err)
		}
		regs = append(regs, reg)
	}
	runCtx, stopInformer := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Go(func() { inf.RunWithContext(runCtx) })
	defer running.Wait()
	defer stopInformer()
	for _, reg := range regs {
		if err := benchkit.WaitFor(ctx, reg.HasSyncedChecker().Done(), "the informer and its handlers to sync"); err != nil {
			return err
		}
	}
	if n := countLoad(inf.GetStore().List()); n != o.objects {
		return fmt.Errorf("synced with %d load objects in the store, want %d", n, o.objects)
	}
	initialLists := lists.count()

	w, err := startWindow(o.interval, base, handlers)
	if err != nil {
		return err
	}
	writes, err := src.writes(ctx, fast)
	if err != nil {
		return err
	}
	res := w.stop(writes)
	res.Backend, res.Informer, res.Handlers, res.Rate, res.Run, res.Objects = o.backend, v.name, string(hs), o.rate, o.run, o.objects

	// Every write must reach the fast handler: a lost event would flatter
	// the figures.
	caughtUp := time.Now().Add(o.catchUp)
	for fast.updates.Load() < writes && time.Now().Before(caughtUp) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	res.Missed = max(0, writes-fast.updates.Load())
	if slow != nil {
		res.Slow.CatchUpSeconds, res.Slow.CaughtUp = catchUp(ctx, slow, inf.GetStore(), w.end, o.catchUp)
	}
	res.Relists = lists.count() - initialLists
	stopInformer()
	running.Wait()

	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s%s\n", msgResult, b)
	return err
}

// catchUp waits, up to limit after start (the window's end), until h has
// heard of the last write of every object in store, and returns how long
// after start that was: the full GCs that end the window and the wait for
// the fast handler are part of it.
func catchUp(ctx context.Context, h *handler, store toolscache.Store, start time.Time, limit time.Duration) (float64, bool) {
	for !h.heardAll(store.List()) {
		if time.Since(start) > limit || ctx.Err() != nil {
			return time.Since(start).Seconds(), false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start).Seconds(), true
}

func countLoad(objs []any) int {
	n := 0
	for _, o := range objs {
		if isLoad(o) {
			n++
		}
	}
	return n
}

// window is the measured stretch of a child's life: the writes.
type window struct {
	base     uint64
	handlers []*handler
	start    time.Time
	end      time.Time // when stop ended the window
	cpu0     float64
	gcs0     uint64
	interval time.Duration

	stopSampling chan struct{}
	sampled      chan []Sample

	// closed ends watchGCs; gcLive is the largest live heap (above base)
	// that a GC in the window marked, as watchGCs saw it after each cycle.
	closed atomic.Bool
	gcMu   sync.Mutex
	gcLive int64
}

// gcSentinel is garbage whose finalizer runs after each GC cycle. It holds
// a pointer, so that it is not batched with other tiny objects.
type gcSentinel struct {
	_ *int
	_ [2]int
}

// watchGCs records the live heap each GC cycle marked until the window
// closes: the samples, every interval, see only the last cycle's, and under
// load the collector runs many times an interval.
func (w *window) watchGCs() {
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		if w.closed.Load() {
			return
		}
		if m := memstat.Read(); m.GCs > w.gcs0 { // GCs read before Live
			w.gcMu.Lock()
			w.gcLive = max(w.gcLive, int64(m.Live)-int64(w.base))
			w.gcMu.Unlock()
		}
		w.watchGCs()
	})
}

func startWindow(interval time.Duration, base uint64, handlers []*handler) (*window, error) {
	if interval <= 0 {
		return nil, errors.New("the sample interval must be positive")
	}
	if err := benchkit.ResetPeakRSS(); err != nil {
		return nil, err
	}
	w := &window{
		base: base, handlers: handlers, interval: interval,
		cpu0: benchkit.CPUSeconds(), gcs0: memstat.Read().GCs,
		stopSampling: make(chan struct{}), sampled: make(chan []Sample, 1),
	}
	for _, h := range handlers {
		h.recording.Store(true)
	}
	w.start = time.Now()
	w.watchGCs()
	go w.sample()
	return w, nil
}

func (w *window) sample() {
	var series []Sample
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		series = append(series, w.now())
		select {
		case <-t.C:
		case <-w.stopSampling:
			w.sampled <- append(series, w.now())
			return
		}
	}
}

func (w *window) now() Sample {
	m := memstat.Read()
	s := Sample{
		Seconds:   time.Since(w.start).Seconds(),
		Heap:      int64(m.Heap) - int64(w.base),
		Live:      int64(m.Live) - int64(w.base),
		GCs:       m.GCs - w.gcs0,
		FastCalls: w.handlers[0].windowUpdates.Load(),
	}
	if len(w.handlers) > 1 {
		s.SlowCalls = w.handlers[1].windowUpdates.Load()
	}
	return s
}

// stop ends the window after writes writes and returns its figures.
func (w *window) stop(writes int64) Result {
	for _, h := range w.handlers {
		h.recording.Store(false)
	}
	w.closed.Store(true) // before HeapAfterGC's cycles
	w.end = time.Now()
	elapsed := w.end.Sub(w.start).Seconds()
	cpu := benchkit.CPUSeconds() - w.cpu0
	gcs := memstat.Read().GCs - w.gcs0
	rss, _ := benchkit.ProcStatus("VmHWM")
	load, _ := benchkit.LoadAverage()
	close(w.stopSampling)
	series := <-w.sampled
	end := memstat.HeapAfterGC()
	res := Result{
		WindowSeconds: elapsed,
		Writes:        writes,
		EndHeap:       int64(end) - int64(w.base),
		PeakLive:      int64(end) - int64(w.base),
		BaselineHeap:  w.base,
		PeakRSS:       rss,
		CPUSeconds:    cpu,
		GCs:           gcs,
		LoadAverage:   load,
		Series:        series,
	}
	w.gcMu.Lock()
	res.PeakLive = max(res.PeakLive, w.gcLive)
	w.gcMu.Unlock()
	for _, s := range series {
		res.PeakHeap = max(res.PeakHeap, s.Heap)
		// Before the window's first GC, Live is what a GC before the
		// window marked (the initial list, say): not the window's.
		if s.GCs > 0 {
			res.PeakLive = max(res.PeakLive, s.Live)
		}
	}
	res.Fast = w.handlers[0].figures(writes, elapsed)
	if len(w.handlers) > 1 {
		slow := w.handlers[1].figures(writes, elapsed)
		res.Slow = &slow
	}
	return res
}

// share is calls over writes, 0 without writes.
func share(calls, writes int64) float64 {
	if writes == 0 {
		return 0
	}
	return float64(calls) / float64(writes)
}

// figures are what h saw in a window of writes writes over elapsed seconds.
func (h *handler) figures(writes int64, elapsed float64) Handler {
	calls := h.windowUpdates.Load()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return Handler{
		Calls:     calls,
		Share:     share(calls, writes),
		PerSecond: float64(calls) / elapsed,
		P50Ms:     ms(h.lat.quantile(0.5)),
		P99Ms:     ms(h.lat.quantile(0.99)),
		MaxMs:     ms(h.lat.quantile(1)),
		Backlog:   max(0, writes-calls),
		Unstamped: h.unstamped.Load(),
	}
}
