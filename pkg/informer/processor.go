package informer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/cache/synctrack"
	"k8s.io/klog/v2"
	"k8s.io/utils/buffer"
	"k8s.io/utils/clock"

	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// notificationKind says which handler calls a notification stands for.
type notificationKind uint8

const (
	notifyAdd notificationKind = iota + 1
	notifyUpdate
	notifyDelete
	// notifyRestart replays a finished restart's diff: OnDelete for vanished
	// keys, then OnAdd/OnUpdate in list order. One entry per handler instead
	// of one per object keeps a relist's notifications O(handlers).
	notifyRestart
	// notifyObjects calls OnAdd (late handler's initial list) or
	// OnUpdate(obj, obj) (resync) for each object of a store snapshot.
	notifyObjects
)

// notification is one entry of a listener's queue.
type notification struct {
	kind            notificationKind
	oldObj, newObj  any
	isInInitialList bool
	// receiveSyncs: whether a restart's unchanged-resourceVersion updates go to
	// this handler (client-go sends those only to handlers due for a resync).
	receiveSyncs bool
	// countsForSync: delivering this entry completes initial-list work the
	// handler's HasSynced waits for.
	countsForSync bool
	diff          *cache.Diff
	objects       []any
}

// calls is the number of handler calls n stands for, at most.
func (n notification) calls() int {
	switch n.kind {
	case notifyRestart:
		return len(n.diff.Deleted) + len(n.diff.Changes)
	case notifyObjects:
		return len(n.objects)
	default:
		return 1
	}
}

// processor fans notifications out to the registered listeners. Listeners
// added before start are started with it; the bool in listeners says whether
// the listener is currently due for resync notifications.
type processor struct {
	clock clock.Clock

	mu        sync.RWMutex
	started   bool
	listeners map[*listener]bool
	wg        sync.WaitGroup
}

func (p *processor) addListener(l *listener) (started bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listeners == nil {
		p.listeners = map[*listener]bool{}
	}
	// New listeners start out due for resyncs, as client-go's do, until the
	// first resync check says otherwise.
	p.listeners[l] = true
	if p.started {
		p.wg.Go(l.run)
	}
	return p.started
}

func (p *processor) removeListener(handle toolscache.ResourceEventHandlerRegistration) error {
	l, ok := handle.(*listener)
	if !ok {
		return fmt.Errorf("invalid event handler registration of type %T", handle)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, exists := p.listeners[l]; !exists {
		return nil
	}
	delete(p.listeners, l)
	if p.started {
		l.stop()
	} else {
		l.stopBeforeStart()
	}
	return nil
}

// start runs every listener registered so far; later ones start on add.
func (p *processor) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.listeners {
		p.wg.Go(l.watchSynced)
		p.wg.Go(l.run)
	}
	p.started = true
}

// startWatchSynced lets a listener added after start learn that the informer
// has synced; its initial list must already be queued.
func (p *processor) startWatchSynced(l *listener) {
	p.wg.Go(l.watchSynced)
}

// stop ends every listener, dropping undelivered notifications as client-go
// does, and waits for the handler calls in flight to return.
func (p *processor) stop() {
	p.mu.Lock()
	for l := range p.listeners {
		l.stop()
	}
	p.listeners = nil
	p.started = false
	p.mu.Unlock()
	p.wg.Wait()
}

// distribute queues n for every listener; sync notifications (updates that do
// not change the resourceVersion) only for listeners due for a resync.
func (p *processor) distribute(n notification, sync bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l, syncing := range p.listeners {
		if sync && !syncing {
			continue
		}
		l.add(n)
	}
}

// distributeRestart queues a finished restart for every listener.
func (p *processor) distributeRestart(diff *cache.Diff, isInInitialList bool) {
	countsForSync := isInInitialList && hasAdds(diff)
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l, syncing := range p.listeners {
		l.add(notification{
			kind:            notifyRestart,
			diff:            diff,
			isInInitialList: isInInitialList,
			receiveSyncs:    syncing,
			countsForSync:   countsForSync,
		})
	}
}

// shouldResync recomputes which listeners are due for a resync and reports
// whether any is.
func (p *processor) shouldResync() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	any := false
	for l := range p.listeners {
		due := l.dueForResync(now)
		p.listeners[l] = due
		if due {
			any = true
			l.scheduleNextResync(now)
		}
	}
	return any
}

func (p *processor) resyncCheckPeriodChanged(logger klog.Logger, checkPeriod time.Duration) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l := range p.listeners {
		l.setResyncPeriod(effectiveResyncPeriod(logger, l.requestedResyncPeriod, checkPeriod))
	}
}

// pending is the number of handler calls queued for all listeners.
func (p *processor) pending() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	n := int64(0)
	for l := range p.listeners {
		n += l.pendingCalls.Load()
	}
	return int(n)
}

// listener delivers notifications to one handler, in order, from its own
// goroutine, so a slow handler never holds up the pipeline or other handlers.
// Its queue is unbounded, like client-go's.
type listener struct {
	handler     toolscache.ResourceEventHandler
	handlerName string
	logger      klog.Logger
	clock       clock.Clock

	syncTracker       *synctrack.SingleFileTracker
	upstreamHasSynced toolscache.DoneChecker

	metrics *metrics.HandlerRecorder
	// pendingCalls counts the handler calls queued and not yet made.
	pendingCalls atomic.Int64

	mu      sync.Mutex
	queue   buffer.Ring[notification]
	wake    chan struct{} // capacity 1: "the queue is not empty"
	stopped bool
	stopCh  chan struct{}
	doneCh  chan struct{} // closed when run returns

	requestedResyncPeriod time.Duration
	resyncMu              sync.Mutex
	resyncPeriod          time.Duration
	nextResync            time.Time
}

var _ toolscache.ResourceEventHandlerRegistration = (*listener)(nil)

func newListener(logger klog.Logger, c clock.Clock, handler toolscache.ResourceEventHandler, requestedResyncPeriod, resyncPeriod time.Duration, upstream toolscache.DoneChecker, rec *metrics.Recorder) *listener {
	name := handlerName(handler)
	l := &listener{
		metrics:               rec.Handler(name),
		handler:               handler,
		handlerName:           name,
		logger:                logger,
		clock:                 c,
		syncTracker:           synctrack.NewSingleFileTracker(fmt.Sprintf("%s + event handler %s", upstream.Name(), name)),
		upstreamHasSynced:     upstream,
		queue:                 *buffer.NewRing[notification](buffer.RingOptions{InitialSize: 16, NormalSize: 16}),
		wake:                  make(chan struct{}, 1),
		stopCh:                make(chan struct{}),
		doneCh:                make(chan struct{}),
		requestedResyncPeriod: requestedResyncPeriod,
		resyncPeriod:          resyncPeriod,
	}
	l.scheduleNextResync(c.Now())
	return l
}

// HasSynced reports whether the informer has synced and this handler has
// been given every object of the initial list.
func (l *listener) HasSynced() bool { return l.syncTracker.HasSynced() }

// HasSyncedChecker is HasSynced as a channel that closes, for cache.WaitFor.
func (l *listener) HasSyncedChecker() toolscache.DoneChecker { return l.syncTracker }

// ShutdownChan closes once the handler has been removed (or the informer has
// stopped) and its last call has returned; cache.ShutDownEventHandler waits
// on it.
func (l *listener) ShutdownChan() <-chan struct{} { return l.doneCh }

func (l *listener) add(n notification) {
	if n.countsForSync || (n.kind == notifyAdd && n.isInInitialList) {
		l.syncTracker.Start()
	}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.queue.WriteOne(n)
	calls := n.calls()
	l.pendingCalls.Add(int64(calls))
	l.metrics.Queued(calls)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *listener) next() (notification, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queue.ReadOne()
}

func (l *listener) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.stopped = true
	close(l.stopCh)
	// Drop what was not delivered so the objects it references can go.
	l.queue = buffer.Ring[notification]{}
}

// stopBeforeStart is stop for a listener whose goroutines never ran.
func (l *listener) stopBeforeStart() {
	l.stop()
	l.finish()
}

// finish marks the listener done once its last call has returned.
func (l *listener) finish() {
	l.pendingCalls.Store(0)
	l.metrics.Close()
	close(l.doneCh)
}

func (l *listener) run() {
	defer l.finish()
	d := delivery{l: l}
	for {
		n, ok := l.next()
		if !ok {
			select {
			case <-l.stopCh:
				return
			case <-l.wake:
				continue
			}
		}
		select {
		case <-l.stopCh:
			return
		default:
		}
		d.deliver(n)
	}
}

// watchSynced tells the tracker when the informer has synced.
func (l *listener) watchSynced() {
	select {
	case <-l.upstreamHasSynced.Done():
		l.syncTracker.UpstreamHasSynced()
	case <-l.stopCh:
	}
}

func (l *listener) dueForResync(now time.Time) bool {
	l.resyncMu.Lock()
	defer l.resyncMu.Unlock()
	return l.resyncPeriod != 0 && !now.Before(l.nextResync)
}

func (l *listener) scheduleNextResync(now time.Time) {
	l.resyncMu.Lock()
	defer l.resyncMu.Unlock()
	l.nextResync = now.Add(l.resyncPeriod)
}

func (l *listener) setResyncPeriod(d time.Duration) {
	l.resyncMu.Lock()
	defer l.resyncMu.Unlock()
	l.resyncPeriod = d
}

// delivery calls one listener's handler. After a handler panic that the
// process survives (utilruntime.ReallyCrash turned off), the next call waits a
// second, as client-go's listeners do, so a handler that always panics does
// not spin.
type delivery struct {
	l               *listener
	sleepBeforeNext bool
}

func (d *delivery) deliver(n notification) {
	h := d.l.handler
	switch n.kind {
	case notifyAdd:
		d.call(func() { h.OnAdd(n.newObj, n.isInInitialList) })
		if n.isInInitialList {
			d.l.syncTracker.Finished()
		}
	case notifyUpdate:
		d.call(func() { h.OnUpdate(n.oldObj, n.newObj) })
	case notifyDelete:
		d.call(func() { h.OnDelete(n.oldObj) })
	case notifyRestart:
		d.deliverRestart(n)
	case notifyObjects:
		for _, obj := range n.objects {
			if d.stopped() {
				return
			}
			if n.isInInitialList {
				d.call(func() { h.OnAdd(obj, true) })
			} else {
				d.call(func() { h.OnUpdate(obj, obj) })
			}
		}
		if n.countsForSync {
			d.l.syncTracker.Finished()
		}
	}
}

func (d *delivery) deliverRestart(n notification) {
	h := d.l.handler
	for _, tomb := range n.diff.Deleted {
		if d.stopped() {
			return
		}
		d.call(func() { h.OnDelete(tomb) })
	}
	for _, c := range n.diff.Changes {
		if d.stopped() {
			return
		}
		switch {
		case c.Old == nil:
			d.call(func() { h.OnAdd(c.New, n.isInInitialList) })
		case n.receiveSyncs || !sameResourceVersion(c.Old, c.New):
			d.call(func() { h.OnUpdate(c.Old, c.New) })
		default:
			d.skip() // client-go sends unchanged updates only to handlers due for resync
		}
	}
	if n.countsForSync {
		d.l.syncTracker.Finished()
	}
}

func (d *delivery) stopped() bool {
	select {
	case <-d.l.stopCh:
		return true
	default:
		return false
	}
}

func (d *delivery) call(f func()) {
	if d.sleepBeforeNext {
		select {
		case <-d.l.clock.After(time.Second):
		case <-d.l.stopCh:
			return
		}
	}
	d.sleepBeforeNext = true
	start := time.Now()
	defer func() {
		d.l.pendingCalls.Add(-1)
		d.l.metrics.Delivered(time.Since(start))
	}()
	defer utilruntime.HandleCrashWithLogger(d.l.logger, func(context.Context, any) { d.l.metrics.Panicked() })
	f()
	d.sleepBeforeNext = false
}

// skip accounts for a queued call that is not made.
func (d *delivery) skip() {
	d.l.pendingCalls.Add(-1)
	d.l.metrics.Queued(-1)
}

// hasAdds reports whether a restart added keys: in the first list, those are
// the notifications a handler's HasSynced waits for.
func hasAdds(diff *cache.Diff) bool {
	for _, c := range diff.Changes {
		if c.Old == nil {
			return true
		}
	}
	return false
}

// sameResourceVersion reports whether an update leaves the resourceVersion as
// it was: a resync, or a relist of an unchanged object.
func sameResourceVersion(oldObj, newObj any) bool {
	o, err := meta.Accessor(oldObj)
	if err != nil {
		return false
	}
	n, err := meta.Accessor(newObj)
	if err != nil {
		return false
	}
	return o.GetResourceVersion() == n.GetResourceVersion()
}
