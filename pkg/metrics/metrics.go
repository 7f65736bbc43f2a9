// Package metrics defines leaninformer's Prometheus metrics: what the list
// and watch pipeline, the store and the event handlers of every informer are
// doing, labelled by group, version and resource, and what the shard
// members of pkg/shard are doing, labelled by the sharded controller's name
// (never by object, so the number of series stays bounded).
//
// Informers record into Default unless told otherwise; nothing is exported
// until the metrics are registered. informer.NewCache registers Default on
// controller-runtime's metrics registry, so a manager's /metrics endpoint
// shows them; plain client-go programs call
//
//	metrics.Default.Register(prometheus.DefaultRegisterer)
//
// docs/observability.md lists every metric.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const namespace = "leaninformer"

var resourceLabels = []string{"group", "version", "resource"}

func withResource(extra ...string) []string {
	return append(append([]string{}, resourceLabels...), extra...)
}

// Metrics is one set of leaninformer collectors. Most programs use Default.
type Metrics struct {
	listRequests    *prometheus.CounterVec
	listPages       *prometheus.CounterVec
	restarts        *prometheus.CounterVec
	restartDuration *prometheus.HistogramVec
	restartObjects  *prometheus.HistogramVec
	reusedObjects   *prometheus.CounterVec
	droppedObjects  *prometheus.CounterVec
	storeObjects    *prometheus.GaugeVec
	bufferObjects   *prometheus.GaugeVec
	watches         *prometheus.CounterVec
	shortWatches    *prometheus.CounterVec
	watchEvents     *prometheus.CounterVec
	fallbacks       *prometheus.CounterVec
	backoffs        *prometheus.CounterVec
	failures        *prometheus.CounterVec
	resourceVersion *prometheus.GaugeVec
	lastEvent       *prometheus.GaugeVec
	synced          *prometheus.GaugeVec
	handlerPending  *prometheus.GaugeVec
	handlerDuration *prometheus.HistogramVec
	handlerPanics   *prometheus.CounterVec
	handlerFolded   *prometheus.CounterVec
	shard           shardCollectors

	// liveMu guards live and handlers, and orders the first write to a
	// series after the deletion of the one before it.
	liveMu sync.Mutex
	// live holds, by resource, the recorders that have written its gauges
	// and not closed: the last one to close deletes the series.
	live map[schema.GroupVersionResource]*resourceSeries
	// handlers counts, by resource and handler label, the handler
	// recorders not closed: the last one to close deletes the pending
	// series.
	handlers map[handlerKey]int
}

// handlerKey names one series of handler_pending_notifications.
type handlerKey struct {
	gvr     schema.GroupVersionResource
	handler string
}

// Default is the set informers record into unless given another.
var Default = New()

// New returns a new, unregistered set of collectors.
func New() *Metrics {
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, withResource(extra...))
	}
	gauge := func(name, help string, extra ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, withResource(extra...))
	}
	histogram := func(name, help string, buckets []float64, extra ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, withResource(extra...))
	}
	return &Metrics{
		listRequests:    counter("list_requests_total", "LIST requests sent, by result: success, error, or canceled (ended by the informer stopping).", "result"),
		listPages:       counter("list_pages_total", "Pages handed to the store during restarts: LIST pages or batches of streamed initial events, by strategy.", "strategy"),
		restarts:        counter("restarts_total", "Restarts (full lists) begun, by reason: Initial, Expired (410), ExpiredContinue, Error, StreamingFallback, ConsumerError, Requested. Counted at a restart's first page, and again each time a failure starts it over; a retried request is not a restart.", "reason"),
		restartDuration: histogram("restart_duration_seconds", "Time from a restart's start to its swap into the store.", prometheus.ExponentialBuckets(0.01, 2, 15)),
		restartObjects:  histogram("restart_objects", "Objects in the collection when a restart completed.", prometheus.ExponentialBuckets(1, 4, 12)),
		reusedObjects:   counter("relist_reused_objects_total", "Relisted objects found unchanged and kept as the stored object (relist reuse hits)."),
		droppedObjects:  counter("dropped_objects_total", "Objects dropped before storing: no key could be computed or the transform failed."),
		storeObjects:    gauge("store_objects", "Objects in the stores of the informers for the resource."),
		bufferObjects:   gauge("restart_buffer_objects", "Objects held in restart buffers: the next generation being listed."),
		watches:         counter("watches_total", "Watches opened (streaming lists included)."),
		shortWatches:    counter("short_watches_total", "Watches closed by the other end within a second without an event, a sign of something dropping them."),
		watchEvents:     counter("watch_events_total", "Live watch events applied to the store, by type (added, modified, deleted, bookmark).", "type"),
		fallbacks:       counter("strategy_fallbacks_total", "Times the Auto strategy could not stream the list and fell back to paginated LISTs."),
		backoffs:        counter("backoffs_total", "Times the pipeline waited before retrying after an error."),
		failures:        counter("failures_total", "List and watch failures, by cause (listerwatcher.Cause: Decode, Expired, Throttled, UnexpectedObject, StaleEvent, ...).", "cause"),
		resourceVersion: gauge("last_resource_version", "resourceVersion of the last event or list applied (the last 15 digits, as a number): the highest of the informers for the resource."),
		lastEvent:       gauge("last_event_timestamp_seconds", "Unix time of the last event or list applied: the latest of the informers for the resource; time() minus it is the time since the last event."),
		synced:          gauge("synced", "Informers for the resource whose store has been filled by a complete list."),
		handlerPending:  gauge("handler_pending_notifications", "Notifications queued for event handlers and not yet delivered, by handler.", "handler"),
		handlerDuration: histogram("handler_duration_seconds", "Time an event handler took per notification, by handler.", prometheus.ExponentialBuckets(0.00001, 4, 12), "handler"),
		handlerPanics:   counter("handler_panics_total", "Notifications whose handler panicked (with crashing turned off), by handler.", "handler"),
		handlerFolded:   counter("handler_coalesced_notifications_total", "Notifications folded into a change already pending for the same object, for coalescing event handlers, by handler.", "handler"),
		shard:           newShardCollectors(),
		live:            map[schema.GroupVersionResource]*resourceSeries{},
		handlers:        map[handlerKey]int{},
	}
}

// Collectors returns every collector of the set.
func (m *Metrics) Collectors() []prometheus.Collector {
	return append([]prometheus.Collector{
		m.listRequests, m.listPages, m.restarts, m.restartDuration, m.restartObjects,
		m.reusedObjects, m.droppedObjects, m.storeObjects, m.bufferObjects, m.watches,
		m.shortWatches, m.watchEvents, m.fallbacks, m.backoffs, m.failures, m.resourceVersion,
		m.lastEvent, m.synced, m.handlerPending, m.handlerDuration, m.handlerPanics,
		m.handlerFolded,
	}, m.shard.collectors()...)
}

// Register registers every collector of the set on r. Registering the same
// set again on the same registerer is not an error; registering a second set
// (another New, or New where Default is registered) is, and the error names
// the metrics r already has from another collector.
func (m *Metrics) Register(r prometheus.Registerer) error {
	var errs []error
	var taken []string
	for _, c := range m.Collectors() {
		if err := r.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				if already.ExistingCollector != c {
					taken = append(taken, metricName(c))
				}
				continue
			}
			errs = append(errs, fmt.Errorf("%s: %w", metricName(c), err))
		}
	}
	if len(taken) > 0 {
		errs = append([]error{fmt.Errorf("%d metrics are registered already, by collectors of another set (is another metrics set, or Default, registered on this registerer?): %s",
			len(taken), strings.Join(taken, ", "))}, errs...)
	}
	return errors.Join(errs...)
}

// metricName is the name of the (first) metric c describes, for errors.
func metricName(c prometheus.Collector) string {
	descs := make(chan *prometheus.Desc, 1)
	go func() {
		c.Describe(descs)
		close(descs)
	}()
	name := "a collector describing no metric"
	first := true
	for d := range descs {
		if first {
			// Desc has no accessor for its name; its String starts with it.
			if _, err := fmt.Sscanf(d.String(), "Desc{fqName: %q", &name); err != nil {
				name = d.String()
			}
			first = false
		}
	}
	return name
}

// Informer returns the recorder of one informer of resource gvr. A nil
// *Metrics returns a recorder that records nothing.
func (m *Metrics) Informer(gvr schema.GroupVersionResource) *Recorder {
	if m == nil {
		return nil
	}
	return &Recorder{m: m, gvr: gvr, labels: prometheus.Labels{"group": gvr.Group, "version": gvr.Version, "resource": gvr.Resource}}
}

// Recorder records the metrics of one informer. Gauges that sum over the
// informers of a resource (a multi-namespace cache has one per namespace)
// are moved by this informer's own deltas, and Close takes its share back;
// the last informer of a resource to close deletes its gauge series.
// All methods accept a nil receiver and then do nothing.
type Recorder struct {
	m      *Metrics
	gvr    schema.GroupVersionResource
	labels prometheus.Labels
	// live: 0 until the first gauge write, then 1 (counted in res) until
	// Close, then 2.
	live atomic.Int32
	res  atomic.Pointer[resourceSeries] // set before live turns 1

	storeObjects  atomic.Int64
	bufferObjects atomic.Int64
	synced        atomic.Bool

	shardMu        sync.Mutex
	shardFiltering string // this informer's share of leaninformer_shard_informers

	// The series every live event moves, looked up once each: With hashes
	// the labels on every call, and a busy informer applies tens of
	// thousands of events a second. Each is created when first moved, as
	// With would, so that no series shows before it means something.
	// (last_resource_version and last_event_timestamp_seconds are the
	// resource's, in res.)
	storeObjectsSeries cachedGauge
	events             sync.Map // event type -> prometheus.Counter

	// figures are this recorder's last resourceVersion and event time,
	// guarded by res's mu.
	figures [2]figure
}

// figure is one of a recorder's figures behind a highest gauge.
type figure struct {
	v   float64
	set bool
}

// The figures of a recorder.
const (
	resourceVersionFigure = iota
	eventTimeFigure
)

// resourceSeries is what the live recorders of one resource share: who
// they are, and its last_resource_version and last_event_timestamp_seconds.
// members changes under Metrics.liveMu and mu both.
type resourceSeries struct {
	mu                  sync.Mutex
	members             map[*Recorder]struct{}
	resourceVersion, at highest
}

// highest is a gauge that shows the highest figure of the live recorders
// of a resource, so that a recorder setting a lower one than another's (a
// lagging watch, a relist listed before another informer's last event)
// does not move it back. Guarded by its resourceSeries' mu.
type highest struct {
	vec    *prometheus.GaugeVec
	labels prometheus.Labels
	which  int              // the recorders' figure it shows
	g      prometheus.Gauge // created when first set

	holder *Recorder // whose figure shows; nil: none since a recompute
	shown  float64
}

// record sets r's figure to v.
func (h *highest) record(res *resourceSeries, r *Recorder, v float64) {
	r.figures[h.which] = figure{v: v, set: true}
	switch {
	case h.holder == nil || v >= h.shown:
		h.show(r, v)
	case h.holder == r: // the figure that showed fell
		h.recompute(res)
	}
}

// drop is r leaving res's members: if its figure showed, the highest of
// the others' shows instead.
func (h *highest) drop(res *resourceSeries, r *Recorder) {
	if h.holder == r {
		h.recompute(res)
	}
}

// recompute shows the highest figure of res's members; with none (those
// left have not listed yet), the gauge keeps its value until the first of
// them sets one.
func (h *highest) recompute(res *resourceSeries) {
	h.holder = nil
	for r := range res.members {
		if f := r.figures[h.which]; f.set && (h.holder == nil || f.v > h.shown) {
			h.holder, h.shown = r, f.v
		}
	}
	if h.holder != nil {
		h.show(h.holder, h.shown)
	}
}

func (h *highest) show(r *Recorder, v float64) {
	if h.g == nil {
		h.g = h.vec.With(h.labels)
	}
	h.holder, h.shown = r, v
	h.g.Set(v)
}

// cachedGauge is one series of a gauge vector, looked up on first use.
type cachedGauge struct {
	once sync.Once
	g    prometheus.Gauge
}

func (c *cachedGauge) get(v *prometheus.GaugeVec, labels prometheus.Labels) prometheus.Gauge {
	c.once.Do(func() { c.g = v.With(labels) })
	return c.g
}

// join counts r among the live recorders of its resource before its first
// gauge write, so that another recorder's Close does not delete the series
// r writes.
func (r *Recorder) join() {
	if r.live.Load() != 0 {
		return
	}
	r.m.liveMu.Lock()
	defer r.m.liveMu.Unlock()
	if r.live.Load() != 0 {
		return
	}
	res := r.m.live[r.gvr]
	if res == nil {
		res = &resourceSeries{
			members:         map[*Recorder]struct{}{},
			resourceVersion: highest{vec: r.m.resourceVersion, labels: r.labels, which: resourceVersionFigure},
			at:              highest{vec: r.m.lastEvent, labels: r.labels, which: eventTimeFigure},
		}
		r.m.live[r.gvr] = res
	}
	res.mu.Lock()
	res.members[r] = struct{}{}
	res.mu.Unlock()
	r.res.Store(res)
	r.live.Store(1)
}

// leave takes r out of the live recorders of its resource: its last
// resourceVersion and event time no longer count; the last one deletes the
// resource's gauge series (all at 0 but the last event's resourceVersion
// and time), which would stand for informers that no longer run.
func (r *Recorder) leave() {
	r.m.liveMu.Lock()
	defer r.m.liveMu.Unlock()
	if !r.live.CompareAndSwap(1, 2) {
		r.live.Store(2)
		return
	}
	res := r.res.Load()
	res.mu.Lock()
	defer res.mu.Unlock()
	delete(res.members, r)
	res.resourceVersion.drop(res, r)
	res.at.drop(res, r)
	if len(res.members) > 0 {
		return
	}
	delete(r.m.live, r.gvr)
	for _, g := range []*prometheus.GaugeVec{r.m.storeObjects, r.m.bufferObjects, r.m.synced, r.m.resourceVersion, r.m.lastEvent} {
		g.Delete(r.labels)
	}
	r.m.shard.informers.DeletePartialMatch(r.labels)
}

// eventCounter returns the watch_events_total series of event type typ.
func (r *Recorder) eventCounter(typ string) prometheus.Counter {
	if c, ok := r.events.Load(typ); ok {
		return c.(prometheus.Counter)
	}
	c, _ := r.events.LoadOrStore(typ, r.m.watchEvents.With(r.with("type", typ)))
	return c.(prometheus.Counter)
}

func (r *Recorder) with(extra ...string) prometheus.Labels {
	l := make(prometheus.Labels, len(r.labels)+len(extra)/2)
	for k, v := range r.labels {
		l[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

// ListRequest counts a LIST request. One that ended because its context
// was canceled (the informer stopped) is counted apart from failures, so
// that stopping informers does not look like an API server in trouble.
func (r *Recorder) ListRequest(err error) {
	if r == nil {
		return
	}
	result := "success"
	switch {
	case errors.Is(err, context.Canceled):
		result = "canceled"
	case err != nil:
		result = "error"
	}
	r.m.listRequests.With(r.with("result", result)).Inc()
}

// RestartStarted counts a restart and empties this informer's buffer share.
func (r *Recorder) RestartStarted(reason string) {
	if r == nil {
		return
	}
	r.m.restarts.With(r.with("reason", reason)).Inc()
	r.setBuffer(0)
}

// Page counts a restart page of n objects held in the buffer so far.
func (r *Recorder) Page(strategy string, buffered int) {
	if r == nil {
		return
	}
	r.m.listPages.With(r.with("strategy", strategy)).Inc()
	r.setBuffer(int64(buffered))
}

// RestartDone records a completed restart: its duration, its size and the
// relist reuse hits; the buffer became the store.
func (r *Recorder) RestartDone(d time.Duration, objects, reused int) {
	if r == nil {
		return
	}
	r.m.restartDuration.With(r.labels).Observe(d.Seconds())
	r.m.restartObjects.With(r.labels).Observe(float64(objects))
	r.m.reusedObjects.With(r.labels).Add(float64(reused))
	r.setBuffer(0)
	r.SetStoreObjects(int64(objects))
	if !r.synced.Swap(true) {
		r.join()
		r.m.synced.With(r.labels).Inc()
	}
}

// Dropped counts objects dropped before storing.
func (r *Recorder) Dropped(n int) {
	if r == nil || n == 0 {
		return
	}
	r.m.droppedObjects.With(r.labels).Add(float64(n))
}

// SetStoreObjects sets this informer's share of store_objects.
func (r *Recorder) SetStoreObjects(n int64) {
	if r == nil {
		return
	}
	r.join()
	old := r.storeObjects.Swap(n)
	r.storeObjectsSeries.get(r.m.storeObjects, r.labels).Add(float64(n - old))
}

// AddStoreObjects moves this informer's share of store_objects by delta.
func (r *Recorder) AddStoreObjects(delta int64) {
	if r == nil || delta == 0 {
		return
	}
	r.join()
	r.storeObjects.Add(delta)
	r.storeObjectsSeries.get(r.m.storeObjects, r.labels).Add(float64(delta))
}

func (r *Recorder) setBuffer(n int64) {
	old := r.bufferObjects.Swap(n)
	if n != old {
		r.join()
		r.m.bufferObjects.With(r.labels).Add(float64(n - old))
	}
}

// WatchStarted counts an opened watch.
func (r *Recorder) WatchStarted() {
	if r == nil {
		return
	}
	r.m.watches.With(r.labels).Inc()
}

// ShortWatch counts a watch closed by the other end within a second without
// events.
func (r *Recorder) ShortWatch() {
	if r == nil {
		return
	}
	r.m.shortWatches.With(r.labels).Inc()
}

// Event records a live event of type typ at resourceVersion rv, applied at
// time at.
func (r *Recorder) Event(typ, rv string, at time.Time) {
	if r == nil {
		return
	}
	r.eventCounter(typ).Inc()
	r.ResourceVersion(rv, at)
}

// ResourceVersion records the resourceVersion the store is at since time at
// (the informer's clock, so that tests on a fake clock can check it). The
// resource's series show the highest resourceVersion and the latest time
// of its live recorders.
func (r *Recorder) ResourceVersion(rv string, at time.Time) {
	if r == nil {
		return
	}
	r.join()
	v, ok := ParseResourceVersion(rv)
	res := r.res.Load()
	res.mu.Lock()
	defer res.mu.Unlock()
	if _, member := res.members[r]; !member {
		return // closed: its figures no longer count
	}
	if ok {
		res.resourceVersion.record(res, r, v)
	}
	res.at.record(res, r, float64(at.UnixNano())/1e9)
}

// Fallback counts a fallback from streaming to paginated LISTs.
func (r *Recorder) Fallback() {
	if r == nil {
		return
	}
	r.m.fallbacks.With(r.labels).Inc()
}

// Backoff counts a wait before a retry.
func (r *Recorder) Backoff() {
	if r == nil {
		return
	}
	r.m.backoffs.With(r.labels).Inc()
}

// Failure counts a failed list or watch, by its cause's name.
func (r *Recorder) Failure(cause string) {
	if r == nil {
		return
	}
	r.m.failures.With(r.with("cause", cause)).Inc()
}

// Handler returns the recorder of one event handler of this informer.
func (r *Recorder) Handler(name string) *HandlerRecorder {
	if r == nil {
		return nil
	}
	l := r.with("handler", name)
	key := handlerKey{gvr: r.gvr, handler: name}
	r.m.liveMu.Lock()
	defer r.m.liveMu.Unlock()
	r.m.handlers[key]++
	return &HandlerRecorder{
		m:        r.m,
		key:      key,
		labels:   l,
		pending:  r.m.handlerPending.With(l),
		duration: r.m.handlerDuration.With(l),
		panics:   r.m.handlerPanics.With(l),
		folded:   r.m.handlerFolded.With(l),
	}
}

// Close takes this informer's share of the summed gauges back, when it
// stops; the last informer of the resource to close takes its gauge series
// off (its counters and histograms stay). A recorder is not used after
// Close.
func (r *Recorder) Close() {
	if r == nil {
		return
	}
	r.SetStoreObjects(0)
	r.setBuffer(0)
	if r.synced.Swap(false) {
		r.m.synced.With(r.labels).Dec()
	}
	r.closeShard()
	r.leave()
}

// HandlerRecorder records one event handler's metrics. Its pending series
// is shared with the other handlers of the same label (handlers of one
// type, on informers of one resource) and ends with the last of them to
// close. Methods accept a nil receiver.
type HandlerRecorder struct {
	m        *Metrics
	key      handlerKey
	labels   prometheus.Labels
	closed   atomic.Bool
	pending  prometheus.Gauge
	duration prometheus.Observer
	panics   prometheus.Counter
	folded   prometheus.Counter
	queued   atomic.Int64
}

// Queued moves the handler's pending notifications by delta.
func (h *HandlerRecorder) Queued(delta int) {
	if h == nil || delta == 0 {
		return
	}
	h.queued.Add(int64(delta))
	h.pending.Add(float64(delta))
}

// Delivered records one notification delivered in d.
func (h *HandlerRecorder) Delivered(d time.Duration) {
	if h == nil {
		return
	}
	h.duration.Observe(d.Seconds())
	h.queued.Add(-1)
	h.pending.Dec()
}

// Coalesced counts n notifications folded into changes already pending for
// the same objects (coalescing handlers).
func (h *HandlerRecorder) Coalesced(n int) {
	if h == nil || n == 0 {
		return
	}
	h.folded.Add(float64(n))
}

// Panicked counts a notification whose handler panicked.
func (h *HandlerRecorder) Panicked() {
	if h == nil {
		return
	}
	h.panics.Inc()
}

// Close takes back what is still counted as pending (the handler was
// removed or the informer stopped); the last handler of its label to close
// takes the pending series off (its counters and histogram stay). A
// handler recorder is not used after Close; a second Close does nothing.
func (h *HandlerRecorder) Close() {
	if h == nil || h.closed.Swap(true) {
		return
	}
	if n := h.queued.Swap(0); n != 0 {
		h.pending.Sub(float64(n))
	}
	h.m.liveMu.Lock()
	defer h.m.liveMu.Unlock()
	if h.m.handlers[h.key]--; h.m.handlers[h.key] > 0 {
		return
	}
	delete(h.m.handlers, h.key)
	h.m.handlerPending.Delete(h.labels)
}

// ParseResourceVersion reads a resourceVersion as a number for a gauge:
// its last 15 digits (as client-go's metrics do), false if it is not a
// decimal number.
func ParseResourceVersion(rv string) (float64, bool) {
	if rv == "" {
		return 0, false
	}
	if len(rv) > 15 {
		rv = rv[len(rv)-15:]
	}
	v, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return 0, false
	}
	return float64(v), true
}
