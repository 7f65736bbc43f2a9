package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgofeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
)

var _ toolscache.SharedIndexInformer = (*SharedIndexInformer)(nil)

// SharedIndexInformer implements client-go's cache.SharedIndexInformer: the
// watcher of package listerwatcher lists and watches through the
// ListerWatcher, and each page and event goes straight into the
// double-buffered indexer of package cache, with no queue in between; event
// handlers are then told what changed. Construct it with
// NewSharedIndexInformer or NewSharedIndexInformerWithOptions.
//
// What a handler can rely on:
//
//   - Store first. A change is in the store (GetStore, GetIndexer) before
//     any handler is told of it, so a handler that reads the store finds the
//     state it is told of or a later one, never an earlier one. The store
//     itself is one object for the informer's whole life.
//   - Order. Each handler gets its notifications one at a time, from a
//     goroutine of its own, in the order the store changed. Its queue is
//     unbounded: a slow handler holds up neither the store nor the other
//     handlers, and handlers may be at different points of the history at
//     the same moment.
//   - Relists. A relist (the first list, or a new one after a 410 or an
//     error) is swapped into the store in one step once it is complete;
//     until then the store keeps the previous state. Then each handler gets,
//     as one entry of its queue: OnDelete(cache.DeletedFinalStateUnknown)
//     carrying the last stored object for every key the new list lacks, then
//     OnAdd or OnUpdate(old, new) for every listed object, in list order, as
//     client-go's atomic replace delivers them. With relist reuse (the
//     default, see WithRelistReuse) an object found unchanged (same key, UID
//     and resourceVersion) stays the stored object, so its OnUpdate gets the
//     same pointer as old and new. Updates that keep the resourceVersion go
//     only to handlers that were due for a resync at the last resync check
//     (to all handlers when the informer does not resync), as in client-go.
//   - Initial list. Handlers added before Run get OnAdd(obj, true) for every
//     object of the first list; OnAdd's isInInitialList is false afterwards,
//     relists included. A handler added while the informer runs first gets
//     OnAdd(obj, true) for every object stored at that moment, then every
//     later change exactly once. A registration's HasSynced turns true once
//     the informer has synced and the handler has returned from the OnAdd
//     calls of its initial list, even if one of them panicked (with
//     utilruntime.ReallyCrash off; client-go's registration then never
//     syncs).
//   - Resync. With a resync period, every handler due for a resync gets
//     OnUpdate(obj, obj) for every stored object. As client-go's reflector
//     runs them, resyncs are checked a period after each complete list and
//     then every period, and not at all from the moment the watcher gives
//     the watch up for a relist (a 410, Relist, a range change) until that
//     relist is stored, however long its requests fail; a watch opened
//     again from the same resourceVersion (after a 500 error event, which
//     makes client-go relist) does not stop them. Per-handler periods are
//     clamped as client-go clamps them.
//   - Transformed objects only. Every object a handler gets went through the
//     transform (SetTransform). An object it fails on is left out: a listed
//     one is not stored (the list is, and the informer syncs; client-go's
//     LIST mode refuses the whole list), and the watch error handler and
//     SyncStatus get a DroppedObjectsError naming it; a watch update is
//     dropped and the last good object stays stored, as in client-go; a
//     delete removes the stored object all the same and handlers get
//     OnDelete(cache.DeletedFinalStateUnknown) carrying its last stored
//     state, where client-go keeps the object until its next relist.
//   - Errors. What client-go's reflector hands its watch error handler goes
//     to the watch error handler (SetWatchErrorHandler): failed lists and
//     the failed watch opens it does not retry by itself. A refused or
//     throttled watch open, a 410 answered by a relist from "" and a watch
//     that ends with an error are only logged, at client-go's levels
//     (pkg/listerwatcher's fault table, row by row). The handler gets a
//     *cache.Reflector whose Name, TypeDescription and
//     LastSyncResourceVersion are the informer's and which never reaches the
//     API server. Every failure is retried, and SyncStatus says why the
//     informer has not synced.
//
// The differences from client-go's informer that are deliberate (relist
// reuse, the fallback from streaming lists, paginated consistent lists,
// the transform and panic cases above, what client-go's queued-items
// metric counts, metrics and sync diagnostics) are summarised under
// "Compatibility with client-go" in pkg/informer/README.md; docs/compatibility.md
// in the repository lists every one, with client-go's behaviour beside it.
type SharedIndexInformer struct {
	// Set at construction, never changed.
	objectType        runtime.Object
	objectDescription string
	cfg               config
	watcher           *listerwatcher.Watcher
	indexer           *cache.Indexer // safe for concurrent use
	processor         *processor     // safe for concurrent use
	metrics           *metricsBridge // safe for concurrent use
	diag              *syncDiagnostics
	shard             *shardState // nil: not sharded
	mutationDetector  toolscache.MutationDetector
	// list is the ListerWatcher's list, for the consistency check.
	list func(context.Context, metav1.ListOptions) (runtime.Object, error)
	// reflector is what watch error handlers receive: client-go's
	// WatchErrorHandlers take a *Reflector, and handlers read its name, type
	// and resourceVersion. It never reaches the API server.
	reflector *handlerReflector
	// synced is closed by the store writer once the first complete list is
	// stored and its notifications are queued.
	synced chan struct{}
	// resyncs says when the resync loop may run: from each complete list
	// until the watcher starts a relist.
	resyncs *resyncWindow

	// startedMu guards started and stopped, and the settings that may only
	// change before Run: transform, watchErrorHandler, resyncCheckPeriod and
	// defaultEventHandlerResyncPeriod. Lock order: startedMu, then changeMu.
	startedMu                       sync.Mutex
	started, stopped                bool
	transform                       toolscache.TransformFunc
	watchErrorHandler               toolscache.WatchErrorHandlerWithContext
	resyncCheckPeriod               time.Duration
	defaultEventHandlerResyncPeriod time.Duration

	// changeMu serialises each store change with the queueing of its
	// notifications, so that a handler joining late (or a resync) takes its
	// snapshot of the store between two changes and then hears of every
	// later change exactly once. The store writer holds it for every change,
	// AddEventHandlerWithOptions and RemoveEventHandler while they add or
	// remove a running listener, and the resync loop for its snapshot. Lock
	// order: after startedMu; before the indexer's lock, processor.mu,
	// rvMu and the diagnostics' lock, which it may hold.
	changeMu sync.Mutex

	// rvMu guards lastSyncResourceVersion; taken alone or under changeMu.
	rvMu                    sync.RWMutex
	lastSyncResourceVersion string
}

// NewSharedIndexInformer has the signature of client-go's constructor, so it
// can replace it anywhere, including controller-runtime's
// cache.Options.NewInformer. It panics if lw is nil. A nil exampleObject turns
// off the check that watched objects have the expected type, as in client-go.
func NewSharedIndexInformer(lw toolscache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return NewSharedIndexInformerWithOptions(lw, exampleObject, toolscache.SharedIndexInformerOptions{
		ResyncPeriod: defaultEventHandlerResyncPeriod,
		Indexers:     indexers,
	})
}

// NewSharedIndexInformerWithOptions is client-go's
// NewSharedIndexInformerWithOptions plus this project's options (strategy,
// page size, backoff, relist reuse, ...). Like client-go's constructor it
// returns no error, and as client-go's panics on a nil ListerWatcher it
// panics on a nil or typed-nil lw and on invalid options, with a message
// naming the option: options are fixed in code, and an informer built from
// invalid ones could never sync. ValidateOptions checks options without
// panicking; NewCacheWith returns its error.
func NewSharedIndexInformerWithOptions(lw toolscache.ListerWatcher, exampleObject runtime.Object, options toolscache.SharedIndexInformerOptions, opts ...Option) *SharedIndexInformer {
	if lw == nil {
		panic("informer: NewSharedIndexInformer needs a ListerWatcher, got nil")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		panic(fmt.Sprintf("informer: invalid options: %v", err))
	}
	description := options.ObjectDescription
	if description == "" && exampleObject != nil {
		description = fmt.Sprintf("%T", exampleObject)
	}
	gvr := resourceOf(exampleObject, defaultScheme, nil)
	if cfg.resource != nil {
		gvr = *cfg.resource
	}
	s := &SharedIndexInformer{
		objectType:                      exampleObject,
		objectDescription:               description,
		cfg:                             cfg,
		indexer:                         cache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, options.Indexers, cfg.indexerOptions()...),
		processor:                       &processor{clock: cfg.clock},
		metrics:                         newMetricsBridge(cfg.metrics.Informer(gvr), newClientGoMetrics(options.Identifier, options.InformerMetricsProvider), cfg.clock),
		diag:                            &syncDiagnostics{clock: cfg.clock},
		mutationDetector:                cfg.mutationDetector(fmt.Sprintf("%T", exampleObject)),
		list:                            toolscache.ToListerWatcherWithContext(lw).ListWithContext,
		synced:                          make(chan struct{}),
		resyncs:                         newResyncWindow(),
		resyncCheckPeriod:               options.ResyncPeriod,
		defaultEventHandlerResyncPeriod: options.ResyncPeriod,
	}
	s.reflector = newHandlerReflector(callerName(), options.ObjectDescription, exampleObject)
	if sc := cfg.shard; sc != nil && !sc.excludes(exampleObject, cfg.scheme) {
		s.shard = newShardState(sc.member, lw, s.metrics, description)
		lw = s.shard.lw
		// The consistency check compares the store with a list of its range.
		s.list = s.shard.lw.ListWithContext
	}
	// The informer's own options come first: what the user passed through
	// WithWatcherOptions wins over them, or adds to them (observers, error
	// handlers).
	watcherOpts := []listerwatcher.Option{
		listerwatcher.WithExpectedType(exampleObject),
		listerwatcher.WithName(s.reflector.Name()),
		listerwatcher.WithErrorHandler(s.onWatchError),
		listerwatcher.WithObserver(s.metrics),
	}
	if s.shard != nil {
		// A range change relists in every replica at once: paginated LISTs
		// hand the objects over in half the time of a streamed list
		// (pkg/shard's README has the figures).
		watcherOpts = append(watcherOpts, listerwatcher.WithPaginatedRelists(true))
	}
	watcherOpts = append(watcherOpts, cfg.listerwatcherOptions()...)
	if s.watcher, err = listerwatcher.New(lw, watcherOpts...); err != nil {
		panic(fmt.Sprintf("informer: %v", err))
	}
	return s
}

// Run starts the informer and returns after stopCh closes and it has stopped.
func (s *SharedIndexInformer) Run(stopCh <-chan struct{}) {
	s.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext starts the informer and returns after ctx ends and every
// goroutine it started has returned. A second call only logs a warning.
func (s *SharedIndexInformer) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)

	transform, err := s.start()
	if err != nil {
		logger.Info("Warning: " + err.Error())
		return
	}

	s.diag.running()
	defer s.diag.stopped()
	defer s.metrics.stopped()
	var wg sync.WaitGroup
	defer wg.Wait()
	stopAux := make(chan struct{})
	defer close(stopAux)
	auxCtx, cancelAux := context.WithCancel(ctx)
	defer cancelAux()
	wg.Go(func() { s.mutationDetector.Run(stopAux) })
	wg.Go(func() { s.syncWatchdog(auxCtx, logger, s.cfg.syncWarning) })
	if period := s.resyncCheck(); period > 0 {
		wg.Go(func() { s.resyncLoop(logger, period, stopAux) })
	}

	s.processor.start()
	if s.shard != nil {
		defer s.shard.stop()
		s.shard.start(ctx)
		wg.Go(func() { s.shard.follow(auxCtx, s.watcher.Relist) })
	}
	// Deferred, so that it also runs while a panic unwinds (the watcher
	// recovers from one only when utilruntime.ReallyCrash is off).
	defer s.shutDown()
	if err := s.watcher.Run(ctx, s.newStoreWriter(logger, transform)); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Informer's watcher stopped", "type", s.objectDescription)
	}
}

// shutDown ends what RunWithContext started, once the watcher returned:
// it refuses new handlers from here on and stops the processor, whose
// listeners then end.
func (s *SharedIndexInformer) shutDown() {
	// A restart cut short by the stop leaves a half-filled buffer behind.
	s.indexer.AbortReplace()
	s.startedMu.Lock()
	s.stopped = true
	s.startedMu.Unlock()
	s.processor.stop()
}

// start marks the informer started and returns the transform, which cannot
// change from here on.
func (s *SharedIndexInformer) start() (toolscache.TransformFunc, error) {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	if s.started {
		return nil, errors.New("the sharedIndexInformer has started, run more than once is not allowed")
	}
	s.started = true
	return s.transform, nil
}

// commit is the store writer's bookkeeping callback: the store is at rv; if
// listed, a complete list was swapped in and the errors before it are
// overcome.
func (s *SharedIndexInformer) commit(rv string, listed bool) {
	if listed {
		s.resyncs.listed()
		s.diag.listed()
		if s.shard != nil {
			s.shard.listed()
		}
	}
	if rv == "" {
		return
	}
	s.rvMu.Lock()
	s.lastSyncResourceVersion = rv
	s.rvMu.Unlock()
}

// HasStarted reports whether Run has been called.
func (s *SharedIndexInformer) HasStarted() bool {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	return s.started
}

// HasSynced reports whether the store has been filled by a complete list.
// Handlers have their own HasSynced on their registration.
func (s *SharedIndexInformer) HasSynced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// HasSyncedChecker is HasSynced as a DoneChecker for cache.WaitFor.
func (s *SharedIndexInformer) HasSyncedChecker() toolscache.DoneChecker {
	return syncedChecker{s}
}

type syncedChecker struct{ s *SharedIndexInformer }

func (c syncedChecker) Name() string          { return fmt.Sprintf("SharedIndexInformer %T", c.s.objectType) }
func (c syncedChecker) Done() <-chan struct{} { return c.s.synced }

// LastSyncResourceVersion is the resourceVersion of the last list or watch
// event the store has applied.
func (s *SharedIndexInformer) LastSyncResourceVersion() string {
	s.rvMu.RLock()
	defer s.rvMu.RUnlock()
	return s.lastSyncResourceVersion
}

// GetStore returns the informer's store: the same object as GetIndexer, for
// the informer's whole life.
func (s *SharedIndexInformer) GetStore() toolscache.Store { return s.indexer }

// GetIndexer returns the informer's double-buffered indexer.
func (s *SharedIndexInformer) GetIndexer() toolscache.Indexer { return s.indexer }

// AddIndexers adds indexers, before or after Run; a name already in use is an
// error.
func (s *SharedIndexInformer) AddIndexers(indexers toolscache.Indexers) error {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	if s.stopped {
		return errors.New("indexer was not added because it has stopped already")
	}
	return s.indexer.AddIndexers(indexers)
}

// GetController returns a Controller whose Run does nothing (the informer
// runs itself) and whose other methods report the informer's state, as
// client-go's does.
func (s *SharedIndexInformer) GetController() toolscache.Controller {
	return controller{s}
}

type controller struct{ s *SharedIndexInformer }

func (controller) Run(<-chan struct{})                        {}
func (controller) RunWithContext(context.Context)             {}
func (c controller) HasSynced() bool                          { return c.s.HasSynced() }
func (c controller) HasSyncedChecker() toolscache.DoneChecker { return c.s.HasSyncedChecker() }
func (c controller) LastSyncResourceVersion() string {
	if clientgofeatures.FeatureGates().Enabled(clientgofeatures.InformerResourceVersion) {
		return c.s.LastSyncResourceVersion()
	}
	return ""
}

// SetTransform sets the function applied to every object before it is
// stored (nil for none); it returns an error once the informer has started.
// An object the transform fails on (or returns nil for) is left out with a
// log line naming it: see "Transformed objects only" on SharedIndexInformer.
func (s *SharedIndexInformer) SetTransform(handler toolscache.TransformFunc) error {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	if s.started {
		return errors.New("informer has already started")
	}
	s.transform = handler
	return nil
}

// IsStopped reports whether the informer has stopped; a stopped informer
// takes no new handlers and never runs again.
func (s *SharedIndexInformer) IsStopped() bool {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	return s.stopped
}
