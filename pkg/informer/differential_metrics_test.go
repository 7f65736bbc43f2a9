package informer

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// globalMetrics is installed, once for the whole test binary, as client-go's
// process-wide informer metrics provider (SetInformerMetricsProvider keeps
// only its first call, as k8s.io/component-base's clientgo/fifo package
// makes it in its init). It hands each informer the fakeProvider of its
// Identifier's name.
var (
	globalMetrics        = &routingProvider{byName: map[string]*fakeProvider{}}
	installGlobalMetrics sync.Once
)

type routingProvider struct {
	mu     sync.Mutex
	byName map[string]*fakeProvider
}

func (p *routingProvider) forName(name string) *fakeProvider {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byName[name] == nil {
		p.byName[name] = &fakeProvider{}
	}
	return p.byName[name]
}

func (p *routingProvider) NewQueuedItemMetric(id toolscache.InformerNameAndResource) toolscache.GaugeMetric {
	return &p.forName(id.Name()).queued
}

func (p *routingProvider) NewProcessingLatencyMetric(id toolscache.InformerNameAndResource) toolscache.HistogramMetric {
	return &p.forName(id.Name()).latency
}

func (p *routingProvider) NewStoreResourceVersionMetric(id toolscache.InformerNameAndResource) toolscache.GaugeMetric {
	return &p.forName(id.Name()).rv
}

// providerOptions returns the options of one informer of the test,
// named after it, with client-go's metrics going to a fake provider of its
// own or, with global, to the process-wide one; and that provider.
func providerOptions(t *testing.T, global bool, informer string) (toolscache.SharedIndexInformerOptions, *fakeProvider) {
	t.Helper()
	n, err := toolscache.NewInformerName(t.Name() + "/" + informer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Release)
	opts := toolscache.SharedIndexInformerOptions{Identifier: n.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})}
	if global {
		return opts, globalMetrics.forName(opts.Identifier.Name())
	}
	opts.InformerMetricsProvider = &fakeProvider{}
	return opts, opts.InformerMetricsProvider.(*fakeProvider)
}

// Issue 15, item 1: with an Identifier, client-go's three informer metrics
// (store resourceVersion, queued items, processing latency) are published
// through the provider given in the options or, without one, through the
// process-wide provider, for both informers. Ours has no queue in front of
// the store, so its queued-items gauge only ever shows the one event in hand.
func TestDifferentialClientGoMetrics(t *testing.T) {
	installGlobalMetrics.Do(func() { toolscache.SetInformerMetricsProvider(globalMetrics) })
	for _, global := range []bool{false, true} {
		name := "explicit provider"
		if global {
			name = "global provider"
		}
		t.Run(name, func(t *testing.T) {
			s := newServer(t, 5)
			ourOpts, ourMetrics := providerOptions(t, global, "ours")
			theirOpts, theirMetrics := providerOptions(t, global, "client-go")
			ours := NewSharedIndexInformerWithOptions(s.ListerWatcher(), &corev1.ConfigMap{}, ourOpts, WithBackoff(fastBackoff), WithMetrics(nil))
			theirs := toolscache.NewSharedIndexInformerWithOptions(s.ListerWatcher(), &corev1.ConfigMap{}, theirOpts)
			run(t, ours)
			run(t, theirs)
			waitSynced(t, ours, theirs)
			mustCreate(t, s, configMap("x"))
			mustUpdate(t, s, configMap("x", "k", "v"))
			mustDelete(t, s, "cm-0000")

			for who, m := range map[string]*fakeProvider{"ours": ourMetrics, "client-go": theirMetrics} {
				eventually(t, who+": the store resourceVersion gauge at the server's", func() bool {
					v, _ := m.rv.get()
					return formatFloat(v) == s.ResourceVersion()
				})
				eventually(t, who+": the queued-items gauge back at 0", func() bool {
					v, n := m.queued.get()
					return n > 0 && v == 0
				})
				if n := len(m.latency.values()); n == 0 {
					t.Fatalf("%s: no processing latency observed", who)
				}
			}
			if top := ourMetrics.queued.largest(); top != 1 {
				t.Fatalf("our queued-items gauge peaked at %v, want 1: the one event being handed to the store", top)
			}
			// The list and three live events: at least one measurement each.
			if n := len(ourMetrics.latency.values()); n < 4 {
				t.Fatalf("our processing latency has %d observations, want at least 4", n)
			}
		})
	}
}

// blankListRV is a ListerWatcher that cannot stream and, once blank is set,
// answers LISTs without a resourceVersion (as some aggregated APIs do) and,
// unless replay, watches from "" with a watch that stays open and sends
// nothing, so that no replay of the collection follows the list.
type blankListRV struct {
	*fake.ListerWatcher
	blank  atomic.Bool
	replay bool
}

func (lw *blankListRV) List(opts metav1.ListOptions) (kruntime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *blankListRV) ListWithContext(ctx context.Context, opts metav1.ListOptions) (kruntime.Object, error) {
	list, err := lw.ListerWatcher.ListWithContext(ctx, opts)
	if err == nil && lw.blank.Load() {
		list.(*corev1.ConfigMapList).ResourceVersion = ""
	}
	return list, err
}

func (lw *blankListRV) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

func (lw *blankListRV) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if lw.blank.Load() && opts.ResourceVersion == "" && !lw.replay {
		return watch.NewFake(), nil
	}
	return lw.ListerWatcher.WatchWithContext(ctx, opts)
}

func (*blankListRV) IsWatchListSemanticsUnSupported() bool { return true }

// A relist whose LIST has no resourceVersion sets client-go's store
// resourceVersion gauge to 0 (its store's Replace parses "" as 0), instead
// of leaving it at the resourceVersion of the store the list replaced. The
// replay of the collection on the watch from "" that follows moves
// client-go's to each replayed object's resourceVersion and keeps ours at 0,
// as docs/compatibility.md says.
func TestDifferentialClientGoStoreResourceVersionAfterListWithoutOne(t *testing.T) {
	installGlobalMetrics.Do(func() { toolscache.SetInformerMetricsProvider(globalMetrics) })
	for _, tc := range []struct{ global, replay bool }{{false, false}, {true, false}, {false, true}} {
		global := tc.global
		name := "explicit provider"
		if global {
			name = "global provider"
		}
		if tc.replay {
			name += ", replayed"
		}
		t.Run(name, func(t *testing.T) {
			s := newServer(t, 5)
			ourOpts, ourMetrics := providerOptions(t, global, "ours")
			theirOpts, theirMetrics := providerOptions(t, global, "client-go")
			lw := &blankListRV{ListerWatcher: s.ListerWatcher(), replay: tc.replay}
			ours := NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, ourOpts, WithBackoff(fastBackoff), WithMetrics(nil))
			theirs := toolscache.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, theirOpts)
			run(t, ours)
			run(t, theirs)
			waitSynced(t, ours, theirs)
			metrics := map[string]*fakeProvider{"ours": ourMetrics, "client-go": theirMetrics}
			for who, m := range metrics {
				eventually(t, who+": the store resourceVersion gauge at the server's", func() bool {
					v, _ := m.rv.get()
					return formatFloat(v) == s.ResourceVersion()
				})
			}

			lw.blank.Store(true)
			_, ourSets := ourMetrics.rv.get()
			_, theirSets := theirMetrics.rv.get()
			s.SendWatchError(gone()) // both relist
			if tc.replay {
				// The Replace, then sets for the replayed objects (client-go
				// applies them in batches, one set each).
				eventually(t, "client-go: the store resourceVersion gauge at a replayed object's", func() bool {
					v, n := theirMetrics.rv.get()
					return n >= theirSets+2 && v != 0
				})
				eventually(t, "ours: the store resourceVersion gauge at 0 through the replay", func() bool {
					v, n := ourMetrics.rv.get()
					return n >= ourSets+6 && v == 0
				})
				return
			}
			for _, who := range []string{"client-go", "ours"} {
				m := metrics[who]
				eventually(t, who+": the store resourceVersion gauge at 0 after a LIST without a resourceVersion", func() bool {
					v, _ := m.rv.get()
					return v == 0
				})
			}
		})
	}
}
