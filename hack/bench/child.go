package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/leaninformer/leaninformer/internal/benchkit"
	"github.com/leaninformer/leaninformer/internal/benchresults"
	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/internal/memstat"
)

// defaultRelistDelay: client-go takes a watch that ends within a second of
// opening, without events, for a broken one and relists at once; past that
// second it re-watches first and relists on the 410, the usual path in a
// long-running controller, which the benchmark measures.
const defaultRelistDelay = 1500 * time.Millisecond

// childFlag, as the first argument, makes the program a child that measures
// one variant and prints its Phases.
const childFlag = "--child"

// The child's side of the protocol on its stdout and stdin.
const (
	// msgRelist (child to parent): synced and measured; force a relist now.
	msgRelist = "relist"
	// msgGo (parent to child): the watch is cut and the next one will get 410.
	msgGo = "go"
	// msgResult (child to parent) prefixes the JSON of the Phases.
	msgResult = "result "
)

type childOptions struct {
	variant    string
	kind       string
	kubeconfig string
	// benchObjects is the number of bench objects the cluster holds; total
	// all objects of the kind (the floor's slice capacity).
	benchObjects, total int
	// pageSize is --page-size: negative for the informer's own sizes.
	pageSize int64
	limits   clientLimits
	interval time.Duration
	timeout  time.Duration
	// timelineInterval is the sampling interval of informers' Timelines.
	timelineInterval time.Duration
	// relistDelay is how long after the sync the relist is forced, at
	// least the time the client's rate limiter takes to refill.
	relistDelay time.Duration
	// churnDeleted and churnCreated are the objects the parent deletes and
	// creates before the relist.
	churnDeleted, churnCreated int
}

func childMain(args []string) int {
	var o childOptions
	fs := flag.NewFlagSet("bench "+childFlag, flag.ContinueOnError)
	fs.StringVar(&o.variant, "variant", "", "variant to measure")
	fs.StringVar(&o.kind, "kind", roleBindings.resource, "kind of objects to list: "+strings.Join(kindNames(), ", "))
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the (proxied) cluster")
	fs.IntVar(&o.benchObjects, "bench-objects", 0, "bench objects in the cluster")
	fs.IntVar(&o.total, "total", 0, "objects of the kind in the cluster")
	fs.Int64Var(&o.pageSize, "page-size", -1, "LIST page size; negative: the informer's own")
	limits := fs.String("limits", clientGoLimits.name, limitsUsage)
	fs.DurationVar(&o.interval, "sample-interval", 2*time.Millisecond, "heap sampling interval")
	fs.DurationVar(&o.timelineInterval, "timeline-interval", defaultTimelineInterval, "heap sampling interval of the informer's timeline")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.DurationVar(&o.relistDelay, "relist-delay", defaultRelistDelay, "force the relist this long after the sync")
	fs.IntVar(&o.churnDeleted, "churn-deleted", 0, "objects the parent deletes before the relist")
	fs.IntVar(&o.churnCreated, "churn-created", 0, "objects the parent creates before the relist")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	if o.limits, err = parseLimits(*limits); err != nil {
		fmt.Fprintf(os.Stderr, "bench child: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := runChild(ctx, o, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bench child %s: %v\n", o.variant, err)
		return 1
	}
	return 0
}

// child measures one variant in this process.
type child struct {
	opts childOptions
	v    variant
	kind objectKind
	cs   kubernetes.Interface
	lw   toolscache.ListerWatcher
	ctl  *control
	// busy is the other client of a busy variant, on cs's rate limiter;
	// nil without one, or without a client-side limiter.
	busy kubernetes.Interface

	requests faultproxy.RequestCounter
	// relistArmed makes the transport record, in relistStart (Unix ns), when
	// the first LIST or streaming watch of the forced relist goes out, and
	// in relistCPU the process's CPU then.
	relistArmed atomic.Bool
	relistStart atomic.Int64
	relistCPU   atomic.Pointer[cpuMark]
	// timeline records an informer's heap over its life.
	timeline *timelineRecorder
}

// cpuMark is the process's CPU and GC CPU seconds at one moment.
type cpuMark struct{ cpu, gcCPU float64 }

func runChild(ctx context.Context, o childOptions, in io.Reader, out io.Writer) error {
	v, err := findVariant(o.variant)
	if err != nil {
		return err
	}
	k, err := findKind(o.kind)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", o.kubeconfig, err)
	}
	benchClientConfig(cfg, o.limits)
	c := &child{opts: o, v: v, kind: k, ctl: &control{in: bufio.NewReader(in), out: out}}
	if qps, burst := o.limits.effective(); v.busy && qps > 0 {
		// One limiter for both clients, as kubernetes.NewForConfig shares
		// one among its typed clients; the other client's requests are
		// not counted as the informer's.
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
		if c.busy, err = kubernetes.NewForConfig(rest.CopyConfig(cfg)); err != nil {
			return err
		}
	}
	cfg.Wrap(c.countRequests)
	if c.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	c.lw = k.listWatch(c.cs)

	var phases []benchresults.Phase
	switch v.kind {
	case informerKind:
		phases, err = c.runInformer(ctx)
	case noStoreKind:
		phases, err = c.runNoStore(ctx)
	case floorKind:
		phases, err = c.runFloor(ctx)
	}
	if err != nil {
		return err
	}
	b, err := json.Marshal(phases)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s%s\n", msgResult, b)
	return err
}

func (c *child) countRequests(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		c.requests.Count(r)
		if c.relistArmed.Load() {
			if info := faultproxy.ParseRequest(r); info.Verb == faultproxy.List || info.Streaming {
				if c.relistStart.CompareAndSwap(0, time.Now().UnixNano()) {
					c.relistCPU.Store(&cpuMark{cpu: benchkit.CPUSeconds(), gcCPU: memstat.GCCPUSeconds()})
				}
			}
		}
		return rt.RoundTrip(r)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// runInformer measures the initial sync of the variant's informer, then,
// for relist variants, a forced relist.
func (c *child) runInformer(ctx context.Context) ([]benchresults.Phase, error) {
	base := measureBaseline()
	c.timeline = startTimeline(c.opts.timelineInterval, base.heap)
	w, err := startWindow(c.opts.interval)
	if err != nil {
		return nil, err
	}
	inf, err := c.newInformer()
	if err != nil {
		return nil, err
	}
	h := &countingHandler{}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return nil, fmt.Errorf("add event handler: %w", err)
	}
	if transform := c.v.transform(); transform != nil {
		if err := inf.SetTransform(transform); err != nil {
			return nil, fmt.Errorf("set transform: %w", err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go inf.RunWithContext(runCtx)
	if err := benchkit.WaitFor(ctx, reg.HasSyncedChecker().Done(), "the informer and its handler to sync"); err != nil {
		return nil, err
	}
	syncedAt := time.Now()
	c.timeline.mark(benchresults.MarkSynced)
	c.timeline.pause()
	p := w.stop(base, c.v.name)

	total, err := c.countObjects(inf.GetStore().List())
	if err != nil {
		return nil, err
	}
	p.Objects = total
	if adds := h.adds.Load(); adds != int64(total) {
		return nil, fmt.Errorf("the handler got %d adds for %d objects in the store", adds, total)
	}
	sent := c.requests.Counts()
	if err := c.v.checkRequests(sent, 1, total, c.opts.pageSize); err != nil {
		return nil, err
	}
	p.Requests = requestsOf(sent)
	phases := []benchresults.Phase{p}
	if c.v.relist {
		// A relist in a long-running controller finds the limiter full.
		time.Sleep(time.Until(syncedAt.Add(max(c.opts.relistDelay, c.opts.limits.refill()))))
		stopBusy, err := c.startBusy(ctx)
		if err != nil {
			return nil, err
		}
		r, err := c.relist(ctx, base, inf, h, total)
		if err := errors.Join(err, stopBusy()); err != nil {
			return nil, err
		}
		phases = append(phases, r)
	}
	phases[0].Timeline = c.timeline.finish()
	return phases, nil
}

// startBusy starts, for a busy variant, the other client: GETs of the
// default namespace back to back, each waiting for the shared limiter. It
// returns once they have spent the limiter's burst, so that the relist finds
// it empty; stop ends them and returns the first error one got.
func (c *child) startBusy(ctx context.Context) (stop func() error, err error) {
	if c.busy == nil {
		return func() error { return nil }, nil
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	_, burst := c.opts.limits.effective()
	spent := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for n := 1; ; n++ {
			_, err := c.busy.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
			switch {
			case ctx.Err() != nil:
				done <- nil
				return
			case err != nil:
				done <- fmt.Errorf("the busy client's GET: %w", err)
				return
			case n == burst+1:
				close(spent)
			}
		}
	}()
	stop = func() error {
		cancel()
		return <-done
	}
	select {
	case <-spent:
		return stop, nil
	case err := <-done:
		cancel()
		if err == nil {
			err = fmt.Errorf("the busy client stopped before the relist: %w", parent.Err())
		}
		return nil, err
	}
}

// relist has the parent cut the informer's watch and refuse the next one
// with 410 Gone (after changing objects, for churn variants), and measures
// until the relist has reached the handler: with no resync period, every
// object of the relist that was in the store is handed to the handler as an
// update (client-go's handlers start out "syncing" and stay so), the new
// ones as adds, the vanished ones as deletes, so the relist is over when the
// handler has counted them all.
func (c *child) relist(ctx context.Context, base baseline, inf toolscache.SharedIndexInformer, h *countingHandler, objects int) (benchresults.Phase, error) {
	memstat.HeapAfterGC() // start from the steady heap
	c.timeline.resume()
	before := c.requests.Counts()
	want := counts{updates: int64(objects - c.opts.churnDeleted), adds: int64(c.opts.churnCreated), deletes: int64(c.opts.churnDeleted)}
	done := h.expect(want)
	w, err := startWindow(c.opts.interval)
	if err != nil {
		return benchresults.Phase{}, err
	}
	c.relistArmed.Store(true)
	if err := c.ctl.relist(); err != nil {
		return benchresults.Phase{}, err
	}
	c.timeline.mark(benchresults.MarkRelistForced)
	if err := benchkit.WaitFor(ctx, done, fmt.Sprintf("%+v more notifications after the forced relist", want)); err != nil {
		return benchresults.Phase{}, fmt.Errorf("%w (got %d updates, %d adds, %d deletes in all)", err, h.updates.Load(), h.adds.Load(), h.deletes.Load())
	}
	end := time.Now()
	c.timeline.mark(benchresults.MarkRelisted)
	p := w.stop(base, relistRow(c.v.name))
	start, mark := c.relistStart.Load(), c.relistCPU.Load()
	if start == 0 || mark == nil {
		return benchresults.Phase{}, errors.New("the handler got its updates but no relist request went out")
	}
	p.SyncSeconds = end.Sub(time.Unix(0, start)).Seconds()
	// CPU from the same request on: the window began before the parent
	// wrote a churn variant's changes, seconds in which the child only
	// waited (and sampled its heap).
	p.CPUSeconds -= mark.cpu - w.cpu0
	p.GCCPUSeconds -= mark.gcCPU - w.gcCPU0
	p.Objects = len(inf.GetStore().ListKeys())
	sent := subCounts(c.requests.Counts(), before)
	if sent.Watches == 0 {
		return benchresults.Phase{}, fmt.Errorf("no watch was refused before the relist: %+v", sent)
	}
	if err := c.v.checkRequests(sent, 1, objects, c.opts.pageSize); err != nil {
		return benchresults.Phase{}, fmt.Errorf("relist: %w", err)
	}
	p.Requests = requestsOf(sent)
	return p, nil
}

// runNoStore measures the list machinery alone until the initial list is
// complete: client-go's Reflector or our pipeline, into sinks that keep
// nothing.
func (c *child) runNoStore(ctx context.Context) ([]benchresults.Phase, error) {
	base := measureBaseline()
	w, err := startWindow(c.opts.interval)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var seen func() (total, bench int)
	var synced <-chan struct{}
	if c.v.ours {
		seen, synced, err = c.startPipeline(runCtx)
		if err != nil {
			return nil, err
		}
	} else {
		sink := &discardStore{replaced: make(chan struct{})}
		r := toolscache.NewReflectorWithOptions(c.lw, c.kind.example(), sink, toolscache.ReflectorOptions{})
		go r.RunWithContext(runCtx)
		seen, synced = sink.seen, sink.replaced
	}
	if err := benchkit.WaitFor(ctx, synced, "the initial list"); err != nil {
		return nil, err
	}
	p := w.stop(base, c.v.name)
	total, bench := seen()
	if bench != c.opts.benchObjects {
		return nil, fmt.Errorf("saw %d bench %s, want %d", bench, c.kind.title, c.opts.benchObjects)
	}
	p.Objects = total
	sent := c.requests.Counts()
	if err := c.v.checkRequests(sent, 1, total, c.opts.pageSize); err != nil {
		return nil, err
	}
	p.Requests = requestsOf(sent)
	return []benchresults.Phase{p}, nil
}

// runFloor lists page by page and keeps a copy of every object in a slice
// sized up front: the least any store of these objects can hold.
func (c *child) runFloor(ctx context.Context) ([]benchresults.Phase, error) {
	base := measureBaseline()
	w, err := startWindow(c.opts.interval)
	if err != nil {
		return nil, err
	}
	objs := make([]apiruntime.Object, 0, c.opts.total)
	for cont := ""; ; {
		items, next, err := c.kind.listPage(ctx, c.cs, metav1.ListOptions{Limit: floorPageSize(c.opts.pageSize), Continue: cont})
		if err != nil {
			return nil, err
		}
		objs = append(objs, items...)
		if cont = next; cont == "" {
			break
		}
	}
	p := w.stop(base, c.v.name)
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	total, err := c.countObjects(items)
	if err != nil {
		return nil, err
	}
	runtime.KeepAlive(objs)
	p.Objects = total
	sent := c.requests.Counts()
	if err := c.v.checkRequests(sent, 1, total, c.opts.pageSize); err != nil {
		return nil, err
	}
	p.Requests = requestsOf(sent)
	return []benchresults.Phase{p}, nil
}

// countObjects returns len(objs) after checking that the bench objects
// among them are all there.
func (c *child) countObjects(objs []any) (int, error) {
	bench := 0
	for _, o := range objs {
		if isBench(o) {
			bench++
		}
	}
	if bench != c.opts.benchObjects {
		return 0, fmt.Errorf("holding %d bench %s, want %d", bench, c.kind.title, c.opts.benchObjects)
	}
	return len(objs), nil
}

// countingHandler counts notifications, as cheaply as a handler that
// enqueues keys.
type countingHandler struct {
	adds, updates, deletes atomic.Int64

	mu     sync.Mutex
	target counts
	done   chan struct{}
}

// counts are numbers of notifications by kind.
type counts struct{ updates, adds, deletes int64 }

func (h *countingHandler) OnAdd(any, bool) { h.adds.Add(1); h.check() }
func (h *countingHandler) OnDelete(any)    { h.deletes.Add(1); h.check() }
func (h *countingHandler) OnUpdate(_, _ any) {
	h.updates.Add(1)
	h.check()
}

func (h *countingHandler) check() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done != nil && h.updates.Load() >= h.target.updates && h.adds.Load() >= h.target.adds && h.deletes.Load() >= h.target.deletes {
		close(h.done)
		h.done = nil
	}
}

// expect returns a channel closed once more notifications than those so
// far, by as many as n, have arrived.
func (h *countingHandler) expect(n counts) <-chan struct{} {
	h.mu.Lock()
	h.target = counts{updates: h.updates.Load() + n.updates, adds: h.adds.Load() + n.adds, deletes: h.deletes.Load() + n.deletes}
	h.done = make(chan struct{})
	done := h.done
	h.mu.Unlock()
	h.check()
	return done
}

// discardStore is a Reflector store that keeps nothing: it counts what a
// Replace hands it and reports the first one.
type discardStore struct {
	replaced     chan struct{}
	once         sync.Once
	total, bench atomic.Int64
}

func (s *discardStore) Add(any) error    { return nil }
func (s *discardStore) Update(any) error { return nil }
func (s *discardStore) Delete(any) error { return nil }
func (s *discardStore) Resync() error    { return nil }

func (s *discardStore) Replace(items []any, _ string) error {
	s.once.Do(func() {
		s.total.Store(int64(len(items)))
		var bench int64
		for _, o := range items {
			if isBench(o) {
				bench++
			}
		}
		s.bench.Store(bench)
		close(s.replaced)
	})
	return nil
}

func (s *discardStore) seen() (total, bench int) { return int(s.total.Load()), int(s.bench.Load()) }

// control is the child's end of the line protocol with the parent.
type control struct {
	in  *bufio.Reader
	out io.Writer
}

// relist asks the parent to force a relist and waits until it has.
func (c *control) relist() error {
	if _, err := fmt.Fprintln(c.out, msgRelist); err != nil {
		return err
	}
	line, err := c.in.ReadString('\n')
	if err != nil {
		return fmt.Errorf("waiting for the parent to force the relist: %w", err)
	}
	if line != msgGo+"\n" {
		return fmt.Errorf("waiting for the parent to force the relist: got %q, want %q", line, msgGo)
	}
	return nil
}

func subCounts(a, b faultproxy.RequestCounts) faultproxy.RequestCounts {
	return faultproxy.RequestCounts{
		Lists:             a.Lists - b.Lists,
		ListsWithLimit:    a.ListsWithLimit - b.ListsWithLimit,
		ListsWithContinue: a.ListsWithContinue - b.ListsWithContinue,
		Watches:           a.Watches - b.Watches,
		StreamingWatches:  a.StreamingWatches - b.StreamingWatches,
		Other:             a.Other - b.Other,
	}
}

// requestsOf is counts as the results file holds them. The conversion
// compiles only while both types have the same fields, so a count added to
// the proxy cannot go missing from the file.
func requestsOf(counts faultproxy.RequestCounts) benchresults.Requests {
	return benchresults.Requests(counts)
}

// newInformer builds the variant's informer with the namespace index
// client-go's informer factories add.
func (c *child) newInformer() (toolscache.SharedIndexInformer, error) {
	opts := toolscache.SharedIndexInformerOptions{
		Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
	}
	if c.v.ours {
		return c.newOursInformer(opts)
	}
	return toolscache.NewSharedIndexInformerWithOptions(c.lw, c.kind.example(), opts), nil
}
