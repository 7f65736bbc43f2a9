package listerwatcher

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

// Defaults, from client-go's reflector where it has the same knob.
const (
	DefaultPageSize             = 500
	DefaultMinWatchTimeout      = 5 * time.Minute
	DefaultStreamingIdleTimeout = 10 * time.Second
	DefaultFallbackTTL          = 10 * time.Minute
)

// DefaultBackoff has client-go's reflector delays: 800ms doubling to 30s,
// each delay stretched by up to 100%. It goes back to 800ms after 2 minutes
// without a retry, where client-go's goes back every 2 minutes counted from
// its last reset, even while every retry fails (see docs/compatibility.md).
var DefaultBackoff = Backoff{
	Initial:    800 * time.Millisecond,
	Factor:     2,
	Cap:        30 * time.Second,
	Jitter:     1.0,
	ResetAfter: 2 * time.Minute,
}

// Backoff configures the delay before each retry: a base delay starting at
// Initial, multiplied by Factor after every retry up to Cap, stretched by a
// random fraction of up to Jitter of itself (so a delay lies in
// [base, base*(1+Jitter)]). After ResetAfter without a retry the base goes
// back to Initial.
type Backoff struct {
	Initial    time.Duration
	Factor     float64
	Cap        time.Duration
	Jitter     float64
	ResetAfter time.Duration
}

// Validate reports what makes b unusable: an Initial delay that is not
// positive (failures would be retried at once, for as long as they last), a
// Factor below 1, a Cap below Initial, a negative Jitter, a Factor or
// Jitter that is not finite.
func (b Backoff) Validate() error {
	switch {
	case b.Initial <= 0:
		return fmt.Errorf("backoff Initial %v is not positive: every failure would be retried at once", b.Initial)
	case math.IsNaN(b.Factor) || math.IsInf(b.Factor, 0):
		return fmt.Errorf("backoff Factor %v is not finite", b.Factor)
	case b.Factor < 1:
		return fmt.Errorf("backoff Factor %v is below 1", b.Factor)
	case b.Cap < b.Initial:
		return fmt.Errorf("backoff Cap %v is below Initial %v", b.Cap, b.Initial)
	case math.IsNaN(b.Jitter) || math.IsInf(b.Jitter, 0):
		return fmt.Errorf("backoff Jitter %v is not finite", b.Jitter)
	case b.Jitter < 0:
		return fmt.Errorf("backoff Jitter %v is negative", b.Jitter)
	case b.ResetAfter < 0:
		return fmt.Errorf("backoff ResetAfter %v is negative", b.ResetAfter)
	}
	return nil
}

// Option configures a Watcher.
type Option func(*config)

type config struct {
	strategy Strategy
	// paginatedRelists: WithPaginatedRelists, the restarts Relist asks for
	// list in pages whatever the strategy.
	paginatedRelists bool
	pageSize         int64
	fixedPageSize    bool // WithPageSize: no adaptive page sizes
	backoff          Backoff
	minWatchTimeout  time.Duration
	idleTimeout      time.Duration
	fallbackTTL      time.Duration
	expectedType     reflect.Type
	expectedGVK      *schema.GroupVersionKind
	errorHandler     func(ctx context.Context, err error)
	observers        []Observer // as given; New joins them into observer
	observer         Observer
	clock            clock.WithTicker
	name             string
}

func defaultConfig() config {
	return config{
		strategy:        Auto,
		pageSize:        DefaultPageSize,
		backoff:         DefaultBackoff,
		minWatchTimeout: DefaultMinWatchTimeout,
		idleTimeout:     DefaultStreamingIdleTimeout,
		fallbackTTL:     DefaultFallbackTTL,
		clock:           clock.RealClock{},
	}
}

func (c *config) validate() error {
	var errs []error
	if c.strategy > StreamingList {
		errs = append(errs, fmt.Errorf("unknown strategy %v", c.strategy))
	}
	if c.pageSize < 0 {
		errs = append(errs, fmt.Errorf("page size %d is negative", c.pageSize))
	}
	if err := c.backoff.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.minWatchTimeout < time.Second {
		errs = append(errs, fmt.Errorf("minimum watch timeout %v is below the 1s the API server can express", c.minWatchTimeout))
	}
	if c.idleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("streaming idle timeout %v is not positive", c.idleTimeout))
	}
	if c.fallbackTTL < 0 {
		errs = append(errs, fmt.Errorf("fallback TTL %v is negative", c.fallbackTTL))
	}
	if slices.Contains(c.observers, nil) {
		errs = append(errs, errors.New("observer is nil"))
	}
	if c.clock == nil {
		errs = append(errs, errors.New("clock is nil"))
	}
	return errors.Join(errs...)
}

// WithStrategy sets how restarts get the collection (default Auto).
func WithStrategy(s Strategy) Option { return func(c *config) { c.strategy = s } }

// WithPaginatedRelists makes, when on, the restarts that Relist asks for
// get the collection with paginated LISTs, as ListWatch does, whatever the
// strategy; the initial restart and those after failures keep the strategy
// (off, the default: every restart does). It is for consumers that relist
// on purpose, often in several processes at once (a sharded informer on a
// range change): a paginated LIST costs the API server and the client less
// per object than the watch events of a streamed list, and holds a page (at
// most 16 MiB of decoded objects, or 2.5% of a store past 640 MiB, up to
// 64 MiB) where a stream holds a batch.
func WithPaginatedRelists(on bool) Option { return func(c *config) { c.paginatedRelists = on } }

// WithPageSize makes every LIST page ask for n objects and caps the batches
// of streamed initial events, which hold at most MaxStreamingBatch objects.
// 0 asks for the whole collection in one LIST response, or one batch. The
// exception, with or without it: a list whose continue token expires twice
// in a row (it is slower than etcd's compaction) is taken in one LIST
// without a limit (see the fault table in the package README).
//
// Without it, pages are sized per restart: the first asks for
// DefaultPageSize objects; the next ones share what remains so that a
// restart takes about 8 LISTs, within client-go's default rate-limit burst
// of 10 requests, each page holding at most 16 MiB of decoded objects (or
// 2.5% of what the listing keeps past 640 MiB, up to 64 MiB), but never
// fewer objects than the first asked for, whatever they weigh. See the
// package README.
func WithPageSize(n int64) Option {
	return func(c *config) { c.pageSize, c.fixedPageSize = n, true }
}

// MaxStreamingBatch is the most streamed initial events handed to the
// consumer in one RestartPage. A batch amortises no request, so it is kept
// small: the decoded objects of a batch are held until the consumer has
// taken them (at 500 RoleBindings that is over 1 MiB at the peak of a relist).
const MaxStreamingBatch = 100

// streamingBatch is the size of the batches of streamed initial events; 0
// means one batch of everything.
func (c *config) streamingBatch() int {
	if c.pageSize == 0 {
		return 0
	}
	return int(min(c.pageSize, MaxStreamingBatch))
}

// WithBackoff sets the retry backoff (default DefaultBackoff).
func WithBackoff(b Backoff) Option { return func(c *config) { c.backoff = b } }

// WithMinWatchTimeout sets the shortest server-side watch timeout: each
// watch asks for a random timeoutSeconds in [min, 2*min] (default 5m), so
// that watches of many clients do not end together.
func WithMinWatchTimeout(d time.Duration) Option { return func(c *config) { c.minWatchTimeout = d } }

// WithStreamingIdleTimeout sets how long a streaming restart waits for the
// next initial event or the end bookmark (default 10s). Past it, Auto falls
// back to ListWatch and StreamingList retries.
func WithStreamingIdleTimeout(d time.Duration) Option { return func(c *config) { c.idleTimeout = d } }

// WithFallbackTTL sets how long Auto keeps using ListWatch after streaming
// failed (default 10m). The restart right after a fallback lists whatever
// the TTL; with 0, the next one streams again.
func WithFallbackTTL(d time.Duration) Option { return func(c *config) { c.fallbackTTL = d } }

// WithExpectedType drops, with an error, watch events whose object is not of
// example's Go type or, for an *unstructured.Unstructured example with a
// kind, not of its group, version and kind; as client-go's reflector does.
// nil (the default) accepts everything.
func WithExpectedType(example runtime.Object) Option {
	return func(c *config) {
		c.expectedType, c.expectedGVK = nil, nil
		if example == nil {
			return
		}
		c.expectedType = reflect.TypeOf(example)
		if u, ok := example.(*unstructured.Unstructured); ok {
			if gvk := u.GroupVersionKind(); !gvk.Empty() {
				c.expectedGVK = &gvk
			}
		}
	}
}

// WithErrorHandler adds a function called with every failure (a failed
// LIST, a failed watch open, a watch ended by an error, ErrVeryShortWatch
// included, a consumer error, a failed streaming attempt) before the watcher
// reacts to it, as a *Failure that says which step failed and carries the
// watcher's Decision about it. Handlers given by several options are all
// called, in the order given, so that a wrapper (the informer) and its user
// can both listen; nil adds none. Without any, the watcher logs the failures
// a user must act on (Decision.Notify) as client-go's default watch error
// handler does, through k8s.io/apimachinery's runtime.HandleError (a 410 at
// V(4)), and the others at Decision.Verbosity.
func WithErrorHandler(h func(ctx context.Context, err error)) Option {
	return func(c *config) {
		switch prev := c.errorHandler; {
		case h == nil:
		case prev == nil:
			c.errorHandler = h
		default:
			c.errorHandler = func(ctx context.Context, err error) {
				prev(ctx, err)
				h(ctx, err)
			}
		}
	}
}

// WithObserver adds an Observer of the watcher's requests (default none).
// Observers given by several options are all called, in the order given; a
// nil one is an error of New.
func WithObserver(o Observer) Option {
	return func(c *config) { c.observers = append(c.observers, o) }
}

// WithClock sets the clock for backoffs and timeouts (fake clocks in tests).
func WithClock(clk clock.WithTicker) Option { return func(c *config) { c.clock = clk } }

// WithName names the watcher in its logs.
func WithName(name string) Option { return func(c *config) { c.name = name } }
