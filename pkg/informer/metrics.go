package informer

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/metrics"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

// metricsBridge is the one path of the informer's measurements. The watcher (as
// its listerwatcher.Observer), the store writer and the listeners tell it
// what happened, in their own terms; it turns that into leaninformer's
// Prometheus metrics (package metrics) and client-go's
// InformerMetricsProvider metrics (clientgo_metrics.go). A metric is added
// here, and defined in package metrics, and nowhere else. Its methods are
// safe for concurrent use.
type metricsBridge struct {
	prom     *metrics.Recorder // nil: WithMetrics(nil)
	clientGo *clientGoMetrics  // nil: no SharedIndexInformerOptions.Identifier
	clock    clock.PassiveClock
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

// WatchEnded implements listerwatcher.Observer. Only a watch closed early
// without events by the other end counts as short: one the informer ended
// itself (a stop, a relist it asked for) or that failed with an error of
// its own is not something dropping watches.
func (b *metricsBridge) WatchEnded(_ time.Duration, _ int, err error) {
	if errors.Is(err, listerwatcher.ErrVeryShortWatch) {
		b.prom.ShortWatch()
	}
}

// StrategyFallback implements listerwatcher.Observer.
func (b *metricsBridge) StrategyFallback(error) { b.prom.Fallback() }

// Backoff implements listerwatcher.Observer.
func (b *metricsBridge) Backoff(time.Duration, error) { b.prom.Backoff() }

// failed: a list or watch failed, for cause.
func (b *metricsBridge) failed(cause listerwatcher.Cause) { b.prom.Failure(cause.String()) }

// shardFiltering: a sharded informer's objects are filtered on the server
// or on the client (see WithShard).
func (b *metricsBridge) shardFiltering(f shard.Filtering) { b.prom.ShardFiltering(string(f)) }

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

// applied: a live event of type typ at rv was handled: stored says whether
// the store took it. Our event metrics count it either way (a drop is also
// counted by dropped); client-go's store resourceVersion moves only with
// the store, as client-go's does, whose FIFO drops an event the transform
// fails on before its store sees it.
func (b *metricsBridge) applied(typ listerwatcher.EventType, rv string, stored bool) {
	b.prom.Event(eventNames[typ], rv, b.clock.Now())
	if stored {
		b.clientGo.setResourceVersion(rv)
	}
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

// handle runs the store writer's handling of one watcher event, measured
// as client-go measures its FIFO's processing of one item.
func (b *metricsBridge) handle(process func() error) error {
	return b.clientGo.process(b.clock, process)
}

// stopped: the informer stopped; the summed gauges lose its share, and
// the last informer of the resource takes its gauge series off.
func (b *metricsBridge) stopped() { b.prom.Close() }

// handler returns the metrics of one listener, for handler name.
func (b *metricsBridge) handler(name string) *handlerMetrics {
	return &handlerMetrics{prom: b.prom.Handler(name)}
}

// handlerMetrics is the bridge's side of one listener. Its methods are
// safe for concurrent use.
type handlerMetrics struct {
	prom *metrics.HandlerRecorder // nil: no metrics
}

// enqueued: n handler calls were queued.
func (h *handlerMetrics) enqueued(n int) { h.prom.Queued(n) }

// delivered: one queued call was made and took d.
func (h *handlerMetrics) delivered(d time.Duration) { h.prom.Delivered(d) }

// skipped: one queued call is not made (client-go would not send it).
func (h *handlerMetrics) skipped() { h.prom.Queued(-1) }

// coalesced: n notifications folded into changes already queued.
func (h *handlerMetrics) coalesced(n int) { h.prom.Coalesced(n) }

// panicked: the handler panicked (and the process survived).
func (h *handlerMetrics) panicked() { h.prom.Panicked() }

// closed: the listener is done; what it still had queued is dropped.
func (h *handlerMetrics) closed() { h.prom.Close() }
