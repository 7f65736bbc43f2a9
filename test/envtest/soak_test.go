package envtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/internal/memstat"
	"github.com/leaninformer/leaninformer/internal/metricstest"
	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// soakSettings is the size of a soak run.
type soakSettings struct {
	objects int
	payload int // bytes of data per object
	cycles  int
	// cycle is how long the update load runs in each cycle, a forced relist
	// included.
	cycle         time.Duration
	updatesPerSec int
	updateWorkers int
	convergeBound time.Duration
	name          string
}

func soakSettingsFromEnv() soakSettings {
	s := soakSettings{objects: 1000, payload: 4096, cycles: 8, cycle: 5 * time.Second, updatesPerSec: 50, updateWorkers: 4,
		convergeBound: time.Minute, name: "short"}
	if os.Getenv(chaosEnv) == "long" {
		s.cycles, s.name = 40, "long"
	}
	return s
}

// The soak runs two informers, one on the plain store and one on the
// encoded store, for a bounded time under a steady update load
// with a relist forced in every cycle, and checks that their memory does not
// grow: no old generation, page or notification is kept from one cycle to
// the next. The object count stays constant and the informers log nowhere,
// so that the heap measured after each cycle only differs by what leaks.
//
// Relist reuse is off: with it, a relist keeps the stored object of every
// unchanged key, so an old generation shares almost all its objects with the
// live one and leaking it would cost next to nothing. Without it, every
// relist decodes a whole new generation, and keeping the old one costs what
// a generation measured at the start costs.
var _ = Describe("an informer soaking under steady updates and forced relists", Label("soak"), func() {
	settings := soakSettingsFromEnv()

	It("keeps its heap flat and its handlers' queues drained", func(ctx SpecContext) {
		run := runSoak(ctx, settings, nil)
		Expect(run.heapFlat()).To(Succeed())
	}, SpecTimeout(settings.timeout()))

	// The check of the check: the same soak, with a handler that keeps the
	// old object of every update it gets in cycle 2 (the relist's, once per
	// key: one old generation, which the store has dropped), must fail the
	// assertion above.
	It("fails that check when one old generation leaks", func(ctx SpecContext) {
		leaking := settings
		leaking.cycles, leaking.name = 3, "leaking one generation"
		keeper := &generationKeeper{armedCycle: 1}
		run := runSoak(ctx, leaking, keeper)
		Expect(keeper.len()).To(BeNumerically(">=", leaking.objects), "the keeper kept an old object of every key")
		Expect(run.heapFlat()).To(MatchError(ContainSubstring("grew")), "the leaked generation fails the heap check")
	}, SpecTimeout(settings.timeout()))
})

func (s soakSettings) timeout() time.Duration {
	return time.Duration(s.cycles)*(s.cycle+2*s.convergeBound) + 5*time.Minute
}

// soakRun is what runSoak measured.
type soakRun struct {
	soakReport
	// tolerance is how much the heap after a cycle may exceed the heap
	// after cycle 1.
	tolerance int64
}

// heapFlat is the soak's memory check: the heap after every cycle stays
// below the heap after cycle 1 plus the tolerance.
func (r soakRun) heapFlat() error {
	for k, heap := range r.heaps[1:] {
		if growth := int64(heap) - int64(r.heaps[0]); growth >= r.tolerance {
			return fmt.Errorf("heap after cycle %d (%.1f MiB) grew %.1f MiB over cycle 1 (%.1f MiB); tolerance %.1f MiB",
				k+2, memstat.MiB(heap), float64(growth)/(1<<20), memstat.MiB(r.heaps[0]), float64(r.tolerance)/(1<<20))
		}
	}
	return nil
}

// generationKeeper is a handler that leaks on purpose: in cycle armedCycle
// (0-based) it keeps the old object of the first update of every key.
type generationKeeper struct {
	armedCycle int
	armed      atomic.Bool
	mu         sync.Mutex
	kept       map[string]any
}

func (k *generationKeeper) OnAdd(any, bool) {}
func (k *generationKeeper) OnDelete(any)    {}
func (k *generationKeeper) OnUpdate(old, _ any) {
	if !k.armed.Load() {
		return
	}
	key, err := toolscache.MetaNamespaceKeyFunc(old)
	if err != nil {
		panic(err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.kept[key]; !ok {
		k.kept[key] = old
	}
}

func (k *generationKeeper) cycle(cycle int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kept == nil {
		k.kept = map[string]any{}
	}
	k.armed.Store(cycle == k.armedCycle)
}

func (k *generationKeeper) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.kept)
}

// runSoak runs the soak with settings; keeper, if not nil, is added to the
// plain store's informer as a handler and told each cycle's number.
func runSoak(ctx context.Context, settings soakSettings, keeper *generationKeeper) soakRun {
	GinkgoHelper()
	ns := createNamespace(ctx, "soak")
	payload := func(rng *rand.Rand) string {
		b := make([]byte, settings.payload)
		for i := range b {
			b[i] = 'a' + byte(rng.IntN(26))
		}
		return string(b)
	}
	By(fmt.Sprintf("creating %d ConfigMaps of %d bytes", settings.objects, settings.payload))
	createSoakObjects(ctx, ns, settings.objects, payload)

	proxy, err := faultproxy.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(proxy.Close)
	proxyClient, err := kubernetes.NewForConfig(proxy.ClientConfig())
	Expect(err).NotTo(HaveOccurred())

	ownGoroutines := leaninformerGoroutines()
	m := metrics.New()
	registry := prometheus.NewRegistry()
	Expect(m.Register(registry)).To(Succeed())
	lw := toolscache.NewListWatchFromClient(proxyClient.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
	// Two informers of the same objects: the plain store and the encoded
	// one, which must not leak its entries or decoded copies.
	type soakSubject struct {
		name string
		inf  *informer.SharedIndexInformer
		h    *stateHandler
	}
	var subjects []soakSubject
	for _, encoded := range []bool{false, true} {
		opts := []informer.Option{
			informer.WithMetrics(m),
			informer.WithRelistReuse(false),
			informer.WithBackoff(informer.Backoff{Initial: 100 * time.Millisecond, Factor: 2, Cap: 2 * time.Second, Jitter: 0.5, ResetAfter: 30 * time.Second}),
		}
		name := "plain store"
		if encoded {
			opts, name = append(opts, informer.WithEncodedStore()), "encoded store"
		}
		inf := informer.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{}, opts...)
		h := newStateHandler()
		_, err = inf.AddEventHandler(h)
		Expect(err).NotTo(HaveOccurred())
		if keeper != nil && !encoded {
			_, err = inf.AddEventHandler(keeper)
			Expect(err).NotTo(HaveOccurred())
		}
		subjects = append(subjects, soakSubject{name: name, inf: inf, h: h})
	}
	// No logger: a log kept in memory (GinkgoWriter's) would grow.
	runCtx, stop := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logr.Discard()))
	var running sync.WaitGroup
	stopInformer := func() {
		stop()
		running.Wait()
	}
	DeferCleanup(stopInformer)

	converge := func(subjects []soakSubject) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			want := freshList(ctx, g, ns)
			for _, s := range subjects {
				g.Expect(storeState(s.inf.GetStore())).To(Equal(want), "the %s informer's store equals a fresh LIST", s.name)
				g.Expect(s.h.state()).To(Equal(want), "the %s informer's handler rebuilt the store", s.name)
			}
			g.Expect(pendingNotifications(g, registry)).To(BeZero(), "the handlers' queues are drained")
		}).WithContext(ctx).WithTimeout(settings.convergeBound).WithPolling(100 * time.Millisecond).Should(Succeed())
	}
	// One informer at a time, so that each one's generation (what its
	// synced store adds to the heap) is measured alone: the tolerance is
	// half the smaller one, so that leaking one generation of either fails.
	var generations []int64
	heap := memstat.HeapAfterGC()
	for i, s := range subjects {
		running.Go(func() { s.inf.RunWithContext(runCtx) })
		Eventually(s.inf.HasSynced).WithTimeout(time.Minute).Should(BeTrue(), "the %s informer synced", s.name)
		converge(subjects[:i+1])
		now := memstat.HeapAfterGC()
		generations = append(generations, int64(now)-int64(heap))
		heap = now
		fmt.Fprintf(GinkgoWriter, "soak: the synced %s informer added %.1f MiB to the heap\n", s.name, float64(generations[i])/(1<<20))
	}

	var heaps []uint64
	var updates atomic.Int64
	relists := func() int64 {
		r := proxy.Stats().Requests
		return r.Lists - r.ListsWithContinue + r.StreamingWatches
	}
	started := time.Now()
	for cycle := range settings.cycles {
		if keeper != nil {
			keeper.cycle(cycle)
		}
		load, stopLoad := context.WithCancel(ctx)
		var writers sync.WaitGroup
		for worker := range settings.updateWorkers {
			writers.Go(func() {
				defer GinkgoRecover()
				rng := rand.New(rand.NewPCG(uint64(cycle), uint64(worker)))
				tick := time.NewTicker(time.Second * time.Duration(settings.updateWorkers) / time.Duration(settings.updatesPerSec))
				defer tick.Stop()
				for {
					select {
					case <-load.Done():
						return
					case <-tick.C:
					}
					name := fmt.Sprintf("soak-%05d", rng.IntN(settings.objects))
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"payload": payload(rng)}}
					if _, err := clientset.CoreV1().ConfigMaps(ns).Update(load, cm, metav1.UpdateOptions{}); err == nil {
						updates.Add(1)
					} else if load.Err() == nil {
						Fail(fmt.Sprintf("updating %s: %v", name, err))
					}
				}
			})
		}

		// Halfway through the cycle, force a relist: the watch is cut and
		// its next attempt answered 410 Gone.
		sleepCtx(load, settings.cycle/2)
		before := relists()
		_, err := proxy.Inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: "configmaps"},
			Fault: faultproxy.Fault{Kind: faultproxy.Gone}, Times: len(subjects)})
		Expect(err).NotTo(HaveOccurred())
		proxy.CutWatches(faultproxy.Match{Resource: "configmaps"})
		Eventually(relists).WithContext(ctx).WithTimeout(settings.convergeBound).Should(BeNumerically(">=", before+int64(len(subjects))), "cycle %d relisted both informers", cycle+1)
		sleepCtx(load, settings.cycle/2)
		stopLoad()
		writers.Wait()

		converge(subjects)
		heaps = append(heaps, memstat.HeapAfterGC())
		fmt.Fprintf(GinkgoWriter, "soak cycle %d: heap after GC %.1f MiB, %d updates so far\n", cycle+1, memstat.MiB(heaps[cycle]), updates.Load())
	}
	if keeper != nil {
		keeper.cycle(-1)
	}

	report := soakReport{settings: settings, generations: generations, heaps: heaps, updates: updates.Load(), duration: time.Since(started), restarts: restartsByReason(registry)}
	fmt.Fprintln(GinkgoWriter, report.String())
	AddReportEntry("soak", report, ReportEntryVisibilityAlways)

	Expect(newGoroutines(ownGoroutines)).NotTo(BeEmpty(), "the running informer's goroutines are seen")
	stopInformer()
	Eventually(func() []string { return newGoroutines(ownGoroutines) }).WithTimeout(10*time.Second).Should(BeEmpty(),
		"no goroutine of the informer survives it")
	return soakRun{soakReport: report, tolerance: min(generations[0], generations[1]) / 2}
}

// createSoakObjects creates n ConfigMaps soak-00000... with a payload each.
func createSoakObjects(ctx context.Context, ns string, n int, payload func(*rand.Rand) string) {
	GinkgoHelper()
	const workers = 25
	var wg sync.WaitGroup
	for worker := range min(workers, n) {
		wg.Go(func() {
			defer GinkgoRecover()
			rng := rand.New(rand.NewPCG(0, uint64(worker)))
			for i := worker; i < n; i += workers {
				_, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("soak-%05d", i)},
					Data:       map[string]string{"payload": payload(rng)},
				}, metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
			}
		})
	}
	wg.Wait()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// pendingNotifications sums leaninformer's gauge of notifications queued for
// handlers and not yet delivered.
func pendingNotifications(g Gomega, registry *prometheus.Registry) float64 {
	series, err := metricstest.Find(registry, "leaninformer_handler_pending_notifications", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(series).NotTo(BeEmpty(), "the informer reports its handlers' pending notifications")
	return metricstest.Sum(series)
}

// restartsByReason reads leaninformer's restart counter.
func restartsByReason(registry *prometheus.Registry) map[string]float64 {
	series, err := metricstest.Find(registry, "leaninformer_restarts_total", nil)
	Expect(err).NotTo(HaveOccurred())
	out := map[string]float64{}
	for _, s := range series {
		out[s.Labels["reason"]] += s.Value
	}
	return out
}

// soakReport is what a soak run measured.
type soakReport struct {
	settings soakSettings
	// generations are what each informer's synced store added to the heap.
	generations []int64
	heaps       []uint64
	updates     int64
	duration    time.Duration
	restarts    map[string]float64
}

func (r soakReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak (%s): %d objects of %d bytes, %d cycles in %v, %d updates; restarts %v; the synced stores added %.1f and %.1f MiB\n  heap after GC per cycle (MiB):",
		r.settings.name, r.settings.objects, r.settings.payload, len(r.heaps), r.duration.Round(time.Second), r.updates, r.restarts,
		float64(r.generations[0])/(1<<20), float64(r.generations[1])/(1<<20))
	for _, h := range r.heaps {
		fmt.Fprintf(&b, " %.1f", memstat.MiB(h))
	}
	return b.String()
}
