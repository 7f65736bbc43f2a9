package informer

import (
	"context"
	"fmt"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/cache/synctrack"
	"k8s.io/klog/v2"
	"k8s.io/utils/buffer"
	"k8s.io/utils/clock"

	"github.com/leaninformer/leaninformer/pkg/cache"
)

// listener delivers notifications to one handler, in order, from its own
// goroutine, so a slow handler never holds up the store writer or other
// handlers. Its queue is unbounded, like client-go's, unless the handler
// coalesces (see Coalesce): then it holds at most one pending change per
// object. It is the handler's registration.
type listener struct {
	handler     toolscache.ResourceEventHandler
	handlerName string
	logger      klog.Logger
	clock       clock.Clock
	metrics     *handlerMetrics
	// decode turns the store's values in replace and snapshot
	// notifications into objects (the store's Decode).
	decode decoder

	syncTracker       *synctrack.SingleFileTracker
	upstreamHasSynced toolscache.DoneChecker

	// mu guards queue and stopped, and makes closing stopCh one step with
	// setting stopped. Lock order: taken last (after processor.mu).
	mu      sync.Mutex
	queue   buffer.Ring[notification]
	keyed   *keyedQueue // a coalescing handler's queue, instead of queue
	stopped bool
	wake    chan struct{} // capacity 1: "the queue is not empty"
	stopCh  chan struct{}
	doneCh  chan struct{} // closed when run returns
}

var _ toolscache.ResourceEventHandlerRegistration = (*listener)(nil)

func newListener(logger klog.Logger, c clock.Clock, handler toolscache.ResourceEventHandler, coalesce bool, upstream toolscache.DoneChecker, bridge *metricsBridge, decode decoder) *listener {
	name := handlerName(handler)
	l := &listener{
		decode:            decode,
		handler:           handler,
		handlerName:       name,
		logger:            logger,
		clock:             c,
		metrics:           bridge.handler(name),
		syncTracker:       synctrack.NewSingleFileTracker(fmt.Sprintf("%s + event handler %s", upstream.Name(), name)),
		upstreamHasSynced: upstream,
		queue:             *buffer.NewRing[notification](buffer.RingOptions{InitialSize: 16, NormalSize: 16}),
		wake:              make(chan struct{}, 1),
		stopCh:            make(chan struct{}),
		doneCh:            make(chan struct{}),
	}
	if coalesce {
		l.keyed = newKeyedQueue()
	}
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
	if n.countsForSync {
		l.syncTracker.Start()
	}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	if l.keyed != nil {
		l.foldLocked(n)
	} else {
		l.queue.WriteOne(n)
		l.metrics.enqueued(n.calls())
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *listener) next() (notification, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keyed != nil {
		c, ok := l.keyed.pop()
		return notification{kind: notifyChange, change: c}, ok
	}
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
	if l.keyed != nil {
		l.keyed = newKeyedQueue()
	}
}

// stopBeforeStart is stop for a listener whose goroutines never ran.
func (l *listener) stopBeforeStart() {
	l.stop()
	l.finish()
}

// finish marks the listener done once its last call has returned.
func (l *listener) finish() {
	l.metrics.closed()
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

// delivery calls one listener's handler. After a handler panic that the
// process survives (utilruntime.ReallyCrash turned off), the next call waits a
// second, as client-go's listeners do, so a handler that always panics does
// not spin.
type delivery struct {
	l               *listener
	sleepBeforeNext bool
}

// ignored says which calls a handler is known to do nothing for: those of a
// ResourceEventHandlerFuncs (or DetailedFuncs) without that function. They
// are not made, so that an encoded store's objects are not decoded for them:
// a delete-only handler (pkg/shard's ObjectKey adds one) would otherwise
// decode the whole collection at every relist. Read at each delivery, as a
// pointer's functions are called.
type ignored struct{ adds, updates, deletes bool }

func ignoredCalls(h toolscache.ResourceEventHandler) ignored {
	switch f := h.(type) {
	case toolscache.ResourceEventHandlerFuncs:
		return ignored{f.AddFunc == nil, f.UpdateFunc == nil, f.DeleteFunc == nil}
	case *toolscache.ResourceEventHandlerFuncs:
		if f != nil {
			return ignored{f.AddFunc == nil, f.UpdateFunc == nil, f.DeleteFunc == nil}
		}
	case toolscache.ResourceEventHandlerDetailedFuncs:
		return ignored{f.AddFunc == nil, f.UpdateFunc == nil, f.DeleteFunc == nil}
	case *toolscache.ResourceEventHandlerDetailedFuncs:
		if f != nil {
			return ignored{f.AddFunc == nil, f.UpdateFunc == nil, f.DeleteFunc == nil}
		}
	}
	return ignored{}
}

func (d *delivery) deliver(n notification) {
	h := d.l.handler
	ign := ignoredCalls(h)
	switch n.kind {
	case notifyAdd:
		d.callUnless(ign.adds, func() { h.OnAdd(n.newObj, false) })
	case notifyUpdate:
		d.callUnless(ign.updates, func() { h.OnUpdate(n.oldObj, n.newObj) })
	case notifyDelete:
		d.callUnless(ign.deletes, func() { h.OnDelete(n.oldObj) })
	case notifyReplace:
		d.deliverReplace(n, ign)
	case notifyObjects:
		skip := ign.updates
		if n.isInInitialList {
			skip = ign.adds
		}
		for i, stored := range n.objects {
			if d.stopped() {
				return
			}
			if skip {
				d.l.metrics.skipped()
				continue
			}
			what := "a stored object"
			switch {
			case i >= len(n.keys):
			case n.isInInitialList:
				what = "OnAdd of " + n.keys[i]
			default:
				what = "OnUpdate of " + n.keys[i]
			}
			obj, ok := d.l.decode.decodeForHandler(stored, what)
			switch {
			case !ok:
				d.l.metrics.skipped()
			case n.isInInitialList:
				d.call(func() { h.OnAdd(obj, true) })
			default:
				d.call(func() { h.OnUpdate(obj, obj) })
			}
		}
		if n.countsForSync {
			d.l.syncTracker.Finished()
		}
	case notifyChange:
		d.deliverChange(n.change)
	}
}

func (d *delivery) deliverReplace(n notification, ign ignored) {
	h := d.l.handler
	// The Diff holds the store's values: an encoded store's are decoded here,
	// for this handler, as it is called.
	for _, tomb := range n.diff.Deleted {
		if d.stopped() {
			return
		}
		if ign.deletes {
			d.l.metrics.skipped()
		} else if tomb, ok := d.l.decode.decodeTombstone(tomb); ok {
			d.call(func() { h.OnDelete(tomb) })
		} else {
			d.l.metrics.skipped()
		}
	}
	for _, c := range n.diff.Changes {
		if d.stopped() {
			return
		}
		switch {
		case c.Old == nil && ign.adds, c.Old != nil && ign.updates:
			d.l.metrics.skipped()
		case c.Old == nil:
			if obj, ok := d.l.decode.decodeForHandler(c.New, "OnAdd of "+c.Key); ok {
				d.call(func() { h.OnAdd(obj, n.isInInitialList) })
			} else {
				d.l.metrics.skipped()
			}
		case n.receiveSyncs || !sameResourceVersion(c.Old, c.New):
			if oldObj, newObj, ok := d.decodePair(c); ok {
				d.call(func() { h.OnUpdate(oldObj, newObj) })
			} else {
				d.l.metrics.skipped()
			}
		default:
			d.l.metrics.skipped() // client-go sends unchanged updates only to handlers due for resync
		}
	}
	if n.countsForSync {
		d.l.syncTracker.Finished()
	}
}

// decodePair decodes an update of a replace; an object kept by relist
// reuse (Old == New) is decoded once and handed as both, as a plain store
// hands the same object twice.
func (d *delivery) decodePair(c cache.Change) (oldObj, newObj any, ok bool) {
	if newObj, ok = d.l.decode.decodeForHandler(c.New, "OnUpdate of "+c.Key); !ok {
		return nil, nil, false
	}
	if cache.IsEncoded(c.New) && c.Old == c.New {
		return newObj, newObj, true
	}
	if oldObj, ok = d.l.decode.decodeForHandler(c.Old, "OnUpdate of "+c.Key); !ok {
		return nil, nil, false
	}
	return oldObj, newObj, true
}

func (d *delivery) stopped() bool {
	select {
	case <-d.l.stopCh:
		return true
	default:
		return false
	}
}

// callUnless makes the call f unless the handler ignores it.
func (d *delivery) callUnless(ignore bool, f func()) {
	if ignore {
		d.l.metrics.skipped()
		return
	}
	d.call(f)
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
	start := d.l.clock.Now()
	defer func() { d.l.metrics.delivered(d.l.clock.Since(start)) }()
	defer utilruntime.HandleCrashWithLogger(d.l.logger, func(context.Context, any) { d.l.metrics.panicked() })
	f()
	d.sleepBeforeNext = false
}
