package informer

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/leaninformer/leaninformer/pkg/intern"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// Strategy selects how the informer lists: see the listerwatcher package.
type Strategy = listerwatcher.Strategy

// The list strategies.
const (
	// Auto streams the initial list (a WATCH with sendInitialEvents) and falls
	// back to paginated LISTs when the server or the ListerWatcher cannot
	// stream. It is the default and follows client-go's WatchListClient
	// feature gate: with KUBE_FEATURE_WatchListClient=false it means ListWatch.
	Auto = listerwatcher.Auto
	// ListWatch lists page by page, then watches.
	ListWatch = listerwatcher.ListWatch
	// StreamingList always streams the initial list.
	StreamingList = listerwatcher.StreamingList
)

// Backoff configures the retry delays after errors; see listerwatcher.Backoff.
type Backoff = listerwatcher.Backoff

// Option configures what client-go's SharedIndexInformerOptions cannot
// express. Options are applied in order; later ones win.
type Option func(*config)

type config struct {
	watcherOpts []listerwatcher.Option
	relistReuse bool
	clock       clock.WithTicker
	metrics     *metrics.Metrics
	resource    *schema.GroupVersionResource
	syncWarning time.Duration
	interner    *intern.Table // nil: no interning
}

// DefaultSyncWarningAfter is how long an informer waits for its first
// complete list before it logs why it has not synced, and then how often
// it logs again.
const DefaultSyncWarningAfter = 30 * time.Second

func newConfig(opts []Option) config {
	c := config{relistReuse: true, clock: clock.RealClock{}, metrics: metrics.Default, syncWarning: DefaultSyncWarningAfter}
	for _, opt := range opts {
		opt(&c)
	}
	return c
}

// WithStrategy chooses the list strategy (default Auto).
func WithStrategy(s Strategy) Option {
	return WithWatcherOptions(listerwatcher.WithStrategy(s))
}

// WithPageSize sets the LIST page size (default 500; 0 lists everything in
// one response, which holds the whole collection twice while it is decoded).
// Streamed objects are handed to the store in batches of at most
// listerwatcher.MaxStreamingBatch, fewer if the page size is smaller.
func WithPageSize(n int64) Option {
	return WithWatcherOptions(listerwatcher.WithPageSize(n))
}

// WithBackoff sets the delays between retries after errors (default:
// client-go's 800ms doubling to 30s, jittered, reset after 2 minutes of health).
func WithBackoff(b Backoff) Option {
	return WithWatcherOptions(listerwatcher.WithBackoff(b))
}

// WithRelistReuse turns relist reuse on or off (default on): during a relist,
// an object whose key, UID and resourceVersion match the stored one is kept as
// the stored object and the freshly decoded copy is dropped at once, so a
// relist costs about one store instead of two. Handlers then get
// OnUpdate(obj, obj) with the very same object, as for a resync.
func WithRelistReuse(enabled bool) Option {
	return func(c *config) { c.relistReuse = enabled }
}

// WithMetrics sets the metrics the informer records into (default
// metrics.Default; nil records none). Metrics are exported once registered:
// see package metrics.
func WithMetrics(m *metrics.Metrics) Option {
	return func(c *config) { c.metrics = m }
}

// WithResource sets the group, version and resource that label the
// informer's metrics. By default they are derived from the example object:
// its kind when set, else client-go's scheme, with the kind's usual plural.
func WithResource(gvr schema.GroupVersionResource) Option {
	return func(c *config) { c.resource = &gvr }
}

// WithSyncWarningAfter sets how long the informer waits for its first
// complete list before logging why it has not synced, and how often it logs
// again (default DefaultSyncWarningAfter; 0 never logs).
func WithSyncWarningAfter(d time.Duration) Option {
	return func(c *config) { c.syncWarning = d }
}

// WithWatcherOptions passes options straight to the listerwatcher pipeline
// (watch timeouts, the streaming idle timeout, ...). An observer set this
// way replaces the one that feeds the informer's metrics.
func WithWatcherOptions(opts ...listerwatcher.Option) Option {
	return func(c *config) { c.watcherOpts = append(c.watcherOpts, opts...) }
}

// WithClock replaces the real clock, for tests.
func WithClock(clk clock.WithTicker) Option {
	return func(c *config) {
		c.clock = clk
		c.watcherOpts = append(c.watcherOpts, listerwatcher.WithClock(clk))
	}
}
