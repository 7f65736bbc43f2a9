package informer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgofeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// minimumResyncPeriod is the shortest per-handler resync period, as in client-go.
const minimumResyncPeriod = time.Second

var _ toolscache.SharedIndexInformer = (*SharedIndexInformer)(nil)

// SharedIndexInformer implements client-go's cache.SharedIndexInformer with
// the paged-restart pipeline and the double-buffered indexer. Construct it with
// NewSharedIndexInformer or NewSharedIndexInformerWithOptions.
type SharedIndexInformer struct {
	lw                toolscache.ListerWatcher
	objectType        runtime.Object
	objectDescription string
	cfg               config
	indexer           *cache.Indexer
	processor         *processor
	mutationDetector  toolscache.MutationDetector
	// reflector is built but never run: client-go's WatchErrorHandlers take a
	// *Reflector, and existing handlers read its name and type.
	reflector *toolscache.Reflector

	// synced closes when the first list has been stored and its
	// notifications queued.
	synced chan struct{}

	startedMu                       sync.Mutex
	started, stopped                bool
	transform                       toolscache.TransformFunc
	watchErrorHandler               toolscache.WatchErrorHandlerWithContext
	resyncCheckPeriod               time.Duration
	defaultEventHandlerResyncPeriod time.Duration

	// blockDeltas serialises each store change with the queueing of its
	// notifications, so a handler joining late sees the store and then every
	// later change exactly once.
	blockDeltas sync.Mutex

	rvMu                    sync.RWMutex
	lastSyncResourceVersion string

	metrics       *metrics.Recorder
	clientMetrics *clientGoMetrics
	diagMu        sync.Mutex
	diag          SyncStatus
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
// page size, backoff, relist reuse). It panics if lw is nil.
func NewSharedIndexInformerWithOptions(lw toolscache.ListerWatcher, exampleObject runtime.Object, options toolscache.SharedIndexInformerOptions, opts ...Option) *SharedIndexInformer {
	if lw == nil {
		panic("informer: NewSharedIndexInformer needs a ListerWatcher, got nil")
	}
	cfg := newConfig(opts)
	description := options.ObjectDescription
	if description == "" && exampleObject != nil {
		description = fmt.Sprintf("%T", exampleObject)
	}
	s := &SharedIndexInformer{
		lw:                              lw,
		objectType:                      exampleObject,
		objectDescription:               description,
		cfg:                             cfg,
		indexer:                         cache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, options.Indexers, cache.WithRelistReuse(cfg.relistReuse)),
		processor:                       &processor{clock: cfg.clock},
		mutationDetector:                toolscache.NewCacheMutationDetector(fmt.Sprintf("%T", exampleObject)),
		synced:                          make(chan struct{}),
		resyncCheckPeriod:               options.ResyncPeriod,
		defaultEventHandlerResyncPeriod: options.ResyncPeriod,
	}
	gvr := resourceOf(exampleObject, defaultScheme)
	if cfg.resource != nil {
		gvr = *cfg.resource
	}
	s.metrics = cfg.metrics.Informer(gvr)
	s.clientMetrics = newClientGoMetrics(options.Identifier, options.InformerMetricsProvider)
	s.reflector = toolscache.NewReflectorWithOptions(lw, exampleObject, discardStore{}, toolscache.ReflectorOptions{
		Name:            callerName(),
		TypeDescription: options.ObjectDescription,
	})
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

	w, err := s.start()
	if err != nil {
		logger.Info("Warning: " + err.Error())
		return
	}

	s.diagStart(time.Now())
	defer s.diagStop()
	defer s.metrics.Close()
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
	p := &pipeline{s: s, logger: logger}
	if err := w.Run(ctx, p); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Informer pipeline stopped", "type", s.objectDescription)
	}
	// A restart cut short by the stop leaves a half-filled buffer behind.
	s.indexer.AbortReplace()

	s.startedMu.Lock()
	s.stopped = true // no new handlers from here on
	s.startedMu.Unlock()
	s.processor.stop()
}

// start marks the informer started and builds its pipeline.
func (s *SharedIndexInformer) start() (*listerwatcher.Watcher, error) {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	if s.started {
		return nil, errors.New("the sharedIndexInformer has started, run more than once is not allowed")
	}
	opts := append([]listerwatcher.Option{
		listerwatcher.WithExpectedType(s.objectType),
		listerwatcher.WithName(s.reflector.Name()),
		listerwatcher.WithErrorHandler(s.onWatchError),
		listerwatcher.WithObserver(pipelineObserver{rec: s.metrics}),
	}, s.cfg.watcherOpts...)
	w, err := listerwatcher.New(s.lw, opts...)
	if err != nil {
		return nil, err
	}
	s.started = true
	return w, nil
}

func (s *SharedIndexInformer) resyncCheck() time.Duration {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	return s.resyncCheckPeriod
}

// onWatchError hands failed lists and failed watch opens to the watch error
// handler (client-go's default one unless the user set another), as
// client-go's reflector does, and logs the rest the way it does.
func (s *SharedIndexInformer) onWatchError(ctx context.Context, err error) {
	op := listerwatcher.OpStream
	var failure *listerwatcher.Failure
	if errors.As(err, &failure) {
		op, err = failure.Op, failure.Err
	}
	s.diagError(err)
	logger := klog.FromContext(ctx)
	switch op {
	case listerwatcher.OpList:
		err = fmt.Errorf("failed to list %v: %w", s.reflector.TypeDescription(), err)
	case listerwatcher.OpWatch:
	case listerwatcher.OpFallback:
		return // the pipeline logs its fallbacks
	default:
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			logger.V(4).Info("Watch closed", "reflector", s.reflector.Name(), "type", s.objectDescription, "err", err)
		} else {
			logger.Info("Warning: watch ended with error", "reflector", s.reflector.Name(), "type", s.objectDescription, "err", err)
		}
		return
	}
	s.startedMu.Lock()
	handler := s.watchErrorHandler
	s.startedMu.Unlock()
	if handler == nil {
		handler = toolscache.DefaultWatchErrorHandler
	}
	handler(ctx, s.reflector, err)
}

// resyncLoop checks every period whether handlers are due for a resync and
// sends those that are OnUpdate(obj, obj) for every stored object. Like
// client-go's, it only resyncs once the informer has synced and while no
// relist is in progress.
func (s *SharedIndexInformer) resyncLoop(logger klog.Logger, period time.Duration, stop <-chan struct{}) {
	ticker := s.cfg.clock.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C():
		}
		if !s.HasSynced() || s.indexer.Replacing() {
			continue
		}
		if !s.processor.shouldResync() {
			continue
		}
		logger.V(4).Info("Forcing resync", "type", s.objectDescription)
		s.blockDeltas.Lock()
		objs := s.indexer.List()
		s.processor.distribute(notification{kind: notifyObjects, objects: objs}, true)
		s.blockDeltas.Unlock()
	}
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

func (s *SharedIndexInformer) setLastSyncResourceVersion(rv string) {
	if rv == "" {
		return
	}
	s.rvMu.Lock()
	s.lastSyncResourceVersion = rv
	s.rvMu.Unlock()
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

// SetWatchErrorHandler sets the handler called when a list or a watch fails;
// it returns an error once the informer has started.
func (s *SharedIndexInformer) SetWatchErrorHandler(handler toolscache.WatchErrorHandler) error {
	return s.SetWatchErrorHandlerWithContext(func(_ context.Context, r *toolscache.Reflector, err error) {
		handler(r, err)
	})
}

// SetWatchErrorHandlerWithContext is SetWatchErrorHandler with the context
// (and so the logger) of the informer's Run.
func (s *SharedIndexInformer) SetWatchErrorHandlerWithContext(handler toolscache.WatchErrorHandlerWithContext) error {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	if s.started {
		return errors.New("informer has already started")
	}
	s.watchErrorHandler = handler
	return nil
}

// SetTransform sets the function applied to every object before it is
// stored (nil for none); it returns an error once the informer has started.
// An object the transform fails on is dropped with a logged error.
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

// AddEventHandler adds a handler with the informer's default resync period.
func (s *SharedIndexInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds a handler with its own resync period.
func (s *SharedIndexInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resyncPeriod time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions adds a handler. Added after Run, it first gets
// OnAdd(obj, true) for every stored object, and its registration's HasSynced
// turns true once those are delivered.
func (s *SharedIndexInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	if s.stopped {
		return nil, fmt.Errorf("handler %v was not added to shared informer because it has stopped already", handler)
	}

	logger := ptr.Deref(options.Logger, klog.Background())
	resyncPeriod := ptr.Deref(options.ResyncPeriod, s.defaultEventHandlerResyncPeriod)
	if resyncPeriod > 0 {
		if resyncPeriod < minimumResyncPeriod {
			logger.Info("Warning: resync period is too small. Changing it to the minimum allowed value", "resyncPeriod", resyncPeriod, "minimumResyncPeriod", minimumResyncPeriod)
			resyncPeriod = minimumResyncPeriod
		}
		if resyncPeriod < s.resyncCheckPeriod {
			if s.started {
				logger.Info("Warning: resync period is smaller than resync check period and the informer has already started. Changing it to the resync check period", "resyncPeriod", resyncPeriod, "resyncCheckPeriod", s.resyncCheckPeriod)
				resyncPeriod = s.resyncCheckPeriod
			} else {
				s.resyncCheckPeriod = resyncPeriod
				s.processor.resyncCheckPeriodChanged(logger, resyncPeriod)
			}
		}
	}

	l := newListener(logger, s.cfg.clock, handler, resyncPeriod, effectiveResyncPeriod(logger, resyncPeriod, s.resyncCheckPeriod), s.HasSyncedChecker(), s.metrics)
	if !s.started {
		s.processor.addListener(l)
		return l, nil
	}

	// Joining a running informer: no store change may slip between the
	// snapshot below and the listener's first live notification.
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	started := s.processor.addListener(l)
	if objs := s.indexer.List(); len(objs) > 0 {
		l.add(notification{kind: notifyObjects, objects: objs, isInInitialList: true, countsForSync: true})
	}
	if started {
		s.processor.startWatchSynced(l)
	}
	return l, nil
}

// RemoveEventHandler stops delivering to a handler; notifications not yet
// delivered are dropped. It is idempotent. Use cache.ShutDownEventHandler to
// also wait for the handler's last call to return.
func (s *SharedIndexInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	return s.processor.removeListener(handle)
}

// effectiveResyncPeriod is the period a handler gets given the informer's
// resync check period: none if the informer does not resync, never shorter
// than the check period.
func effectiveResyncPeriod(logger klog.Logger, desired, check time.Duration) time.Duration {
	switch {
	case desired == 0:
		return 0
	case check == 0:
		logger.Info("Warning: the specified resyncPeriod is invalid because this shared informer doesn't support resyncing", "desired", desired)
		return 0
	case desired < check:
		logger.Info("Warning: the specified resyncPeriod is being increased to the minimum resyncCheckPeriod", "desired", desired, "resyncCheckPeriod", check)
		return check
	default:
		return desired
	}
}

// callerName names an informer after the code that created it, as client-go
// names reflectors: "file.go:line" of the first caller outside this package
// and the informer factories that wrap it.
func callerName() string {
	pcs := make([]uintptr, 16)
	frames := goruntime.CallersFrames(pcs[:goruntime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "github.com/leaninformer/leaninformer/pkg/informer.") &&
			!strings.HasPrefix(f.Function, "k8s.io/client-go/tools/cache.") &&
			!strings.HasPrefix(f.Function, "sigs.k8s.io/controller-runtime/pkg/cache") {
			dir, file := filepath.Split(f.File)
			return fmt.Sprintf("%s/%s:%d", filepath.Base(dir), file, f.Line)
		}
		if !more {
			return "leaninformer"
		}
	}
}

// discardStore is the store of the never-run reflector.
type discardStore struct{}

func (discardStore) Add(any) error               { return nil }
func (discardStore) Update(any) error            { return nil }
func (discardStore) Delete(any) error            { return nil }
func (discardStore) Replace([]any, string) error { return nil }
func (discardStore) Resync() error               { return nil }
