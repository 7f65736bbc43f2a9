package informer

import (
	"fmt"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/leaninformer/leaninformer/pkg/cache"
)

// notificationKind says which handler calls a notification stands for.
type notificationKind uint8

const (
	notifyAdd notificationKind = iota + 1
	notifyUpdate
	notifyDelete
	// notifyReplace replays a finished replace's diff: OnDelete for vanished
	// keys, then OnAdd/OnUpdate in list order. One entry per handler instead
	// of one per object keeps a relist's notifications O(handlers).
	notifyReplace
	// notifyObjects calls OnAdd (late handler's initial list) or
	// OnUpdate(obj, obj) (resync) for each object of a store snapshot.
	notifyObjects
	// notifyChange is a coalescing listener's pending change of one object.
	notifyChange
)

// notification is one entry of a listener's queue.
type notification struct {
	kind           notificationKind
	oldObj, newObj any
	// isInInitialList: the objects of a notifyReplace or notifyObjects
	// belong to the handler's initial list (OnAdd's isInInitialList).
	isInInitialList bool
	// receiveSyncs: whether a replace's unchanged-resourceVersion updates go
	// to this handler (client-go sends those only to handlers due for a
	// resync).
	receiveSyncs bool
	// countsForSync: delivering this entry completes initial-list work the
	// handler's HasSynced waits for.
	countsForSync bool
	diff          *cache.Diff
	// objects are a notifyObjects' stored values, keys their store keys.
	objects []any
	keys    []string
	change  *pendingChange
}

// calls is the number of handler calls n stands for, at most.
func (n notification) calls() int {
	switch n.kind {
	case notifyReplace:
		return len(n.diff.Deleted) + len(n.diff.Changes)
	case notifyObjects:
		return len(n.objects)
	default:
		return 1
	}
}

// processor fans notifications out to the registered listeners. Listeners
// added before start are started with it.
type processor struct {
	clock clock.Clock

	// mu guards started and listeners (the map and the schedules in it).
	// Lock order: the informer's changeMu, then mu, then a listener's mu.
	mu        sync.RWMutex
	started   bool
	listeners map[*listener]*resyncSchedule
	wg        sync.WaitGroup // the listeners' goroutines
}

// resyncSchedule is when one listener resyncs.
type resyncSchedule struct {
	// requested is the period the handler asked for, after the minimum;
	// period is what it gets given the informer's resync check period (0:
	// never).
	requested, period time.Duration
	next              time.Time
	// due: the listener was due at the last resync check, so until the next
	// one it also gets the updates that keep the resourceVersion (a resync,
	// or an unchanged object in a relist), as client-go's "syncing"
	// listeners do.
	due bool
}

func (p *processor) addListener(l *listener, requested, period time.Duration) (started bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listeners == nil {
		p.listeners = map[*listener]*resyncSchedule{}
	}
	// New listeners start out due for resyncs, as client-go's do, until the
	// first resync check says otherwise.
	p.listeners[l] = &resyncSchedule{requested: requested, period: period, next: p.clock.Now().Add(period), due: true}
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
	for l, sched := range p.listeners {
		if sync && !sched.due {
			continue
		}
		l.add(n)
	}
}

// distributeReplace queues a finished replace for every listener.
func (p *processor) distributeReplace(diff *cache.Diff, isInInitialList bool) {
	countsForSync := isInInitialList && hasAdds(diff)
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l, sched := range p.listeners {
		l.add(notification{
			kind:            notifyReplace,
			diff:            diff,
			isInInitialList: isInInitialList,
			receiveSyncs:    sched.due,
			countsForSync:   countsForSync,
		})
	}
}

// shouldResync recomputes which listeners are due for a resync, schedules
// their next one, and reports whether any is due.
func (p *processor) shouldResync() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	anyDue := false
	for _, sched := range p.listeners {
		sched.due = sched.period != 0 && !now.Before(sched.next)
		if sched.due {
			anyDue = true
			sched.next = now.Add(sched.period)
		}
	}
	return anyDue
}

// resyncCheckPeriodChanged gives every listener the period it gets under the
// informer's new resync check period.
func (p *processor) resyncCheckPeriodChanged(logger klog.Logger, checkPeriod time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, sched := range p.listeners {
		sched.period = effectiveResyncPeriod(logger, sched.requested, checkPeriod)
	}
}

// hasAdds reports whether a replace added keys: in the first list, those are
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
// it was: a resync, or a relist of an unchanged object. Either may be an
// encoded entry of the store, read without decoding.
func sameResourceVersion(oldObj, newObj any) bool {
	o, ok := cache.ResourceVersionOf(oldObj)
	if !ok {
		return false
	}
	n, ok := cache.ResourceVersionOf(newObj)
	return ok && o == n
}
