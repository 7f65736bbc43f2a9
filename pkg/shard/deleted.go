package shard

import (
	"container/list"
	"context"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// DeletedKeyTTL is how long ObjectKey keeps, at most, the key of an
	// object its cache saw deleted, for the requests of that deletion. The
	// record of one is kept only twice the lease duration once a Reconciler
	// has reconciled its request without a requeue or an error (for the
	// other requests of its name: another controller's whose KeyFunc calls
	// the same ObjectKey, a child's deletion mapped to it), and as long
	// once one has dropped it as another replica's (unless
	// Handovers replays it meanwhile: it is then pending again); this bounds
	// the rest (requests a predicate filtered out, or requeued with a
	// growing backoff).
	DeletedKeyTTL = 10 * time.Minute
	// MaxDeletedKeys is how many keys of deleted objects one ObjectKey
	// keeps at most (a few hundred bytes each) whose requests are not
	// settled: past it the oldest goes, and the requests of that deletion
	// are dropped by every replica. Those dropped as another replica's, and
	// those reconciled here, are bounded apart, each by the same number,
	// and their oldest go silently.
	MaxDeletedKeys = 16384
	// RecordWait is how long a Reconciler retries (every RetryAfter) a
	// request whose object ObjectKey neither finds nor saw deleted before
	// it drops it as unknown: the controller's handler may have run before
	// the handler that records the deletion (each has its own goroutine).
	RecordWait = time.Second
)

// deletedKeys is ObjectKey's record of the key values of objects its cache
// saw deleted, by namespace and name, bounded in age and number: the
// request of a deletion finds nothing to read, and this is where it is
// placed from. A record is pending until a Reconciler settles its request:
// reconciled here, it is kept a while longer (for the requests of other
// controllers whose KeyFuncs call the same ObjectKey, and later requests
// for the name), never replayed; dropped as another replica's, it is
// released, and kept for a while in case this replica takes the object's
// hash over (Handovers replays it: the other replica may not have served
// the hash when the request came, or may have died before it reconciled
// it).
type deletedKeys struct {
	clock       clock.PassiveClock
	ttl         time.Duration // of a pending record
	releasedTTL time.Duration // of a released or reconciled record, from then
	max         int           // records of each state
	onFull      func()        // called (without mu) the first time the bound drops a pending record

	mu       sync.Mutex
	byName   map[types.NamespacedName]*list.Element // of *deletedKey, in pending, released or reconciled
	pending  list.List                              // oldest record first
	released list.List                              // oldest release first
	// reconciled holds the records whose request a Reconciler reconciled
	// here, oldest first, for releasedTTL: found, never replayed.
	reconciled list.List
	full       bool
	// misses are the names whose requests found neither the object nor
	// a record, with when the first did: retried until RecordWait has
	// passed. Bounded by max too.
	misses map[types.NamespacedName]time.Time
}

type deletedKey struct {
	name     types.NamespacedName
	value    string
	recorded time.Time // when the cache saw the deletion
	at       time.Time // recorded, or released: the age of its list
	released bool      // in released
	done     bool      // in reconciled (else, and not released, in pending)
	// requested says that a request for name reached a Reconciler since
	// the deletion: the controller wants it (its predicates did not filter
	// the deletion out), and only such a record is replayed.
	requested bool
}

func newDeletedKeys(clk clock.PassiveClock, ttl, releasedTTL time.Duration, maxKeys int, onFull func()) *deletedKeys {
	return &deletedKeys{clock: clk, ttl: ttl, releasedTTL: releasedTTL, max: maxKeys, onFull: onFull,
		byName: make(map[types.NamespacedName]*list.Element), misses: make(map[types.NamespacedName]time.Time)}
}

// miss reports whether the request for name, whose object is neither in
// the cache nor recorded as deleted, should be tried again: its deletion
// may not have been recorded yet. It is, until RecordWait after the first
// miss of name; past that (or with max names already waiting) the request
// is unknown.
func (d *deletedKeys) miss(name types.NamespacedName) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	first, ok := d.misses[name]
	if !ok {
		if len(d.misses) >= d.max {
			for n, at := range d.misses {
				if now.Sub(at) >= RecordWait {
					delete(d.misses, n)
				}
			}
			if len(d.misses) >= d.max {
				return false
			}
		}
		d.misses[types.NamespacedName{Namespace: strings.Clone(name.Namespace), Name: strings.Clone(name.Name)}] = now
		return true
	}
	if now.Sub(first) < RecordWait {
		return true
	}
	delete(d.misses, name)
	return false
}

// record remembers that the object name, whose key value is value, was
// deleted now: a pending record. The strings are copied: the deleted object
// may share its memory with a page of the list it came in.
func (d *deletedKeys) record(name types.NamespacedName, value string) {
	d.add(name, value, false)
}

// recordReleased remembers the deletion of an object whose hash the member
// neither serves nor is assigned: a record released at once, as the
// Reconciler would release it (a sharded cache's tombstones for what left
// the member's range are most of these, and must not crowd out the
// pending records).
func (d *deletedKeys) recordReleased(name types.NamespacedName, value string) {
	d.add(name, value, true)
}

func (d *deletedKeys) add(name types.NamespacedName, value string, released bool) {
	now := d.clock.Now()
	k := &deletedKey{
		name:     types.NamespacedName{Namespace: strings.Clone(name.Namespace), Name: strings.Clone(name.Name)},
		value:    strings.Clone(value),
		recorded: now,
		at:       now,
		released: released,
	}
	d.mu.Lock()
	d.removeLocked(name)
	delete(d.misses, name)
	if released {
		d.byName[k.name] = d.released.PushBack(k)
	} else {
		d.byName[k.name] = d.pending.PushBack(k)
	}
	dropped := d.expireLocked(k.at)
	tell := dropped && !d.full
	d.full = d.full || dropped
	d.mu.Unlock()
	if tell && d.onFull != nil {
		d.onFull()
	}
}

// expireLocked drops the records past their age and those over the bounds;
// it reports whether the bound dropped a pending one.
func (d *deletedKeys) expireLocked(now time.Time) (overBound bool) {
	overBound = d.expireListLocked(&d.pending, now, d.ttl)
	d.expireListLocked(&d.released, now, d.releasedTTL)
	d.expireListLocked(&d.reconciled, now, d.releasedTTL)
	return overBound
}

func (d *deletedKeys) expireListLocked(l *list.List, now time.Time, ttl time.Duration) (overBound bool) {
	for e := l.Front(); e != nil; e = l.Front() {
		k := e.Value.(*deletedKey)
		over := l.Len() > d.max
		if !over && now.Sub(k.at) < ttl {
			return overBound
		}
		overBound = overBound || over
		l.Remove(e)
		delete(d.byName, k.name)
	}
	return overBound
}

// removeLocked drops what is recorded for name, in any state.
func (d *deletedKeys) removeLocked(name types.NamespacedName) {
	e, ok := d.byName[name]
	if !ok {
		return
	}
	switch k := e.Value.(*deletedKey); {
	case k.done:
		d.reconciled.Remove(e)
	case k.released:
		d.released.Remove(e)
	default:
		d.pending.Remove(e)
	}
	delete(d.byName, name)
}

// lookup returns the key value of the deleted object name, and a function
// that settles its record (if it is still that deletion's): here says that
// the request was reconciled on this replica (the record is kept as
// reconciled), else that it was dropped as another replica's (the record
// is released). requested says that the request is a Reconciler's: the
// record may be replayed.
func (d *deletedKeys) lookup(name types.NamespacedName, requested bool) (string, func(here bool), bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked(d.clock.Now())
	e, ok := d.byName[name]
	if !ok {
		return "", nil, false
	}
	k := e.Value.(*deletedKey)
	k.requested = k.requested || requested
	return k.value, func(here bool) { d.settle(k, here) }, true
}

// forget drops what is recorded for name: the object exists again.
func (d *deletedKeys) forget(name types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.misses, name)
	d.removeLocked(name)
}

// settle ends k's pending state, if k is still name's record: reconciled
// here, it is kept as reconciled (for the requests of the other
// controllers that use the same ObjectKey, which must find it too), from
// now, and never replayed; otherwise it is released (again, if a replay
// made it pending: a replayed request that is another replica's by now),
// from now.
// A record already released stays as it is: later requests for the name
// (a child's deletion mapped to its owner) dropped as another's too do not
// keep it, or it would last as long as they come, and be replayed long
// after the owner reconciled it.
func (d *deletedKeys) settle(k *deletedKey, here bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byName[k.name]; !ok || e.Value.(*deletedKey) != k || k.done || (k.released && !here) {
		return
	}
	d.removeLocked(k.name)
	if here {
		k.released, k.done, k.at = false, true, d.clock.Now()
		d.byName[k.name] = d.reconciled.PushBack(k)
		d.expireLocked(k.at)
		return
	}
	k.released, k.at = true, d.clock.Now()
	d.byName[k.name] = d.released.PushBack(k)
	d.expireLocked(k.at)
}

// replay returns the names of the recorded deletions whose key value hashes
// into r, which the member now serves, and whose request reached a Reconciler
// (a deletion the controller's predicates filtered out is not the controller's
// to reconcile; one whose request has not reached it yet will, and is
// reconciled then), and makes the released ones pending again: their requests
// are this replica's to settle, and may be retried (a sharded cache relisting
// r) for longer than a released record lasts. Their age counts from the
// deletion again, as every pending record's does.
func (d *deletedKeys) replay(r Range) []types.NamespacedName {
	d.mu.Lock()
	names, overBound := d.inRangeLocked(r, true)
	tell := overBound && !d.full
	d.full = d.full || overBound
	d.mu.Unlock()
	if tell && d.onFull != nil {
		d.onFull()
	}
	return names
}

func (d *deletedKeys) inRangeLocked(r Range, repend bool) (names []types.NamespacedName, overBound bool) {
	now := d.clock.Now()
	d.expireLocked(now)
	for _, l := range []*list.List{&d.pending, &d.released} {
		for e := l.Front(); e != nil; {
			next := e.Next()
			if k := e.Value.(*deletedKey); r.Contains(Hash(k.value)) && (k.requested || !repend) {
				names = append(names, k.name)
				if repend && k.released {
					d.released.Remove(e)
					d.repend(k)
				}
			}
			e = next
		}
	}
	if repend {
		overBound = d.expireLocked(now)
	}
	return names, overBound
}

// repend puts k, out of either list, back among the pending records, in
// the order of their deletions; mu is held.
func (d *deletedKeys) repend(k *deletedKey) {
	k.released, k.at = false, k.recorded
	e := d.pending.Back()
	for e != nil && e.Value.(*deletedKey).at.After(k.at) {
		e = e.Prev()
	}
	if e == nil {
		d.byName[k.name] = d.pending.PushFront(k)
		return
	}
	d.byName[k.name] = d.pending.InsertAfter(k, e)
}

// len returns how many records are pending, and how many released (those
// kept as reconciled are neither).
func (d *deletedKeys) len() (pending, released int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pending.Len(), d.released.Len()
}

// handler is the informer event handler that records deletions, of live
// objects and of DeletedFinalStateUnknown tombstones, with key's value:
// pending if ours says the hash is the member's, released otherwise.
func (d *deletedKeys) handler(key Key, ours func(h uint64) bool) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return // a tombstone without its object: nothing to place it by
		}
		v, err := key.ValueOf(m)
		if err != nil {
			return
		}
		name := types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
		if ours(Hash(v)) {
			d.record(name, v)
			return
		}
		d.recordReleased(name, v)
	}}
}

// settledKey carries, in the context a Reconciler hands its KeyFunc, the
// settlement of the request: what the KeyFunc registers there runs once
// the Reconciler has settled the request for good.
type settledKey struct{}

type settlement struct{ fns []func(here bool) }

// settlementOf is the settlement of ctx's request, nil outside a
// Reconciler (a KeyFunc called by Handovers, for instance).
func settlementOf(ctx context.Context) *settlement {
	s, _ := ctx.Value(settledKey{}).(*settlement)
	return s
}

// inReconciler reports whether ctx is a Reconciler's, which can retry the
// request.
func inReconciler(ctx context.Context) bool { return settlementOf(ctx) != nil }

// onSettled registers f to run when the request of ctx is settled; it does
// nothing outside a Reconciler.
func onSettled(ctx context.Context, f func(here bool)) {
	if s := settlementOf(ctx); s != nil {
		s.fns = append(s.fns, f)
	}
}

// settle runs what was registered: here says that the request was
// reconciled on this replica, not dropped as another's.
func (s *settlement) settle(here bool) {
	for _, f := range s.fns {
		f(here)
	}
	s.fns = nil
}

// probeKey carries, in the context Handovers calls a KeyFunc with, a probe
// that ObjectKey's KeyFunc fills with its record of deletions and returns:
// a KeyFunc is an opaque function, and this is how the source finds the
// deletions to replay behind the one it was given (behind a wrapper too,
// if the wrapper hands its context on).
type probeKey struct{}

type deletionsProbe struct {
	mu      sync.Mutex
	deleted *deletedKeys
	found   chan struct{} // closed once an ObjectKey has filled deleted
}

// fill is what ObjectKey's KeyFunc does with the probe: it hands over its
// record (nil for a reader without informers).
func (p *deletionsProbe) fill(d *deletedKeys) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.found: // a second ObjectKey behind one wrapper: the first's
	default:
		p.deleted = d
		close(p.found)
	}
}

func (p *deletionsProbe) get() *deletedKeys {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.deleted
}

// probeWait is how long Handovers waits for its key to answer the probe.
const probeWait = time.Second

// deletionsOf returns the record of deletions of the ObjectKey behind key,
// or nil. key is called once, with an empty request and a cancelled
// context: a KeyFunc other than ObjectKey's gives up at once (its reads
// fail), and whatever it returns is ignored, a panic included (no
// controller hands a KeyFunc a request without a name, and one of the
// user's may rely on that).
func deletionsOf(key KeyFunc) *deletedKeys {
	d, _ := probeDeletions(key, probeWait)
	return d
}

// probeDeletions is deletionsOf that waits at most wait for key to return:
// a KeyFunc of the user's may wait for something without looking at its
// context, and Handovers probes it while the controller is built, before
// the manager starts whatever it may wait for. answered is false if key had
// neither returned nor found ObjectKey's record by then (ObjectKey's own
// answer may take a while: with KeyNamespace it adds its handler, which
// may need the API server's discovery); key is left running, and its
// answer is ignored.
func probeDeletions(key KeyFunc, wait time.Duration) (_ *deletedKeys, answered bool) {
	p := &deletionsProbe{found: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), probeKey{}, p))
	cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		_, _, _ = key(ctx, reconcile.Request{})
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-done:
		return p.get(), true
	case <-timer.C:
		select {
		case <-p.found:
			return p.get(), true
		default:
			return nil, false
		}
	}
}
