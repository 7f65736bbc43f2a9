package shard

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// KeyFunc returns the value whose hash places the object a request is for
// (its UID, or a namespace), or ok false when the object is unknown.
type KeyFunc func(ctx context.Context, req reconcile.Request) (value string, ok bool, err error)

const (
	// RetryAfter is how soon Reconciler retries a request for an object
	// whose range the member is taking over but does not serve, or its
	// caches do not hold, yet.
	RetryAfter = 200 * time.Millisecond
	// MaxRetryAfter bounds how far apart Reconciler's retries of such a
	// request grow when the wait lasts: after the first lease duration of
	// retries (a member never started, a cache never listed), the interval
	// doubles each lease duration, up to MaxRetryAfter, so that a stuck
	// member does not spin every request of its controllers five times a
	// second for as long as the process runs.
	MaxRetryAfter = 30 * time.Second
)

// retryDelay is how soon a request is retried when the member or one of its
// caches has been keeping it back for waited: RetryAfter during the first
// lease duration (a hand-over, a relist), then doubling every lease
// duration, up to MaxRetryAfter.
func retryDelay(waited, leaseDuration time.Duration) time.Duration {
	d := RetryAfter
	for n := waited / leaseDuration; n > 0 && d < MaxRetryAfter; n-- {
		d *= 2
	}
	return min(d, MaxRetryAfter)
}

// Reconciler wraps r so that it reconciles only objects m serves, one
// replica at a time, with complete caches:
//
//   - A request for an object m serves, and every sharded cache of m holds
//     (CachesHold), goes to r inside m.Begin, so that its object's range is
//     not handed over before r returns, and r's context is cancelled if m
//     is fenced.
//   - A request for an object whose hash the assignment gives m, but that
//     m does not serve yet (another member still hands it over) or whose
//     range a sharded cache is still relisting, is retried after RetryAfter:
//     it is this replica's soon, and an event that arrived during the
//     hand-over is not lost. So is every request before m has computed its
//     first assignment (see Assigned): the manager starts controllers and
//     m together, and what a controller is handed meanwhile (its primary
//     objects' initial adds, if they are not sharded) comes only once. If
//     that lasts a lease duration, m logs why, once: it was never started,
//     or it has not listed the member Leases (missing RBAC, an outage).
//     When a wait for the first assignment, or for a sharded cache that
//     does not hold the hash, lasts more than a lease duration, the
//     retries grow apart (doubling each lease duration, up to
//     MaxRetryAfter; RetryAfter again once the cache completes a list). A
//     request for a hash m is assigned but does not serve (the previous
//     owner still publishes it, m's claim or its Lease's renewal is under
//     way) is retried every RetryAfter for as long as that lasts.
//     If a sharded cache has not held a request's hash for a lease
//     duration of retries, m logs that cache, once until its next list
//     completes: one that never completes a list (its kind may not be
//     listed) holds back every request of every controller of m.
//   - A request for an object of another member, or whose key is unknown
//     (key says !ok: an object not in the cache that ObjectKey did not
//     see deleted, once RecordWait of retries has passed: see ObjectKey),
//     is dropped with a nil error: the owner's informers
//     deliver it there. The request of a deletion that key places (see
//     ObjectKey) goes to the replica whose range held the object. If the
//     primary kind is not sharded, every replica sees every event, and one
//     that arrives while the object's hash moves between replicas is
//     dropped by all of them: such a controller adds the source Handovers,
//     which enqueues the objects of every range the member takes over, and
//     the deletions ObjectKey recorded in it.
//
// key's errors are returned, so the request is retried.
//
// Reconciler panics if an argument is nil, or if key is RequestName or
// RequestNamespace and m's key is not KeyNamespace (those functions
// themselves, held in a variable or not: a KeyFunc of the user's that
// calls one is not recognised).
func Reconciler(m *Member, key KeyFunc, r reconcile.Reconciler) reconcile.Reconciler {
	switch {
	case m == nil:
		panic("shard.Reconciler: the member is nil")
	case key == nil:
		panic("shard.Reconciler: the key is nil")
	case isNil(r):
		panic("shard.Reconciler: the reconciler is nil")
	}
	checkKey("shard.Reconciler", m, key)
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var settled settlement
		value, ok, err := key(context.WithValue(ctx, settledKey{}, &settled), req)
		if errors.Is(err, errNotRecordedYet) {
			m.cfg.rec.Request("retried")
			m.cfg.logger.V(4).Info("Retrying a request whose object is gone and whose deletion is not recorded yet", "request", req.NamespacedName)
			return reconcile.Result{RequeueAfter: RetryAfter}, nil
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("shard: placing %s: %w", req.NamespacedName, err)
		}
		if !ok {
			m.cfg.rec.Request("unknown")
			m.cfg.logger.V(4).Info("Dropped a request for an unknown object", "request", req.NamespacedName)
			return reconcile.Result{}, nil
		}
		h := Hash(value)
		ctx, done, ok := m.Begin(ctx, h)
		switch {
		case !ok && m.Assigned(h):
			m.cfg.rec.Request("retried")
			return reconcile.Result{RequeueAfter: retryDelay(m.waitedForAssignment(), m.cfg.leaseDuration)}, nil
		case !ok:
			m.cfg.rec.Request("not_served")
			m.cfg.logger.V(4).Info("Dropped a request for an object this replica does not serve", "request", req.NamespacedName)
			settled.settle(false)
			return reconcile.Result{}, nil
		}
		defer done()
		if !m.CachesHold(h) {
			m.cfg.rec.Request("retried")
			return reconcile.Result{RequeueAfter: retryDelay(m.waitedForCaches(h), m.cfg.leaseDuration)}, nil
		}
		m.cfg.rec.Request("reconciled")
		res, err := r.Reconcile(ctx, req)
		if res.IsZero() && (err == nil || errors.Is(err, reconcile.TerminalError(nil))) {
			settled.settle(true) // not requeued
		}
		return res, err
	})
}

// ObjectKey is the KeyFunc that reads the request's object from reader
// (typically the manager's cache) and returns the field m hashes; it reads
// it without a deep copy (client.UnsafeDisableDeepCopy, which
// controller-runtime's cache honours) and only looks at that field.
// ObjectKey panics if an argument is nil.
//
// The request of a deletion finds nothing to read. If reader has informers (a
// controller-runtime cache.Informers, as the manager's cache is), ObjectKey
// adds a handler to obj's informer that records, for each object the cache
// sees deleted (DeletedFinalStateUnknown tombstones included: an object that
// left the member's range, or that a relist found gone), its namespace, name
// and key value. With KeyUID, ObjectKey answers the UID that the object had,
// from the record; with KeyNamespace, the request's namespace, the object's,
// record or not (with KeyNamespace the handler is added only once a Handovers
// uses the KeyFunc: the record is there for its replays only). So the replica
// whose range held the object reconciles its deletion, and the others drop it.
// A record goes twice the member's lease duration after a Reconciler has
// reconciled its request without an error or a requeue (meanwhile it places
// the other requests of that name, such as those of another controller whose
// KeyFunc calls the same ObjectKey, and is never replayed: each Reconciler
// that uses it must find it, not only the first), when the object is read
// again (re-created), and at the latest after DeletedKeyTTL; one ObjectKey
// keeps at most MaxDeletedKeys, the oldest going first (logged once). A
// request dropped as another replica's leaves its record released, kept for
// twice the member's lease duration from that first drop (later requests for
// the name dropped too do not extend it; at most MaxDeletedKeys of them, apart
// from the others), as does from the start the record of an object whose hash
// the member neither serves nor is assigned (a sharded cache's tombstones for
// what left its range): if the member takes the object's hash over meanwhile,
// Handovers replays the deletion, which the other replica may have dropped (it
// had let the hash go) or not reconciled (it died), if a request for it
// reached the Reconciler (not one the controller's predicates filtered out),
// and the record is pending again (its request may be retried while a sharded
// cache relists the hashes taken over). The controller's own handler may run
// before the one that records a deletion (each has its own goroutine), so
// inside a Reconciler a request that finds neither the object nor a record is
// retried after RetryAfter until RecordWait has passed since its first such
// try. Past those bounds, and for a reader without informers, a request for an
// object that is not found is unknown and dropped by every replica, as is one
// for an object no replica's cache held (a mapping to a name that does not
// exist; with informers, after RecordWait).
func ObjectKey(m *Member, reader client.Reader, obj client.Object) KeyFunc {
	switch {
	case m == nil:
		panic("shard.ObjectKey: the member is nil")
	case isNil(reader):
		panic("shard.ObjectKey: the reader is nil")
	case isNil(obj):
		panic("shard.ObjectKey: the object is nil")
	}
	return newObjectKey(m, reader, obj).key
}

// informerSource is the part of a controller-runtime cache that gives an
// object's informer.
type informerSource interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...crcache.InformerGetOption) (crcache.Informer, error)
}

type objectKey struct {
	m       *Member
	reader  client.Reader
	obj     client.Object
	deleted *deletedKeys // nil: no record (a reader without informers)

	mu        sync.Mutex
	informers informerSource // until the record's handler is added
	lastTry   time.Time
	// unwanted says that nothing needs the record yet: with KeyNamespace
	// a deletion's request is placed by its namespace, and only Handovers
	// replays recorded deletions. Until a Handovers finds the record, the
	// handler is not added (a sharded cache hands its handlers a tombstone
	// for every object leaving the member's range).
	unwanted bool
}

func newObjectKey(m *Member, reader client.Reader, obj client.Object) *objectKey {
	k := &objectKey{m: m, reader: reader, obj: obj}
	if src, ok := reader.(informerSource); ok {
		// A released record is kept for two lease durations: the new
		// owner of a dead member's range takes it over a lease duration
		// after the last renewal it saw, so this keeps the deletions the
		// dead member had a lease duration to reconcile, and more.
		lost := "the requests of the oldest deletions are dropped by every replica"
		if m.Key() == KeyNamespace {
			lost = "the oldest deletions are not replayed by shard.Handovers if their namespaces change replicas"
		}
		k.deleted = newDeletedKeys(m.cfg.clock, DeletedKeyTTL, 2*m.cfg.leaseDuration, MaxDeletedKeys, func() {
			m.cfg.logger.Error(nil, "More objects were deleted than shard.ObjectKey keeps the keys of, before their requests were settled: "+lost,
				"type", fmt.Sprintf("%T", obj), "max", MaxDeletedKeys)
		})
		k.informers = src
		k.unwanted = m.Key() == KeyNamespace
		// The informer does not start here: a manager's cache starts
		// its informers with itself (it has not started yet when
		// controllers are built), and so does a started cache's Get.
		k.watchDeletions(context.Background())
	}
	return k
}

// ours reports whether the member serves h or is assigned it: the request
// of a deletion there is this replica's, or will be (it is retried).
func (k *objectKey) ours(h uint64) bool { return k.m.Serving().Contains(h) || k.m.Assigned(h) }

// wantDeletions is called by Handovers' probe: the record is needed, with
// KeyNamespace too, from now on.
func (k *objectKey) wantDeletions() {
	k.mu.Lock()
	k.unwanted = false
	k.mu.Unlock()
	k.watchDeletions(context.Background())
}

// watchDeletions adds the record's handler to obj's informer, if it has not
// been added yet; a failure (a kind the cache cannot map yet) is logged
// and tried again, at most once a second, when a request is not found.
func (k *objectKey) watchDeletions(ctx context.Context) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.m.cfg.clock.Now()
	if k.informers == nil || k.unwanted || (!k.lastTry.IsZero() && now.Sub(k.lastTry) < time.Second) {
		return
	}
	k.lastTry = now
	inf, err := k.informers.GetInformer(ctx, k.obj, crcache.BlockUntilSynced(false))
	if err == nil {
		_, err = inf.AddEventHandler(k.deleted.handler(k.m.Key(), k.ours))
	}
	if err != nil {
		k.m.cfg.logger.Error(err, "shard.ObjectKey cannot follow the deletions of its objects; until it can, the requests of deleted objects are dropped by every replica",
			"type", fmt.Sprintf("%T", k.obj))
		return
	}
	k.informers = nil
}

func (k *objectKey) key(ctx context.Context, req reconcile.Request) (string, bool, error) {
	if p, ok := ctx.Value(probeKey{}).(*deletionsProbe); ok {
		p.fill(k.deleted)
		if k.deleted != nil {
			k.wantDeletions()
		}
		return "", false, nil
	}
	o, ok := k.obj.DeepCopyObject().(client.Object)
	if !ok {
		return "", false, fmt.Errorf("%T does not copy to a client.Object", k.obj)
	}
	// Only the hashed field is read: the cache need not copy the object.
	err := k.reader.Get(ctx, req.NamespacedName, o, client.UnsafeDisableDeepCopy)
	switch {
	case err == nil:
		if k.deleted != nil {
			k.deleted.forget(req.NamespacedName) // re-created
		}
		v, err := k.m.Key().ValueOf(o)
		return v, err == nil, err
	case !apierrors.IsNotFound(err):
		return "", false, err
	case k.deleted == nil && k.m.Key() == KeyNamespace:
		return req.Namespace, true, nil
	case k.deleted == nil:
		return "", false, nil
	}
	k.watchDeletions(ctx)
	v, settle, ok := k.deleted.lookup(req.NamespacedName, inReconciler(ctx))
	switch {
	case ok:
		onSettled(ctx, settle)
	case k.m.Key() == KeyNamespace:
		// The request names the namespace: no record is needed to
		// place it, only to replay it after a hand-over.
		return req.Namespace, true, nil
	case inReconciler(ctx) && k.deleted.miss(req.NamespacedName):
		return "", false, errNotRecordedYet
	}
	return v, ok, nil
}

// errNotRecordedYet is ObjectKey's answer, inside a Reconciler, for a
// request whose object it neither finds nor saw deleted, until RecordWait
// has passed: Reconciler retries it after RetryAfter.
var errNotRecordedYet = errors.New("the object is not in the cache and its deletion is not recorded yet")

// RequestNamespace is the KeyFunc of KeyNamespace sharding for namespaced
// objects: the request's namespace, known without a read.
func RequestNamespace(_ context.Context, req reconcile.Request) (string, bool, error) {
	return req.Namespace, true, nil
}

// RequestName is the KeyFunc of KeyNamespace sharding for a controller
// whose requests are namespaces, each reconciled by the replica that
// serves the objects in it: the request's name.
func RequestName(_ context.Context, req reconcile.Request) (string, bool, error) {
	return req.Name, true, nil
}

// checkKey panics if key places requests by a namespace (RequestName,
// RequestNamespace) while m places objects by UID: the replica would
// reconcile requests whose objects its caches do not hold, and drop those
// they do.
func checkKey(fn string, m *Member, key KeyFunc) {
	if m.Key() == KeyNamespace {
		return
	}
	for name, byNamespace := range map[string]KeyFunc{"RequestName": RequestName, "RequestNamespace": RequestNamespace} {
		if reflect.ValueOf(key).Pointer() == reflect.ValueOf(byNamespace).Pointer() {
			panic(fmt.Sprintf("%s: shard.%s places requests by a namespace, but the member's key is %s: give the member WithKey(shard.KeyNamespace), or use shard.ObjectKey",
				fn, name, string(m.Key())))
		}
	}
}
