package listerwatcher

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

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
	lw listerWatcher
	// streamingUnsupported: the ListerWatcher declares it ignores
	// sendInitialEvents.
	streamingUnsupported bool
	running              atomic.Bool
	// relist holds a Relist call until Run acts on it; calls meanwhile
	// coalesce.
	relist chan struct{}
}

// New returns a Watcher reading through lw, which may implement the
// context-aware methods (toolscache.ListerWatcherWithContext) or only List
// and Watch. Calls that ignore their context cannot be interrupted: Run stops
// waiting for one when its context ends and leaves it to finish on a
// goroutine of its own (see Run).
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
		config:               cfg,
		lw:                   withContext(lw),
		streamingUnsupported: watchlist.DoesClientNotSupportWatchListSemantics(lw),
		relist:               make(chan struct{}, 1),
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
// retried or restarted, as the package's fault table says), so Run returns
// nil when ctx ends, with no goroutine left behind; a call of a ListerWatcher
// that ignores its context is the exception: Run returns without waiting for
// it, and the goroutine it runs on ends when the call returns (a watch it
// opens then is stopped). Run returns an error only when c is nil or the
// Watcher is already running.
func (w *Watcher) Run(ctx context.Context, c Consumer) error {
	if c == nil {
		return errors.New("listerwatcher: Run needs a Consumer, got nil")
	}
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("listerwatcher: Run called while the Watcher is already running")
	}
	defer w.running.Store(false)

	m := &machine{
		Watcher: w,
		c:       c,
		logger:  klog.FromContext(ctx),
		backoff: newBackoff(w.backoff, w.clock),
		sizer:   newPageSizer(w.pageSize, w.fixedPageSize),
		canStream: !w.streamingUnsupported &&
			(w.strategy == StreamingList || clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)),
	}
	m.versions, _ = c.(StoredVersions)
	notifier, _ := c.(RestartNotifier)
	if w.name != "" {
		m.logger = m.logger.WithValues("listerwatcher", w.name)
	}
	if w.strategy == StreamingList && w.streamingUnsupported {
		m.logger.Info("Warning: the ListerWatcher cannot stream lists; using paginated LIST instead of StreamingList")
	}
	m.relistRequested() // the initial restart answers a Relist before Run
	m.logger.V(3).Info("Starting list and watch", "strategy", w.strategy)
	ph := m.restart(attempt{reason: Initial})
	for ctx.Err() == nil {
		next := m.guardedStep(ctx, ph)
		if notifier != nil && isRestart(next) && !isRestart(ph) {
			notifier.RestartPending()
		}
		ph = next
	}
	m.closeStream(ph)
	m.logger.V(3).Info("Stopped list and watch")
	return nil
}

// Relist asks a running Watcher to get the whole collection again now: it
// interrupts the watch, the restart (a paginated LIST between two pages) or
// the backoff in progress and starts a restart with reason Requested, from
// the newest resourceVersion the consumer has. Calls before that restart
// sends its first request coalesce into it; a call while no Run is in
// progress is answered by the next Run's initial restart. Safe to call from
// any goroutine, the consumer's included.
func (w *Watcher) Relist() {
	select {
	case w.relist <- struct{}{}:
	default: // one is pending already
	}
}
