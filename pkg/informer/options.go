package informer

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/leaninformer/leaninformer/pkg/codec"
	"github.com/leaninformer/leaninformer/pkg/intern"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// Strategy selects how the informer lists: see the listerwatcher package.
type Strategy = listerwatcher.Strategy

// The list strategies.
const (
	// Auto streams the initial list (a WATCH with sendInitialEvents) and falls
	// back to paginated LISTs for a while (10 minutes) when the stream cannot
	// be used: opening it fails with any error but a 429, a refused connection
	// or an unavailable resourceVersion (a transient 500 or 503 too), or it
	// does not end (bookmarks off). It lists for good when the ListerWatcher
	// cannot stream. It is the default and follows client-go's WatchListClient
	// feature gate: with KUBE_FEATURE_WatchListClient=false it means ListWatch.
	Auto = listerwatcher.Auto
	// ListWatch lists page by page, then watches.
	ListWatch = listerwatcher.ListWatch
	// StreamingList streams every list, whatever the WatchListClient feature
	// gate says, and retries the stream after errors instead of falling back.
	// It lists page by page (with a warning) only when the ListerWatcher says
	// it cannot stream (IsWatchListSemanticsUnSupported).
	StreamingList = listerwatcher.StreamingList
)

// Backoff configures the retry delays after errors; see listerwatcher.Backoff.
type Backoff = listerwatcher.Backoff

// DefaultSyncWarningAfter is how long an informer waits for its first
// complete list before it logs why it has not synced, and then how often
// it logs again.
const DefaultSyncWarningAfter = 30 * time.Second

// Option configures what client-go's SharedIndexInformerOptions cannot
// express. Options are applied in order; later ones win. The constructors
// reject invalid options: see ValidateOptions.
type Option func(*config)

// config is what the options set. Every field has its default in
// defaultConfig.
type config struct {
	strategy    Strategy
	pageSize    *int64 // nil: the watcher sizes its pages
	backoff     Backoff
	relistReuse bool
	clock       clock.WithTicker
	metrics     *metrics.Metrics             // nil: none
	resource    *schema.GroupVersionResource // nil: guessed from the example object
	syncWarning time.Duration                // 0: never
	interner    *intern.Table                // nil: no interning
	encoded     bool                         // WithEncodedStore
	codecOpts   []codec.Option
	readKind    *schema.GroupVersionKind // NewCacheWith: the kind decoded objects get
	// coalesceControllerRuntime: controller-runtime's handlers coalesce.
	coalesceControllerRuntime bool
	watcherOpts               []listerwatcher.Option // applied after the settings above
	shard                     *shardConfig           // nil: not sharded
	scheme                    *runtime.Scheme        // gives typed objects their kinds
}

func defaultConfig() config {
	return config{
		strategy:    Auto,
		backoff:     listerwatcher.DefaultBackoff,
		relistReuse: true,
		clock:       clock.RealClock{},
		metrics:     metrics.Default,
		syncWarning: DefaultSyncWarningAfter,
		scheme:      defaultScheme,
	}
}

// newConfig applies opts to the defaults and validates the result.
func newConfig(opts []Option) (config, error) {
	c := defaultConfig()
	var errs []error
	for i, opt := range opts {
		if opt == nil {
			errs = append(errs, fmt.Errorf("option %d is nil", i))
			continue
		}
		opt(&c)
	}
	return c, errors.Join(append(errs, c.validate())...)
}

// validate names the option behind every invalid setting.
func (c *config) validate() error {
	var errs []error
	if c.strategy > StreamingList {
		errs = append(errs, fmt.Errorf("WithStrategy: unknown strategy %v", c.strategy))
	}
	if c.pageSize != nil && *c.pageSize < 0 {
		errs = append(errs, fmt.Errorf("WithPageSize: page size %d is negative", *c.pageSize))
	}
	if err := c.backoff.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("WithBackoff: %w", err))
	}
	if c.clock == nil {
		errs = append(errs, errors.New("WithClock: the clock is nil"))
	}
	if c.resource != nil && c.resource.Resource == "" {
		errs = append(errs, fmt.Errorf("WithResource: %q names no resource", c.resource.String()))
	}
	if c.syncWarning < 0 {
		errs = append(errs, fmt.Errorf("WithSyncWarningAfter: %v is negative (0 turns the warning off)", c.syncWarning))
	}
	for i, opt := range c.codecOpts {
		if opt == nil {
			errs = append(errs, fmt.Errorf("WithEncodedStore: codec option %d is nil", i))
		}
	}
	if err := c.validateWatcherOptions(); err != nil {
		errs = append(errs, fmt.Errorf("WithWatcherOptions: %w", err))
	}
	if c.shard != nil {
		errs = append(errs, c.shard.validate(c.scheme))
	}
	return errors.Join(errs...)
}

// validateWatcherOptions checks the options given to WithWatcherOptions, on
// their own so that an error is theirs. Only listerwatcher.New knows what
// they set, so it builds a Watcher that is never run.
func (c *config) validateWatcherOptions() error {
	for i, opt := range c.watcherOpts {
		if opt == nil {
			return fmt.Errorf("option %d is nil", i)
		}
	}
	if len(c.watcherOpts) == 0 {
		return nil
	}
	_, err := listerwatcher.New(&toolscache.ListWatch{}, c.watcherOpts...)
	return err
}

// listerwatcherOptions are the settings the watcher takes, then the options
// given to WithWatcherOptions, which therefore win.
func (c *config) listerwatcherOptions() []listerwatcher.Option {
	opts := []listerwatcher.Option{
		listerwatcher.WithStrategy(c.strategy),
		listerwatcher.WithBackoff(c.backoff),
		listerwatcher.WithClock(c.clock),
	}
	if c.pageSize != nil {
		opts = append(opts, listerwatcher.WithPageSize(*c.pageSize))
	}
	return append(opts, c.watcherOpts...)
}

// ValidateOptions reports every invalid option of opts, each error naming
// its option (for instance "WithPageSize: page size -1 is negative"). The
// constructors panic on such options and NewCacheWith's function returns
// this error; call it first when options come from configuration.
func ValidateOptions(opts ...Option) error {
	_, err := newConfig(opts)
	if err != nil {
		return fmt.Errorf("invalid informer options: %w", err)
	}
	return nil
}

// WithStrategy chooses the list strategy (default Auto).
func WithStrategy(s Strategy) Option {
	return func(c *config) { c.strategy = s }
}

// WithPageSize makes every LIST page ask for n objects (0 lists everything
// in one response, which holds the whole collection twice while it is
// decoded). Without it the informer sizes its pages: the first asks for 500
// objects, the next ones share what remains so that a (re)list takes about 8
// LISTs, within the burst of 10 requests that client-go's default rate limit
// allows, each page holding at most 16 MiB of decoded objects (2.5% of the
// collection past 640 MiB, up to 64 MiB), but never fewer objects than the
// first asked for, whatever they weigh (see the listerwatcher package). With
// it or without, a list whose continue token expires twice in a row (it is
// slower than etcd's compaction) is taken in one LIST without a limit, as
// client-go's pager takes it at the first expiry. Streamed objects are
// handed to the store in batches of at most listerwatcher.MaxStreamingBatch,
// fewer if the page size is smaller.
func WithPageSize(n int64) Option {
	return func(c *config) { c.pageSize = &n }
}

// WithBackoff sets the delays between retries after errors (default:
// client-go's 800ms doubling to 30s, jittered, reset after 2 minutes of health).
func WithBackoff(b Backoff) Option {
	return func(c *config) { c.backoff = b }
}

// WithRelistReuse turns relist reuse on or off (default on): during a relist,
// an object whose key, UID and resourceVersion match the stored one is kept as
// the stored object and the freshly decoded copy is dropped at once, so a
// relist costs about one store instead of two. Handlers then get
// OnUpdate(obj, obj) with the very same object, as for a resync. A write a
// caller made into the stored object (against the store's contract) is kept
// too, where client-go's relist stores the listed copy.
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
// NewCacheWith refuses it: it labels each of its informers with its own
// resource, from the manager's scheme and RESTMapper.
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
// (watch timeouts, the streaming idle timeout, ...). They are applied after
// the informer's own settings (WithStrategy, WithPageSize, WithBackoff,
// WithClock), so they win over them. An observer or error handler given
// here (listerwatcher.WithObserver, WithErrorHandler) is called in addition
// to the informer's, which keep feeding its metrics, its watch error handler
// and SyncStatus.
func WithWatcherOptions(opts ...listerwatcher.Option) Option {
	return func(c *config) { c.watcherOpts = append(c.watcherOpts, opts...) }
}

// WithClock replaces the real clock everywhere the informer reads time: the
// watcher's backoffs and timeouts, restart durations, SyncStatus, handler
// latencies, the resync and sync-warning tickers, and the second a handler
// waits after it panicked (so with a fake clock, a handler that panicked is
// called again only once the clock is stepped). For tests.
func WithClock(clk clock.WithTicker) Option {
	return func(c *config) { c.clock = clk }
}
