package shard

import (
	"context"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// KeyFunc returns the value whose hash places the object a request is for
// (its UID, or a namespace), or ok false when the object is unknown.
type KeyFunc func(ctx context.Context, req reconcile.Request) (value string, ok bool, err error)

// RetryAfter is how soon Reconciler retries a request for an object whose
// range the member is taking over but does not serve, or its caches do not
// hold, yet.
const RetryAfter = 200 * time.Millisecond

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
//   - A request for an object of another member, or whose key is unknown
//     (key says !ok, for example an object not in the cache), is dropped
//     with a nil error: the owner's informers deliver it there. If the
//     primary kind is not sharded, every replica sees every event, and one
//     that arrives while the object's hash moves between replicas is
//     dropped by all of them: such a controller adds the source Handovers,
//     which enqueues the objects of every range the member takes over.
//
// key's errors are returned, so the request is retried.
//
// Reconciler panics if an argument is nil, or if key is RequestName or
// RequestNamespace and m's key is not KeyNamespace.
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
		value, ok, err := key(ctx, req)
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
			m.waitedForAssignment()
			return reconcile.Result{RequeueAfter: RetryAfter}, nil
		case !ok:
			m.cfg.rec.Request("not_served")
			m.cfg.logger.V(4).Info("Dropped a request for an object this replica does not serve", "request", req.NamespacedName)
			return reconcile.Result{}, nil
		}
		defer done()
		if !m.CachesHold(h) {
			m.cfg.rec.Request("retried")
			return reconcile.Result{RequeueAfter: RetryAfter}, nil
		}
		m.cfg.rec.Request("reconciled")
		return r.Reconcile(ctx, req)
	})
}

// ObjectKey is the KeyFunc that reads the request's object from reader
// (typically the manager's cache) into a copy of obj and returns the field
// m hashes. An object that is not found is unknown. ObjectKey panics if an
// argument is nil.
func ObjectKey(m *Member, reader client.Reader, obj client.Object) KeyFunc {
	switch {
	case m == nil:
		panic("shard.ObjectKey: the member is nil")
	case isNil(reader):
		panic("shard.ObjectKey: the reader is nil")
	case isNil(obj):
		panic("shard.ObjectKey: the object is nil")
	}
	return func(ctx context.Context, req reconcile.Request) (string, bool, error) {
		o, ok := obj.DeepCopyObject().(client.Object)
		if !ok {
			return "", false, fmt.Errorf("%T does not copy to a client.Object", obj)
		}
		if err := reader.Get(ctx, req.NamespacedName, o); err != nil {
			if apierrors.IsNotFound(err) {
				return "", false, nil
			}
			return "", false, err
		}
		v, err := m.Key().ValueOf(o)
		return v, err == nil, err
	}
}

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
