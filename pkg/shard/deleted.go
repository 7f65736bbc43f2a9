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
)

const (
	// DeletedKeyTTL is how long ObjectKey keeps, at most, the key of an
	// object its cache saw deleted, for the requests of that deletion. The
	// record of one goes as soon as a Reconciler has settled its request
	// (reconciled it without a requeue or an error, or dropped it for
	// another replica's); this bounds the rest (requests a predicate
	// filtered out, or requeued with a growing backoff).
	DeletedKeyTTL = 10 * time.Minute
	// MaxDeletedKeys is how many keys of deleted objects one ObjectKey
	// keeps at most (a few hundred bytes each): past it the oldest goes,
	// and the requests of that deletion are dropped by every replica.
	MaxDeletedKeys = 16384
	// RecordWait is how long a Reconciler retries (every RetryAfter) a
	// request whose object ObjectKey neither finds nor saw deleted before
	// it drops it as unknown: the controller's handler may have run before
	// the handler that records the deletion (each has its own goroutine).
	RecordWait = time.Second
)

// deletedKeys is ObjectKey's record of the key values of objects its cache
// saw deleted, by namespace and name, oldest first, bounded in age and
// number: the request of a deletion finds nothing to read, and this is
// where it is placed from.
type deletedKeys struct {
	clock  clock.PassiveClock
	ttl    time.Duration
	max    int
	onFull func() // called (without mu) the first time the bound drops an entry

	mu     sync.Mutex
	byName map[types.NamespacedName]*list.Element // of *deletedKey
	order  list.List                              // oldest first
	full   bool
	// misses are the names whose requests found neither the object nor
	// a record, with when the first did: retried until RecordWait has
	// passed. Bounded by max too.
	misses map[types.NamespacedName]time.Time
}

type deletedKey struct {
	name  types.NamespacedName
	value string
	at    time.Time
}

func newDeletedKeys(clk clock.PassiveClock, ttl time.Duration, maxKeys int, onFull func()) *deletedKeys {
	return &deletedKeys{clock: clk, ttl: ttl, max: maxKeys, onFull: onFull,
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
// deleted now. The strings are copied: the deleted object may share its
// memory with a page of the list it came in.
func (d *deletedKeys) record(name types.NamespacedName, value string) {
	k := &deletedKey{
		name:  types.NamespacedName{Namespace: strings.Clone(name.Namespace), Name: strings.Clone(name.Name)},
		value: strings.Clone(value),
		at:    d.clock.Now(),
	}
	d.mu.Lock()
	if e, ok := d.byName[name]; ok {
		d.order.Remove(e)
	}
	delete(d.misses, name)
	d.byName[k.name] = d.order.PushBack(k)
	dropped := d.expireLocked(k.at)
	tell := dropped && !d.full
	d.full = d.full || dropped
	d.mu.Unlock()
	if tell && d.onFull != nil {
		d.onFull()
	}
}

// expireLocked drops the entries past their age and those over the bound;
// it reports whether the bound dropped one.
func (d *deletedKeys) expireLocked(now time.Time) (overBound bool) {
	for e := d.order.Front(); e != nil; e = d.order.Front() {
		k := e.Value.(*deletedKey)
		over := d.order.Len() > d.max
		if !over && now.Sub(k.at) < d.ttl {
			return overBound
		}
		overBound = overBound || over
		d.order.Remove(e)
		delete(d.byName, k.name)
	}
	return overBound
}

// lookup returns the key value of the deleted object name, and a function
// that forgets it (if it is still that deletion's).
func (d *deletedKeys) lookup(name types.NamespacedName) (string, func(), bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked(d.clock.Now())
	e, ok := d.byName[name]
	if !ok {
		return "", nil, false
	}
	k := e.Value.(*deletedKey)
	return k.value, func() { d.forgetEntry(k) }, true
}

// forget drops what is recorded for name: the object exists again.
func (d *deletedKeys) forget(name types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.misses, name)
	if e, ok := d.byName[name]; ok {
		d.order.Remove(e)
		delete(d.byName, name)
	}
}

func (d *deletedKeys) forgetEntry(k *deletedKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byName[k.name]; ok && e.Value.(*deletedKey) == k {
		d.order.Remove(e)
		delete(d.byName, k.name)
	}
}

func (d *deletedKeys) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.order.Len()
}

// handler is the informer event handler that records deletions, of live
// objects and of DeletedFinalStateUnknown tombstones, with key's value.
func (d *deletedKeys) handler(key Key) toolscache.ResourceEventHandler {
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
		d.record(types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}, v)
	}}
}

// settledKey carries, in the context a Reconciler hands its KeyFunc, the
// settlement of the request: what the KeyFunc registers there runs once
// the Reconciler has settled the request for good.
type settledKey struct{}

type settlement struct{ fns []func() }

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
func onSettled(ctx context.Context, f func()) {
	if s := settlementOf(ctx); s != nil {
		s.fns = append(s.fns, f)
	}
}

func (s *settlement) settle() {
	for _, f := range s.fns {
		f()
	}
	s.fns = nil
}
