package listerwatcher

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/internal/benchsize"
	"github.com/leaninformer/leaninformer/internal/memstat"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// The benchmarks run each design on the same fake server in the same run:
// this package's Watcher with both strategies, and client-go's Reflector
// (which streams by default in v0.37, and lists from resourceVersion "0"
// with its WatchListClient feature gate off) feeding a store that drops
// everything. "server" is the fake server alone, the floor under all.

func benchServer(b *testing.B, n int) *fake.Server {
	b.Helper()
	srv := fake.NewServer(&corev1.ConfigMapList{}, fake.WithoutRequestLog())
	b.Cleanup(srv.Close)
	if err := srv.CreateN(n, configMap); err != nil {
		b.Fatal(err)
	}
	srv.Compact() // as a server that has run a while: no creation history
	return srv
}

// design starts one way of syncing a collection.
type design struct {
	name  string
	start func(ctx context.Context, b *testing.B, lw toolscache.ListerWatcher, h hooks) (stop func())
}

// hooks are called from the design's goroutine.
type hooks struct {
	done  func() // at the end of each restart
	event func() // for each live event
	// held is called where the design holds the most of a restart: on each
	// page for ours, in Replace (with the whole list) for client-go.
	held func()
}

func (h hooks) orNoop() hooks {
	noop := func() {}
	if h.done == nil {
		h.done = noop
	}
	if h.event == nil {
		h.event = noop
	}
	if h.held == nil {
		h.held = noop
	}
	return h
}

func ours(strategy Strategy, opts ...Option) design {
	name := strategy.String()
	if len(opts) > 0 {
		name += "-page500"
	}
	return design{
		name: name,
		start: func(ctx context.Context, b *testing.B, lw toolscache.ListerWatcher, h hooks) func() {
			h = h.orNoop()
			w, err := New(lw, append([]Option{WithStrategy(strategy)}, opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			return runUntilStopped(ctx, func(ctx context.Context) {
				_ = w.Run(ctx, ConsumerFunc(func(_ context.Context, ev Event) error {
					switch ev.Type {
					case RestartPage:
						h.held()
						runtime.KeepAlive(ev.Objects) // a real consumer would read it
					case RestartDone:
						h.done()
					case Added, Modified, Deleted:
						h.event()
					}
					return nil
				}))
			})
		},
	}
}

func clientGo(watchList bool) design {
	name := "client-go-ListWatch"
	if watchList {
		name = "client-go-WatchList"
	}
	return design{
		name: name,
		start: func(ctx context.Context, b *testing.B, lw toolscache.ListerWatcher, h hooks) func() {
			clientfeaturestesting.SetFeatureDuringTest(b, clientfeatures.WatchListClient, watchList)
			store := &droppingStore{hooks: h.orNoop()}
			r := toolscache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, toolscache.ReflectorOptions{})
			r.WatchListPageSize = DefaultPageSize
			return runUntilStopped(ctx, r.RunWithContext)
		},
	}
}

// designs: ListWatch-page500 is ListWatch with every page of 500 objects, as
// before the pages were sized.
var designs = []design{ours(ListWatch), ours(ListWatch, WithPageSize(DefaultPageSize)), ours(StreamingList), clientGo(true), clientGo(false)}

func runUntilStopped(ctx context.Context, run func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// droppingStore is a client-go ReflectorStore that keeps nothing.
type droppingStore struct{ hooks }

func (s *droppingStore) Add(any) error    { s.event(); return nil }
func (s *droppingStore) Update(any) error { s.event(); return nil }
func (s *droppingStore) Delete(any) error { s.event(); return nil }
func (s *droppingStore) Replace(list []any, _ string) error {
	s.held()
	runtime.KeepAlive(list) // a real store would read it
	s.done()
	return nil
}
func (s *droppingStore) Resync() error                        { return nil }
func (s *droppingStore) Bookmark(string)                      {}
func (s *droppingStore) LastStoreSyncResourceVersion() string { return "" }

// liveHeap returns the live heap the last GC marked, the baseline of
// memstat's Peak.Live (HeapAfterGC's figure also counts object headers and
// rounding differently).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func quietContext() context.Context {
	return klog.NewContext(context.Background(), logr.Discard())
}

// BenchmarkLiveEvents: updates through a live watch; one op is one event.
// The "server" case drains the fake's watch directly: subtract it to get the
// pipeline's own cost.
func BenchmarkLiveEvents(b *testing.B) {
	b.Run("server", func(b *testing.B) {
		srv := benchServer(b, 10)
		w, err := srv.ListerWatcher().Watch(metav1.ListOptions{ResourceVersion: srv.ResourceVersion()})
		if err != nil {
			b.Fatal(err)
		}
		var seen atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range w.ResultChan() {
				seen.Add(1)
			}
		}()
		liveLoop(b, srv, &seen)
		w.Stop()
		<-done
	})
	for _, d := range designs {
		b.Run(d.name, func(b *testing.B) {
			srv := benchServer(b, 10)
			synced := make(chan struct{}, 1)
			var seen atomic.Int64
			stop := d.start(quietContext(), b, srv.ListerWatcher(), hooks{
				done:  func() { synced <- struct{}{} },
				event: func() { seen.Add(1) },
			})
			defer stop()
			<-synced
			waitForWatch(srv)
			liveLoop(b, srv, &seen)
		})
	}
}

// liveLoop updates one of ten objects b.N times and waits until seen counted
// b.N events.
func liveLoop(b *testing.B, srv *fake.Server, seen *atomic.Int64) {
	objs := make([]*corev1.ConfigMap, 10)
	for i := range objs {
		objs[i] = configMap(i).(*corev1.ConfigMap)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		cm := objs[i%len(objs)]
		cm.Data["index"] = fmt.Sprint(i)
		if _, err := srv.Update(cm); err != nil {
			b.Fatal(err)
		}
		if i%10_000 == 9_999 {
			srv.Compact() // keep the server's history bounded
		}
	}
	for seen.Load() < int64(b.N) {
		time.Sleep(10 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

func waitForWatch(srv *fake.Server) {
	for srv.OpenWatches() == 0 {
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkRestart: one op is a whole restart of 10,000 objects into a
// consumer that drops them (allocs/op / 10,000 = allocs per object). The
// "server-list" and "server-stream" cases read the fake directly, the floor
// under the ListWatch and StreamingList designs.
func BenchmarkRestart(b *testing.B) {
	const n = 10_000
	b.Run("server-list", func(b *testing.B) {
		srv := benchServer(b, n)
		lw := srv.ListerWatcher()
		b.ReportAllocs()
		for b.Loop() {
			opts := metav1.ListOptions{Limit: DefaultPageSize}
			for {
				list, err := lw.List(opts)
				if err != nil {
					b.Fatal(err)
				}
				next := list.(*corev1.ConfigMapList).Continue
				if next == "" {
					break
				}
				opts = metav1.ListOptions{Limit: DefaultPageSize, Continue: next}
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "objects/s")
	})
	b.Run("server-stream", func(b *testing.B) {
		srv := benchServer(b, n)
		lw := srv.ListerWatcher()
		b.ReportAllocs()
		for b.Loop() {
			w, err := lw.Watch(metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
			if err != nil {
				b.Fatal(err)
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Bookmark {
					break
				}
			}
			w.Stop()
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "objects/s")
	})
	for _, d := range designs {
		b.Run(d.name, func(b *testing.B) {
			srv := benchServer(b, n)
			lw := srv.ListerWatcher()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				synced := make(chan struct{}, 1)
				stop := d.start(quietContext(), b, lw, hooks{done: signal(synced)})
				<-synced
				stop()
			}
			b.StopTimer()
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}

// signal returns a hook that signals ch without blocking.
func signal(ch chan struct{}) func() {
	return func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// BenchmarkListPeakHeap: the heap a restart of N objects holds, above the
// loaded server's, with a consumer that drops every object. Each op runs the
// restart twice:
//   - sampled every millisecond, at the process's GOGC (100 unless the
//     environment sets it; reported as the gogc metric; GOGC=10 makes GCs
//     frequent, as the README's tables were taken):
//     peak-live-MiB is the largest live heap a GC marked (it includes what
//     was allocated while the GC was marking, so it grows with the time a
//     GC takes, i.e. with the server's heap), peak-heap-MiB all heap
//     objects, garbage included;
//   - with a full GC where the design holds the most (at each of the first
//     20 pages and then at about ten more for ours, in Replace for
//     client-go): held-MiB is what is reachable there, exactly.
func BenchmarkListPeakHeap(b *testing.B) {
	for _, n := range benchsize.Sizes(10_000, 100_000) {
		for _, d := range designs {
			b.Run(fmt.Sprintf("%s/N=%d", d.name, n), func(b *testing.B) {
				srv := benchServer(b, n)
				lw := srv.ListerWatcher()
				var live, heap, held uint64
				for range b.N {
					base := memstat.HeapAfterGC()
					baseLive := liveHeap()
					sampler := memstat.Start(time.Millisecond)
					synced := make(chan struct{}, 1)
					stop := d.start(quietContext(), b, lw, hooks{done: signal(synced), held: sampler.Sample})
					<-synced
					peak := sampler.Stop()
					stop()
					live = max(live, peak.Live-min(peak.Live, baseLive))
					heap = max(heap, peak.Heap-min(peak.Heap, base))

					base = memstat.HeapAfterGC()
					pages, every := 0, max(n/DefaultPageSize/10, 1)
					stop = d.start(quietContext(), b, lw, hooks{done: signal(synced), held: func() {
						if pages++; pages <= 20 || pages%every == 0 {
							h := memstat.HeapAfterGC()
							held = max(held, h-min(h, base))
						}
					}})
					<-synced
					stop()
				}
				b.ReportMetric(memstat.MiB(live), "peak-live-MiB")
				b.ReportMetric(memstat.MiB(heap), "peak-heap-MiB")
				b.ReportMetric(memstat.MiB(held), "held-MiB")
				b.ReportMetric(float64(gcPercent()), "gogc")
			})
		}
	}
}

// gcPercent is the GOGC the process runs with.
func gcPercent() int {
	old := debug.SetGCPercent(-1)
	debug.SetGCPercent(old)
	return old
}
