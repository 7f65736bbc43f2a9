package informer

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// metricsBridge is the one path of the informer's measurements. The watcher (as
// its listerwatcher.Observer), the store writer and the listeners tell it
// what happened, in their own terms; it turns that into leaninformer's
// Prometheus metrics (package metrics) and client-go's
// InformerMetricsProvider metrics. A metric is added here, and defined in
// package metrics, and nowhere else. Its methods are safe for concurrent use.
type metricsBridge struct {
	prom     *metrics.Recorder // nil: WithMetrics(nil)
	clientGo *clientGoMetrics  // nil: no SharedIndexInformerOptions.Identifier
	clock    clock.PassiveClock

	// pending counts the handler calls queued for all listeners and not yet
	// made: client-go's queued items.
	pending atomic.Int64
}

var _ listerwatcher.Observer = (*metricsBridge)(nil)

func newMetricsBridge(prom *metrics.Recorder, clientGo *clientGoMetrics, clk clock.PassiveClock) *metricsBridge {
	return &metricsBridge{prom: prom, clientGo: clientGo, clock: clk}
}

// ListRequest implements listerwatcher.Observer.
func (b *metricsBridge) ListRequest(_ metav1.ListOptions, _ int, _ time.Duration, err error) {
	b.prom.ListRequest(err)
}

// WatchStarted implements listerwatcher.Observer.
func (b *metricsBridge) WatchStarted(metav1.ListOptions) { b.prom.WatchStarted() }

// WatchEnded implements listerwatcher.Observer.
func (b *metricsBridge) WatchEnded(d time.Duration, events int, err error) {
	if events == 0 && (d < time.Second || errors.Is(err, listerwatcher.ErrVeryShortWatch)) {
		b.prom.ShortWatch()
	}
}

// StrategyFallback implements listerwatcher.Observer.
func (b *metricsBridge) StrategyFallback(error) { b.prom.Fallback() }

// Backoff implements listerwatcher.Observer.
func (b *metricsBridge) Backoff(time.Duration, error) { b.prom.Backoff() }

// restartStarted: a restart for reason began; its buffer is empty.
func (b *metricsBridge) restartStarted(reason listerwatcher.RestartReason) {
	b.prom.RestartStarted(string(reason))
}

// restartPage: a page was buffered, dropping dropped objects; the buffer
// holds buffered objects.
func (b *metricsBridge) restartPage(strategy listerwatcher.Strategy, buffered, dropped int) {
	b.prom.Dropped(dropped)
	b.prom.Page(strategy.String(), buffered)
}

// restartDone: a restart that took d was swapped in at rv, objects in all,
// reused of them kept from the old store.
func (b *metricsBridge) restartDone(d time.Duration, objects, reused int, rv string) {
	b.prom.RestartDone(d, objects, reused)
	b.prom.ResourceVersion(rv, b.clock.Now())
	b.clientGo.setResourceVersion(rv)
}

// applied: a live event of type typ at rv went through the store (or was
// dropped on its way; dropped says so separately).
func (b *metricsBridge) applied(typ listerwatcher.EventType, rv string) {
	b.prom.Event(eventNames[typ], rv, b.clock.Now())
	b.clientGo.setResourceVersion(rv)
}

var eventNames = map[listerwatcher.EventType]string{
	listerwatcher.Added:    "added",
	listerwatcher.Modified: "modified",
	listerwatcher.Deleted:  "deleted",
	listerwatcher.Bookmark: "bookmark",
}

// dropped: n live objects could not be stored.
func (b *metricsBridge) dropped(n int) { b.prom.Dropped(n) }

// storeChanged: a live event moved the number of stored objects by delta.
func (b *metricsBridge) storeChanged(delta int) { b.prom.AddStoreObjects(int64(delta)) }

// handled: the store writer took d to handle one watcher event.
func (b *metricsBridge) handled(d time.Duration) {
	b.clientGo.processed(d, b.pending.Load())
}

// stopped: the informer stopped; the summed gauges lose its share.
func (b *metricsBridge) stopped() { b.prom.Close() }

// handler returns the metrics of one listener, for handler name.
func (b *metricsBridge) handler(name string) *handlerMetrics {
	return &handlerMetrics{prom: b.prom.Handler(name), pending: &b.pending}
}

// handlerMetrics is the bridge's side of one listener. Its methods are
// safe for concurrent use.
type handlerMetrics struct {
	prom    *metrics.HandlerRecorder // nil: no metrics
	pending *atomic.Int64            // the bridge's, summed over listeners
	queued  atomic.Int64             // this listener's share of pending
}

// enqueued: n handler calls were queued.
func (h *handlerMetrics) enqueued(n int) {
	h.queued.Add(int64(n))
	h.pending.Add(int64(n))
	h.prom.Queued(n)
}

// delivered: one queued call was made and took d.
func (h *handlerMetrics) delivered(d time.Duration) {
	h.queued.Add(-1)
	h.pending.Add(-1)
	h.prom.Delivered(d)
}

// skipped: one queued call is not made (client-go would not send it).
func (h *handlerMetrics) skipped() {
	h.queued.Add(-1)
	h.pending.Add(-1)
	h.prom.Queued(-1)
}

// panicked: the handler panicked (and the process survived).
func (h *handlerMetrics) panicked() { h.prom.Panicked() }

// closed: the listener is done; what it still had queued is dropped.
func (h *handlerMetrics) closed() {
	h.pending.Add(-h.queued.Swap(0))
	h.prom.Close()
}

// clientGoMetrics feeds client-go's InformerMetricsProvider, so dashboards
// built on client-go's informer metrics keep working: the store's
// resourceVersion, the notifications waiting for handlers (client-go's
// queued items) and the time to apply each event (its processing latency).
type clientGoMetrics struct {
	resourceVersion toolscache.GaugeMetric
	queued          toolscache.GaugeMetric
	latency         toolscache.HistogramMetric

	// probe is a client-go store whose Bookmark sets the resourceVersion
	// gauge of client-go's global provider: the one client-go uses when
	// none is given, and which it offers no other way to reach.
	probe toolscache.Store
	mu    sync.Mutex // serialises the probe's Bookmark calls
}

func newClientGoMetrics(id toolscache.InformerNameAndResource, provider toolscache.InformerMetricsProvider) *clientGoMetrics {
	if !id.Reserved() {
		return nil
	}
	if provider == nil {
		return &clientGoMetrics{probe: toolscache.NewStore(toolscache.MetaNamespaceKeyFunc, toolscache.WithStoreMetrics(id, nil))}
	}
	return &clientGoMetrics{
		resourceVersion: provider.NewStoreResourceVersionMetric(id),
		queued:          provider.NewQueuedItemMetric(id),
		latency:         provider.NewProcessingLatencyMetric(id),
	}
}

func (m *clientGoMetrics) setResourceVersion(rv string) {
	if m == nil {
		return
	}
	if m.probe != nil {
		m.mu.Lock()
		m.probe.Bookmark(rv)
		m.mu.Unlock()
		return
	}
	if v, ok := metrics.ParseResourceVersion(rv); ok {
		m.resourceVersion.Set(v)
	}
}

func (m *clientGoMetrics) processed(d time.Duration, queued int64) {
	if m == nil || m.probe != nil {
		return
	}
	m.latency.Observe(d.Seconds())
	m.queued.Set(float64(queued))
}
