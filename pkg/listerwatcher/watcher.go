package listerwatcher

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"
)

// Watcher lists and watches one collection through a client-go
// ListerWatcher and hands a Consumer a clean sequence of restarts and live
// events. Create it with New; Run it once at a time.
type Watcher struct {
	config
	lw toolscache.ListerWatcherWithContext
	// cannotStream: the ListerWatcher declares it ignores sendInitialEvents.
	cannotStream bool
	running      atomic.Bool
}

// New returns a Watcher reading through lw, which may implement the
// context-aware methods (toolscache.ListerWatcherWithContext) or only List
// and Watch; in the latter case a LIST in flight cannot be interrupted and
// Run returns when it does.
//
// The watcher passes lw ListOptions it builds itself; lw may add fields (a
// selector, say) or override some: controller-runtime's overrides
// AllowWatchBookmarks, which Auto detects and survives.
func New(lw toolscache.ListerWatcher, opts ...Option) (*Watcher, error) {
	if lw == nil || isNilPointer(lw) {
		return nil, errors.New("listerwatcher.New: the ListerWatcher is nil")
	}
	cfg := defaultConfig()
	for _, opt := range opts {
		opt(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("listerwatcher.New: %w", err)
	}
	cfg.observer = joinObservers(cfg.observers)
	return &Watcher{
		config:       cfg,
		lw:           toolscache.ToListerWatcherWithContext(lw),
		cannotStream: watchlist.DoesClientNotSupportWatchListSemantics(lw),
	}, nil
}

func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// Run lists and watches until ctx ends, calling c synchronously: the next
// page or watch event is read only after Handle has returned, and the previous
// page is unreachable from the watcher before the next LIST request is sent.
// Every failure is handled inside (reported to the error handler, backed off,
// retried or restarted), so Run returns nil when ctx ends, with no goroutine
// left behind. It returns an error only when c is nil or the Watcher is
// already running.
func (w *Watcher) Run(ctx context.Context, c Consumer) error {
	if c == nil {
		return errors.New("listerwatcher: Run needs a Consumer, got nil")
	}
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("listerwatcher: Run called while the Watcher is already running")
	}
	defer w.running.Store(false)

	r := &run{
		Watcher: w,
		c:       c,
		logger:  klog.FromContext(ctx),
		backoff: newBackoff(w.backoff, w.clock),
		state:   stateRestart,
		reason:  Initial,
		canStream: !w.cannotStream &&
			(w.strategy == StreamingList || clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)),
	}
	if w.name != "" {
		r.logger = r.logger.WithValues("listerwatcher", w.name)
	}
	if w.strategy == StreamingList && w.cannotStream {
		r.logger.Info("Warning: the ListerWatcher cannot stream lists; using paginated LIST instead of StreamingList")
	}
	defer r.closeStream(nil)
	r.logger.V(3).Info("Starting list and watch", "strategy", w.strategy)
	for ctx.Err() == nil {
		switch r.state {
		case stateRestart:
			if r.streaming() {
				r.streamRestart(ctx)
			} else {
				r.listRestart(ctx)
			}
		case stateWatch:
			r.follow(ctx)
		}
	}
	r.logger.V(3).Info("Stopped list and watch")
	return nil
}

// state is what a run does next.
type state uint8

const (
	// stateRestart: get the whole collection (reason says why).
	stateRestart state = iota
	// stateWatch: follow the changes after lastRV, on the stream a
	// streaming restart left open or on a new watch.
	stateWatch
)

// run is the state of one Run.
type run struct {
	*Watcher
	c       Consumer
	logger  klog.Logger
	backoff *backoff

	state  state
	reason RestartReason // why the next restart happens
	lastRV string        // newest resourceVersion the consumer has
	// rvUnavailable: lastRV answered Expired or too large; the next request
	// reads from "" (the newest consistent state) instead.
	rvUnavailable bool
	stream        *openWatch // left open by a streaming restart

	canStream     bool      // the strategy, lw and feature gate allow streaming
	fallbackUntil time.Time // Auto lists until then
	fallbacks     int
	batch         []runtime.Object // the streaming page, reused
}

// openWatch is a watch with what WatchEnded needs.
type openWatch struct {
	watch.Interface
	start  time.Time
	events int
}

// open starts a watch with opts. It returns nil and no error when ctx ended
// meanwhile, after stopping a watch that opened all the same.
func (r *run) open(ctx context.Context, opts metav1.ListOptions) (*openWatch, error) {
	start := r.clock.Now()
	wi, err := r.lw.WatchWithContext(ctx, opts)
	if ctx.Err() != nil {
		if err == nil {
			wi.Stop()
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.observer.WatchStarted(opts)
	return &openWatch{Interface: wi, start: start}, nil
}

// streaming reports whether the next restart streams.
func (r *run) streaming() bool {
	if !r.canStream || r.strategy == ListWatch {
		return false
	}
	return r.strategy == StreamingList || !r.clock.Now().Before(r.fallbackUntil)
}

// restartAfter moves to a restart for reason, unless the consumer has not
// seen this restart begin: then it keeps the reason it will see.
func (r *run) restartAfter(reason RestartReason, started bool) {
	if r.state != stateRestart || started {
		r.reason = reason
	}
	r.state = stateRestart
}

// deliver hands ev to the consumer. On a consumer error it reports it, backs
// off and moves to a restart; false means the caller must return.
func (r *run) deliver(ctx context.Context, ev Event) bool {
	err := r.c.Handle(ctx, ev)
	if ctx.Err() != nil {
		return false
	}
	if err == nil {
		return true
	}
	err = fmt.Errorf("consumer failed to handle %v: %w", ev.Type, err)
	r.report(ctx, OpConsume, err)
	r.state, r.reason = stateRestart, ConsumerError
	r.pause(ctx, err)
	return false
}

// report passes the failure of step op to the error handler.
func (r *run) report(ctx context.Context, op Op, err error) {
	if r.errorHandler != nil {
		r.errorHandler(ctx, &Failure{Op: op, Err: err})
		return
	}
	if isExpired(err) {
		r.logger.V(4).Info("Resource version expired", "err", err)
		return
	}
	utilruntime.HandleErrorWithContext(ctx, err, "List and watch failed", "listerwatcher", r.name)
}

// pause waits out the next backoff delay (at least what the server asked
// for); false means ctx ended first.
func (r *run) pause(ctx context.Context, err error) bool {
	d := r.backoff.next(retryAfter(err))
	t := r.clock.NewTimer(d)
	defer t.Stop()
	r.observer.Backoff(d, err)
	r.logger.V(2).Info("Backing off", "delay", d, "err", err)
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// fallBack makes Auto list instead of stream for the fallback TTL, right
// away. It logs err itself, so without an error handler nothing else does.
func (r *run) fallBack(ctx context.Context, err error, started bool) {
	if r.errorHandler != nil {
		r.errorHandler(ctx, &Failure{Op: OpFallback, Err: err})
	}
	r.fallbackUntil = r.clock.Now().Add(r.fallbackTTL)
	r.observer.StrategyFallback(err)
	logger := r.logger
	if r.fallbacks > 0 {
		logger = logger.V(2)
	}
	r.fallbacks++
	logger.Info("Cannot stream the list; falling back to paginated LIST", "for", r.fallbackTTL, "err", err)
	r.restartAfter(StreamingFallback, started)
}

// watchTimeout returns a random server-side timeout in [min, 2*min], so
// that the watches of many clients do not all end together.
func (r *run) watchTimeout() *int64 {
	s := int64(r.minWatchTimeout.Seconds() * (1 + rand.Float64()))
	return &s
}

// accept reports whether a watch event's object is of the expected type;
// others are dropped with an error, as client-go's reflector does.
func (r *run) accept(ctx context.Context, obj runtime.Object) bool {
	if obj == nil {
		utilruntime.HandleErrorWithContext(ctx, nil, "Dropped a watch event without an object", "listerwatcher", r.name)
		return false
	}
	if r.expectedType != nil && reflect.TypeOf(obj) != r.expectedType {
		utilruntime.HandleErrorWithContext(ctx, nil, "Dropped a watch event of an unexpected type",
			"listerwatcher", r.name, "expectedType", r.expectedType, "actualType", reflect.TypeOf(obj))
		return false
	}
	if r.expectedGVK != nil {
		if gvk := obj.GetObjectKind().GroupVersionKind(); gvk != *r.expectedGVK {
			utilruntime.HandleErrorWithContext(ctx, nil, "Dropped a watch event of an unexpected kind",
				"listerwatcher", r.name, "expectedGVK", *r.expectedGVK, "actualGVK", gvk)
			return false
		}
	}
	return true
}

// closeStream stops the stream a streaming restart left open, if any.
func (r *run) closeStream(err error) {
	if r.stream == nil {
		return
	}
	r.stream.Stop()
	r.observer.WatchEnded(r.clock.Since(r.stream.start), r.stream.events, err)
	r.stream = nil
}
