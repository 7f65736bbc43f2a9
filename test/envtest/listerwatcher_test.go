package envtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
)

var _ = Describe("pkg/listerwatcher against a real API server", Ordered, func() {
	const objects = 5000
	var (
		ns   string
		uids map[types.UID]bool // of the collection as created
	)

	BeforeAll(func(ctx context.Context) {
		ns = createNamespace(ctx, "lw")
		created := make(chan types.UID, objects)
		var wg sync.WaitGroup
		for worker := range 50 {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := worker; i < objects; i += 50 {
					cm, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i)},
						Data:       map[string]string{"index": fmt.Sprint(i)},
					}, metav1.CreateOptions{})
					Expect(err).NotTo(HaveOccurred())
					created <- cm.UID
				}
			})
		}
		wg.Wait()
		close(created)
		uids = map[types.UID]bool{}
		for uid := range created {
			uids[uid] = true
		}
		Expect(uids).To(HaveLen(objects))
	})

	// start runs a Watcher on a recording ListerWatcher over the namespace
	// until the spec ends.
	start := func(ctx context.Context, lw *recordingLW, opts ...listerwatcher.Option) *collector {
		GinkgoHelper()
		w, err := listerwatcher.New(lw, append([]listerwatcher.Option{
			listerwatcher.WithExpectedType(&corev1.ConfigMap{}),
			listerwatcher.WithName("envtest"),
		}, opts...)...)
		Expect(err).NotTo(HaveOccurred())
		c := &collector{live: make(chan listerwatcher.Event, 100)}
		runCtx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), GinkgoLogr))
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(w.Run(runCtx, c)).To(Succeed())
		}()
		DeferCleanup(func() {
			cancel()
			Eventually(done).Should(BeClosed(), "Run returns when its context ends")
		})
		return c
	}

	// expectOneCompleteRestart waits for a restart and checks that it held
	// every object exactly once.
	expectOneCompleteRestart := func(c *collector, strategy listerwatcher.Strategy) restartRecord {
		GinkgoHelper()
		Eventually(c.completed).WithTimeout(time.Minute).Should(BeNumerically(">=", 1))
		r := c.restart(c.completed() - 1)
		Expect(r.start.Strategy).To(Equal(strategy))
		Expect(r.duplicates).To(BeZero(), "objects delivered twice in one restart")
		Expect(r.uids).To(Equal(uids), "the restart holds exactly the collection")
		Expect(r.done.ResourceVersion).NotTo(BeEmpty())
		return r
	}

	// expectLiveEvents creates, updates and deletes an object and expects the
	// three live events, in order.
	expectLiveEvents := func(ctx context.Context, c *collector, name string) {
		GinkgoHelper()
		cms := clientset.CoreV1().ConfigMaps(ns)
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		cm.Data = map[string]string{"changed": "yes"}
		cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cms.Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
		for _, want := range []listerwatcher.EventType{listerwatcher.Added, listerwatcher.Modified, listerwatcher.Deleted} {
			var ev listerwatcher.Event
			Eventually(c.live).WithTimeout(30 * time.Second).Should(Receive(&ev))
			for ev.Type == listerwatcher.Bookmark {
				Eventually(c.live).WithTimeout(30 * time.Second).Should(Receive(&ev))
			}
			Expect(ev.Type).To(Equal(want))
			Expect(ev.Object.(*corev1.ConfigMap).Name).To(Equal(name))
			Expect(ev.ResourceVersion).To(Equal(ev.Object.(*corev1.ConfigMap).ResourceVersion))
			if want == listerwatcher.Modified {
				Expect(ev.ResourceVersion).To(Equal(cm.ResourceVersion), "the update's event carries what the update returned")
			}
		}
	}

	It("ListWatch lists in pages, then watches from the list's resourceVersion", func(ctx context.Context) {
		lw := newRecordingLW(ns, nil)
		c := start(ctx, lw, listerwatcher.WithStrategy(listerwatcher.ListWatch))
		r := expectOneCompleteRestart(c, listerwatcher.ListWatch)
		Expect(r.start.Reason).To(Equal(listerwatcher.Initial))
		expectLiveEvents(ctx, c, "live-listwatch")

		reqs := lw.requests()
		pages := len(r.pages)
		Expect(len(reqs)).To(BeNumerically(">", pages), "the LISTs and then a WATCH")
		Expect(reqs[0]).To(Equal(request{verb: "list", opts: metav1.ListOptions{Limit: 500}}),
			"a consistent first page: resourceVersion \"\", never \"0\" with a limit")
		// The server says how many objects remain (remainingItemCount): the
		// other 4,500 are shared over the 7 LISTs that keep the restart
		// within client-go's default burst of 10 requests. The last of them
		// asks for whatever is left, up to the byte bound, in case the
		// collection grew: its limit is larger, its page is not.
		Expect(pages).To(Equal(8), "page sizes %v", r.pages)
		for i, req := range reqs[1:pages] {
			Expect(req.opts.Continue).NotTo(BeEmpty())
			Expect(req).To(Equal(request{verb: "list", opts: metav1.ListOptions{Limit: req.opts.Limit, Continue: req.opts.Continue}}),
				"continue pages send only limit and continue")
			if i+2 < pages {
				Expect(req.opts.Limit).To(BeNumerically("~", (objects-500)/7, 1))
			} else {
				Expect(req.opts.Limit).To(BeNumerically(">=", (objects-500)/7))
			}
			Expect(r.pages[i+1]).To(BeNumerically("<=", req.opts.Limit))
			Expect(r.pages[i+1]).To(BeNumerically("~", (objects-500)/7, 1))
		}
		watchReq := reqs[pages]
		Expect(watchReq.verb).To(Equal("watch"))
		Expect(*watchReq.opts.TimeoutSeconds).To(BeNumerically("~", 450, 150))
		watchReq.opts.TimeoutSeconds = nil
		Expect(watchReq.opts).To(Equal(metav1.ListOptions{ResourceVersion: r.done.ResourceVersion, AllowWatchBookmarks: true}))
		Expect(reqs[pages+1:]).To(BeEmpty(), "the watch carried the live events")
	})

	It("StreamingList streams the collection in pages and keeps the stream as the watch", func(ctx context.Context) {
		lw := newRecordingLW(ns, nil)
		c := start(ctx, lw, listerwatcher.WithStrategy(listerwatcher.StreamingList))
		r := expectOneCompleteRestart(c, listerwatcher.StreamingList)
		Expect(r.start.Reason).To(Equal(listerwatcher.Initial))
		Expect(r.pages).To(HaveEach(BeNumerically("<=", 500)))
		Expect(len(r.pages)).To(BeNumerically(">=", objects/500))
		expectLiveEvents(ctx, c, "live-streaming")

		reqs := lw.requests()
		Expect(reqs).To(HaveLen(1), "one stream for the collection and the live events")
		Expect(reqs[0].verb).To(Equal("watch"))
		Expect(reqs[0].opts.SendInitialEvents).To(HaveValue(BeTrue()))
		reqs[0].opts.TimeoutSeconds, reqs[0].opts.SendInitialEvents = nil, nil
		Expect(reqs[0].opts).To(Equal(metav1.ListOptions{
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			AllowWatchBookmarks:  true,
		}))
	})

	It("Auto falls back to ListWatch when the ListerWatcher turns bookmarks off", func(ctx context.Context) {
		lw := newRecordingLW(ns, func(opts *metav1.ListOptions) { opts.AllowWatchBookmarks = false })
		obs := &fallbackObserver{}
		c := start(ctx, lw, listerwatcher.WithStreamingIdleTimeout(5*time.Second), listerwatcher.WithObserver(obs))
		r := expectOneCompleteRestart(c, listerwatcher.ListWatch)
		Expect(obs.errs()).To(HaveLen(1))
		Expect(obs.errs()[0]).To(MatchError(listerwatcher.ErrNoEndBookmark))

		// What the API server answered the stream without bookmarks: the
		// initial events, never the end bookmark.
		stream := lw.streamed()
		AddReportEntry("streaming watch with allowWatchBookmarks=false", stream)
		Expect(stream[watch.Added]).To(Equal(objects), "the server still sends every initial event")
		Expect(stream[watch.Bookmark]).To(BeZero(), "but no bookmark ends them")

		if r.start.Reason != listerwatcher.StreamingFallback {
			// The fallback came before any page reached the consumer.
			Expect(r.start.Reason).To(Equal(listerwatcher.Initial))
		}
		reqs := lw.requests()
		Expect(reqs[0].verb).To(Equal("watch"))
		Expect(reqs[0].opts.SendInitialEvents).To(HaveValue(BeTrue()))
		Expect(reqs[1]).To(Equal(request{verb: "list", opts: metav1.ListOptions{Limit: 500}}))
		expectLiveEvents(ctx, c, "live-fallback")
	})
})

// request is one call through a recordingLW, with the options the watcher
// passed (before the ListerWatcher's own changes).
type request struct {
	verb string
	opts metav1.ListOptions
}

// recordingLW is a ListerWatcher over one namespace's ConfigMaps that
// records every request and counts the event types of streaming watches.
type recordingLW struct {
	ns     string
	modify func(*metav1.ListOptions) // applied to watch options, as a caller's lw may

	mu     sync.Mutex
	reqs   []request
	stream map[watch.EventType]int
}

func newRecordingLW(ns string, modify func(*metav1.ListOptions)) *recordingLW {
	return &recordingLW{ns: ns, modify: modify, stream: map[watch.EventType]int{}}
}

func (lw *recordingLW) record(verb string, opts metav1.ListOptions) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if opts.TimeoutSeconds != nil {
		opts.TimeoutSeconds = new(*opts.TimeoutSeconds)
	}
	if opts.SendInitialEvents != nil {
		opts.SendInitialEvents = new(*opts.SendInitialEvents)
	}
	lw.reqs = append(lw.reqs, request{verb: verb, opts: opts})
}

func (lw *recordingLW) requests() []request {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return append([]request(nil), lw.reqs...)
}

func (lw *recordingLW) streamed() map[watch.EventType]int {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	out := map[watch.EventType]int{}
	for k, v := range lw.stream {
		out[k] = v
	}
	return out
}

func (lw *recordingLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *recordingLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

func (lw *recordingLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	lw.record("list", opts)
	return clientset.CoreV1().ConfigMaps(lw.ns).List(ctx, opts)
}

func (lw *recordingLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	lw.record("watch", opts)
	streaming := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if lw.modify != nil {
		lw.modify(&opts)
	}
	w, err := clientset.CoreV1().ConfigMaps(lw.ns).Watch(ctx, opts)
	if err != nil || !streaming {
		return w, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		lw.mu.Lock()
		lw.stream[ev.Type]++
		lw.mu.Unlock()
		return ev, true
	}), nil
}

// restartRecord is what a consumer saw of one restart.
type restartRecord struct {
	start, done listerwatcher.Event
	uids        map[types.UID]bool
	pages       []int
	duplicates  int
}

// collector is a Consumer that checks restarts and queues live events.
type collector struct {
	mu       sync.Mutex
	restarts []*restartRecord
	complete int
	live     chan listerwatcher.Event
}

func (c *collector) Handle(_ context.Context, ev listerwatcher.Event) error {
	switch ev.Type {
	case listerwatcher.RestartStart:
		c.mu.Lock()
		c.restarts = append(c.restarts, &restartRecord{start: ev, uids: map[types.UID]bool{}})
		c.mu.Unlock()
	case listerwatcher.RestartPage:
		c.mu.Lock()
		r := c.restarts[len(c.restarts)-1]
		r.pages = append(r.pages, len(ev.Objects))
		for _, obj := range ev.Objects {
			uid := obj.(*corev1.ConfigMap).UID
			if r.uids[uid] {
				r.duplicates++
			}
			r.uids[uid] = true
		}
		c.mu.Unlock()
	case listerwatcher.RestartDone:
		c.mu.Lock()
		c.restarts[len(c.restarts)-1].done = ev
		c.complete = len(c.restarts)
		c.mu.Unlock()
	default:
		c.live <- ev
	}
	return nil
}

// completed returns the number of restarts up to the last complete one.
func (c *collector) completed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.complete
}

func (c *collector) restart(i int) restartRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.restarts[i]
}

// fallbackObserver records Auto's fallbacks.
type fallbackObserver struct {
	listerwatcher.NoopObserver
	mu        sync.Mutex
	fallbacks []error
}

func (o *fallbackObserver) StrategyFallback(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fallbacks = append(o.fallbacks, err)
}

func (o *fallbackObserver) errs() []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]error(nil), o.fallbacks...)
}
