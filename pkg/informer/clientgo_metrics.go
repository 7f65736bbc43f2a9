package informer

import (
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// clientGoMetrics feeds client-go's informer metrics (its
// InformerMetricsProvider), so that dashboards built on them keep working:
// the store's resourceVersion, the items queued in front of the store and
// the time the store writer takes to apply each one (client-go's processing
// latency).
//
// client-go's FIFO sits between its reflector and its store. This informer
// has no such queue: the watcher reads the next event only once the store
// writer has taken up the last. So the queued-items gauge shows one event
// from its arrival until it is taken up and none otherwise, which is what
// client-go's shows for an event that finds its FIFO empty. Handler backlogs,
// which client-go's gauge does not count either, are in
// leaninformer_handler_pending_notifications.
type clientGoMetrics struct {
	// With a provider given in SharedIndexInformerOptions; the latency is
	// measured on the informer's clock.
	resourceVersion, queued toolscache.GaugeMetric
	latency                 toolscache.HistogramMetric

	// With only the process-wide provider (cache.SetInformerMetricsProvider),
	// which client-go keeps unexported: client-go's own store and FIFO,
	// built with the Identifier and no provider, are the only public way to
	// reach it. storeProbe's Bookmark sets the resourceVersion gauge; each
	// watcher event goes through queueProbe as through client-go's FIFO (Add,
	// then Pop with the store writer's handling as the process function),
	// which sets the queued-items gauge and observes the latency, measured
	// by client-go on the real clock.
	storeProbe toolscache.Store
	queueProbe *toolscache.RealFIFO
}

// queuedEvent stands for one watcher event in queueProbe.
type queuedEvent struct{}

func queuedEventKey(any) (string, error) { return "event", nil }

// newClientGoMetrics returns nil, for no metrics, when id is not reserved
// (no Identifier), as client-go publishes none then either.
func newClientGoMetrics(id toolscache.InformerNameAndResource, provider toolscache.InformerMetricsProvider) *clientGoMetrics {
	if !id.Reserved() {
		return nil
	}
	if provider != nil {
		return &clientGoMetrics{
			resourceVersion: provider.NewStoreResourceVersionMetric(id),
			queued:          provider.NewQueuedItemMetric(id),
			latency:         provider.NewProcessingLatencyMetric(id),
		}
	}
	return &clientGoMetrics{
		storeProbe: toolscache.NewStore(toolscache.MetaNamespaceKeyFunc, toolscache.WithStoreMetrics(id, nil)),
		queueProbe: toolscache.NewRealFIFOWithOptions(toolscache.RealFIFOOptions{
			Identifier:   id,
			KeyFunction:  queuedEventKey,
			AtomicEvents: true,
		}),
	}
}

// setResourceVersion records the store's resourceVersion. "" (a LIST
// without one, or the ADDED events that replay the collection on the watch
// from "" that follows it) is 0, as client-go's store has it on a Replace;
// one that is not a decimal number leaves the gauge as it was.
func (m *clientGoMetrics) setResourceVersion(rv string) {
	switch {
	case m == nil:
	case m.storeProbe != nil:
		m.storeProbe.Bookmark(rv)
	case rv == "":
		m.resourceVersion.Set(0)
	default:
		if v, ok := metrics.ParseResourceVersion(rv); ok {
			m.resourceVersion.Set(v)
		}
	}
}

// process runs the handling of one watcher event as client-go's FIFO
// processes one item: queued on arrival, taken up, then processed and timed.
func (m *clientGoMetrics) process(clk clock.PassiveClock, process func() error) error {
	switch {
	case m == nil:
		return process()
	case m.queueProbe != nil:
		if err := m.queueProbe.Add(queuedEvent{}); err != nil {
			// The probe has a key function that cannot fail and no
			// transform; should Add fail all the same, the event is still
			// handled, unmeasured.
			return process()
		}
		_, err := m.queueProbe.Pop(func(any, bool) error { return process() })
		return err
	default:
		m.queued.Set(1)
		m.queued.Set(0)
		start := clk.Now()
		err := process()
		m.latency.Observe(clk.Since(start).Seconds())
		return err
	}
}
