package informer

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgofeatures "k8s.io/client-go/features"
	clientgofeaturestesting "k8s.io/client-go/features/testing"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/internal/benchsize"
	"github.com/leaninformer/leaninformer/internal/memstat"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// Benchmarks of the informer against client-go's, on the fake API server.
// Memory figures are reported as extra metrics, relative to the heap after
// the fake server was loaded (the server's own copy of the collection is not
// counted):
//
//	peak-MiB   largest sampled heap while syncing or relisting (GOGC=100:
//	           may include up to one live heap of garbage)
//	live-MiB   largest live heap a GC marked meanwhile: what was really held
//	store-MiB  heap after GC once synced: the store itself
//
// Run with, for instance:
//
//	go test -run '^$' -bench . -benchtime 3x ./pkg/informer/

// benchSizes are the object counts of the sync and relist benchmarks.
func benchSizes() []int { return benchsize.Sizes(10_000, 100_000) }

// roleBinding builds a RoleBinding like the benchmark command's: a few
// labels and 3-5 subjects.
func roleBinding(i int) runtime.Object {
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%02d", i%20),
			Name:      fmt.Sprintf("rolebinding-%06d", i),
			Labels:    map[string]string{"app.kubernetes.io/name": "bench", "app.kubernetes.io/instance": fmt.Sprintf("instance-%d", i%100), "tier": "backend"},
		},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: fmt.Sprintf("role-%d", i%50)},
	}
	for s := range 3 + i%3 {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: fmt.Sprintf("sa-%d-%d", i, s), Namespace: rb.Namespace})
	}
	return rb
}

func loadRoleBindings(b *testing.B, n int) *fake.Server {
	b.Helper()
	s := fake.NewServer(&rbacv1.RoleBindingList{})
	b.Cleanup(s.Close)
	if err := s.CreateN(n, roleBinding); err != nil {
		b.Fatal(err)
	}
	return s
}

// variant builds one informer implementation under test.
type variant struct {
	name string
	// listMode turns client-go's WatchListClient feature gate off.
	listMode bool
	// prefetch reads LIST pages ahead (BenchmarkScale only).
	prefetch bool
	build    func(lw toolscache.ListerWatcher) toolscache.SharedIndexInformer
}

func variants() []variant {
	ours := func(strategy Strategy) func(lw toolscache.ListerWatcher) toolscache.SharedIndexInformer {
		return func(lw toolscache.ListerWatcher) toolscache.SharedIndexInformer {
			return NewSharedIndexInformerWithOptions(lw, &rbacv1.RoleBinding{},
				toolscache.SharedIndexInformerOptions{Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}},
				WithStrategy(strategy))
		}
	}
	clientGo := func(lw toolscache.ListerWatcher) toolscache.SharedIndexInformer {
		return toolscache.NewSharedIndexInformer(lw, &rbacv1.RoleBinding{}, 0,
			toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	}
	return []variant{
		{name: "ours-ListWatch", build: ours(ListWatch)},
		{name: "ours-StreamingList", build: ours(StreamingList)},
		{name: "client-go-streaming", build: clientGo},
		{name: "client-go-LIST", listMode: true, build: clientGo},
	}
}

// encodedVariant is ours with the encoded store, for the live-event rows:
// every update encodes the new object and decodes the old one.
func encodedVariant() variant {
	return variant{name: "ours-StreamingList-encoded", build: func(lw toolscache.ListerWatcher) toolscache.SharedIndexInformer {
		return NewSharedIndexInformerWithOptions(lw, &rbacv1.RoleBinding{},
			toolscache.SharedIndexInformerOptions{Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}},
			WithStrategy(StreamingList), WithEncodedStore())
	}}
}

func (v variant) setup(b *testing.B) {
	clientgofeaturestesting.SetFeatureDuringTest(b, clientgofeatures.WatchListClient, !v.listMode)
}

// counter is a handler that counts its calls.
type counter struct{ n atomic.Int64 }

func (c *counter) OnAdd(any, bool)      { c.n.Add(1) }
func (c *counter) OnUpdate(any, any)    { c.n.Add(1) }
func (c *counter) OnDelete(any)         { c.n.Add(1) }
func (c *counter) waitFor(n int64) bool { return waitUntil(func() bool { return c.n.Load() >= n }) }

func waitUntil(cond func() bool) bool {
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Microsecond)
	}
	return true
}

// runInformer starts inf and returns a function that stops it and waits.
func runInformer(inf toolscache.SharedIndexInformer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	return func() { cancel(); <-done }
}

func mib(b uint64) float64 { return memstat.MiB(b) }

func above(v, base uint64) uint64 {
	if v < base {
		return 0
	}
	return v - base
}

func BenchmarkInitialSync(b *testing.B) {
	for _, n := range benchSizes() {
		for _, v := range variants() {
			b.Run(fmt.Sprintf("N=%d/%s", n, v.name), func(b *testing.B) {
				v.setup(b)
				s := loadRoleBindings(b, n)
				var peak, live, store uint64
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					base := memstat.HeapAfterGC()
					inf := v.build(s.ListerWatcher())
					h := &counter{}
					if _, err := inf.AddEventHandler(h); err != nil {
						b.Fatal(err)
					}
					sampler := memstat.Start(time.Millisecond)
					b.StartTimer()
					stop := runInformer(inf)
					if !h.waitFor(int64(n)) {
						b.Fatal("no sync within 5 minutes")
					}
					b.StopTimer()
					p := sampler.Stop()
					peak += above(p.Heap, base)
					live += above(p.Live, base)
					store += above(memstat.HeapAfterGC(), base)
					stop()
					b.StartTimer()
				}
				report(b, "peak-MiB", peak)
				report(b, "live-MiB", live)
				report(b, "store-MiB", store)
			})
		}
	}
}

// BenchmarkRelist measures the heap while an informer relists after a 410:
// from the steady synced state until every handler has been told about the
// whole new list.
func BenchmarkRelist(b *testing.B) {
	for _, n := range benchSizes() {
		for _, v := range variants() {
			b.Run(fmt.Sprintf("N=%d/%s", n, v.name), func(b *testing.B) {
				v.setup(b)
				s := loadRoleBindings(b, n)
				base := memstat.HeapAfterGC()
				inf := v.build(s.ListerWatcher())
				h := &counter{}
				if _, err := inf.AddEventHandler(h); err != nil {
					b.Fatal(err)
				}
				stop := runInformer(inf)
				defer stop()
				if !h.waitFor(int64(n)) {
					b.Fatal("no sync within 5 minutes")
				}
				var peak, live, store uint64
				for b.Loop() {
					b.StopTimer()
					steady := memstat.HeapAfterGC()
					// live at the relist's start: the floor of its peak
					// when no GC completes in the window (Peak.Live is 0)
					steadyLive := memstat.LiveHeap()
					store += above(steady, base)
					want := h.n.Load() + int64(n) // every object is notified again
					sampler := memstat.Start(time.Millisecond)
					b.StartTimer()
					s.SendWatchError(gone())
					if !h.waitFor(want) {
						b.Fatal("no relist within 5 minutes")
					}
					b.StopTimer()
					p := sampler.Stop()
					peak += above(p.Heap, base)
					live += above(max(p.Live, steadyLive), base)
					b.StartTimer()
				}
				report(b, "peak-MiB", peak)
				report(b, "live-MiB", live)
				report(b, "store-MiB", store)
				b.ReportMetric(float64(live)/float64(store), "live/store")
			})
		}
	}
}

// BenchmarkLiveEvents measures live watch events per second through the
// informer to its handlers (the fake server's own work included, alike for
// both).
func BenchmarkLiveEvents(b *testing.B) {
	for _, handlers := range []int{1, 4} {
		for _, v := range append(variants()[1:3], encodedVariant()) {
			b.Run(fmt.Sprintf("handlers=%d/%s", handlers, v.name), func(b *testing.B) {
				v.setup(b)
				s := loadRoleBindings(b, 1000)
				inf := v.build(s.ListerWatcher())
				counters := make([]*counter, handlers)
				for i := range counters {
					counters[i] = &counter{}
					if _, err := inf.AddEventHandler(counters[i]); err != nil {
						b.Fatal(err)
					}
				}
				stop := runInformer(inf)
				defer stop()
				for _, c := range counters {
					if !c.waitFor(1000) {
						b.Fatal("no sync")
					}
				}
				rb := roleBinding(0).(*rbacv1.RoleBinding)
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					rb.Labels["i"] = fmt.Sprint(i)
					rb.ResourceVersion = ""
					if _, err := s.Update(rb); err != nil {
						b.Fatal(err)
					}
				}
				for _, c := range counters {
					if !c.waitFor(int64(1000 + b.N)) {
						b.Fatal("events not delivered")
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

func report(b *testing.B, unit string, total uint64) {
	b.ReportMetric(mib(total)/float64(b.N), unit)
}

// BenchmarkHandlerQueue measures what one update costs a handler's queue:
// the watch goroutine queueing it (add, under the listener's lock) and the
// handler's goroutine taking it out (next), for the unbounded queue and for
// a coalescing handler's keyed one, on an informer as NewSharedIndexInformer
// builds it (metrics on). The handler is idle, as at a rate it keeps up with.
func BenchmarkHandlerQueue(b *testing.B) {
	objs := make([]runtime.Object, 10_000)
	for i := range objs {
		objs[i] = roleBinding(i)
	}
	for _, coalesce := range []bool{false, true} {
		b.Run(fmt.Sprintf("coalesce=%v", coalesce), func(b *testing.B) {
			inf := NewSharedIndexInformer(&toolscache.ListWatch{}, &rbacv1.RoleBinding{}, 0, toolscache.Indexers{})
			var h toolscache.ResourceEventHandler = toolscache.ResourceEventHandlerFuncs{}
			if coalesce {
				h = Coalesce(h)
			}
			reg, err := inf.AddEventHandler(h)
			if err != nil {
				b.Fatal(err)
			}
			l := reg.(*listener)
			b.ReportAllocs()
			for i := range b.N {
				o := objs[i%len(objs)]
				l.add(notification{kind: notifyUpdate, oldObj: o, newObj: o})
				if _, ok := l.next(); !ok {
					b.Fatal("the queue was empty after an add")
				}
			}
		})
	}
}
