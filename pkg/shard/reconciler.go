package shard

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// KeyFunc returns the value whose hash places the object a request is for
// (its UID, or a namespace), or ok false when the object is unknown.
type KeyFunc func(ctx context.Context, req reconcile.Request) (value string, ok bool, err error)

// Reconciler wraps r so that it reconciles only objects m serves, one
// replica at a time: a request is passed to r inside m.Begin, so that its
// object's range is not handed over before r returns, and r's context is
// cancelled if m is fenced. Requests for objects m does not serve, or whose
// key is unknown (key says !ok, for example an object no longer in the
// cache), are dropped with a nil error: their owner's informer delivers
// them there. key's errors are returned, so the request is retried.
func Reconciler(m *Member, key KeyFunc, r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		value, ok, err := key(ctx, req)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("shard: placing %s: %w", req.NamespacedName, err)
		}
		if !ok {
			m.cfg.rec.Dropped("unknown")
			m.cfg.logger.V(4).Info("Dropped a request for an unknown object", "request", req.NamespacedName)
			return reconcile.Result{}, nil
		}
		ctx, done, ok := m.Begin(ctx, Hash(value))
		if !ok {
			m.cfg.rec.Dropped("not_served")
			m.cfg.logger.V(4).Info("Dropped a request for an object this replica does not serve", "request", req.NamespacedName)
			return reconcile.Result{}, nil
		}
		defer done()
		return r.Reconcile(ctx, req)
	})
}

// ObjectKey is the KeyFunc that reads the request's object from reader
// (typically the manager's cache) into a copy of obj and returns the field
// m hashes. An object that is not found is unknown.
func ObjectKey(m *Member, reader client.Reader, obj client.Object) KeyFunc {
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
