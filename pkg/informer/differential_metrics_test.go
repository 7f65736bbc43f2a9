package informer

import (
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
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
			options := func(informer string) (toolscache.SharedIndexInformerOptions, *fakeProvider) {
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
			ourOpts, ourMetrics := options("ours")
			theirOpts, theirMetrics := options("client-go")
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
