package shard

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Handovers is the source a controller needs when its primary kind is not
// sharded (excluded in informer.WithShard, or a controller whose requests
// are namespaces, with RequestName): every time m starts serving hashes it
// did not serve (a range taken over, its first claim), it lists list's
// objects from reader (the manager's cache) and enqueues a request for
// each of them whose key falls in those hashes. Add it to the controller
// next to its primary kind, with the very KeyFunc value its Reconciler
// has (each ObjectKey keeps a record of deletions of its own, which only
// the Reconciler it is given reaches: with a second ObjectKey built for
// it, Handovers replays no deletions):
//
//	key := shard.ObjectKey(member, mgr.GetCache(), &corev1.ConfigMap{})
//	ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
//		WatchesRawSource(shard.Handovers(member, mgr.GetCache(), &corev1.ConfigMapList{}, key)).
//		Complete(shard.Reconciler(member, key, r))
//
// Without it, an event of an unsharded primary object that arrives while
// its hash moves between replicas (the old owner has let it go, the new
// one is not assigned it yet) is dropped by every replica, and the object
// is not reconciled until its next event. A sharded primary needs no such
// source: the new owner's informers relist the range it took over, and
// hand every object in it to the controller. The requests are those of
// each object's namespace and name, so the controller's requests must be
// its primary objects' (For, or namespaces with NamespaceList and
// RequestName).
//
// When key is ObjectKey's (or a KeyFunc that calls it with the context it is
// given, that of another kind included: its deletions whose names the
// controller was asked to reconcile are replayed as such requests), Handovers
// also enqueues the deletions ObjectKey recorded whose key falls in the hashes
// gained: those this member dropped as another's in the last two lease
// durations, and those it has not settled, of the deletions whose request
// reached the Reconciler (a deletion the controller's predicates filtered out
// is not replayed; one whose request has not reached it yet is reconciled when
// it does). A deletion is then reconciled at least once: twice if the old
// owner reconciled it too. To find that record, Handovers calls key once, when
// it is built, with an empty request and a cancelled context; any other
// KeyFunc's answer is ignored, and so is a panic (a KeyFunc that expects a
// name in every request). A KeyFunc that has not returned a second later (it
// waits for something without looking at its context) is left to return when
// it will: Handovers logs an error and goes on without replaying deletions,
// rather than hang the controller's setup.
//
// Handovers panics if an argument is nil, list is not a list type, or key
// is RequestName or RequestNamespace and m's key is not KeyNamespace
// (those functions themselves: a KeyFunc that calls one is not recognised).
func Handovers(m *Member, reader client.Reader, list client.ObjectList, key KeyFunc) source.Source {
	switch {
	case m == nil:
		panic("shard.Handovers: the member is nil")
	case isNil(reader):
		panic("shard.Handovers: the reader is nil")
	case isNil(list):
		panic("shard.Handovers: the list is nil")
	case key == nil:
		panic("shard.Handovers: the key is nil")
	case !meta.IsListType(list):
		panic(fmt.Sprintf("shard.Handovers: %T is not a list type", list))
	}
	checkKey("shard.Handovers", m, key)
	deleted, answered := probeDeletions(key, probeWait)
	if !answered {
		m.cfg.logger.Error(nil, "shard.Handovers: its KeyFunc did not return when called with a cancelled context and an empty request; Handovers goes on without replaying deletions (only ObjectKey has a record of them)",
			"list", fmt.Sprintf("%T", list), "waited", probeWait)
	}
	return &handovers{m: m, reader: reader, list: list, key: key, deleted: deleted}
}

type handovers struct {
	m      *Member
	reader client.Reader
	list   client.ObjectList
	key    KeyFunc
	// deleted is the record of deletions of the ObjectKey behind key, nil
	// for another KeyFunc: the deletions to replay.
	deleted *deletedKeys
}

// String names the source in controller-runtime's logs.
func (h *handovers) String() string { return fmt.Sprintf("shard.Handovers(%T)", h.list) }

// Start implements source.Source: it follows m's gains until ctx ends.
func (h *handovers) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	sub := h.m.gate.subscribeGains()
	go h.run(ctx, q, sub)
	return nil
}

func (h *handovers) run(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], sub *gainSub) {
	defer h.m.gate.unsubscribeGains(sub)
	var todo Range
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.signal:
		case <-retry:
		}
		retry = nil
		todo = todo.Union(h.m.gate.takeGains(sub))
		if todo.Empty() {
			continue
		}
		n, deletions, err := h.enqueue(ctx, q, todo)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			h.m.cfg.logger.Error(err, "Could not enqueue the objects of a range taken over; retrying", "list", fmt.Sprintf("%T", h.list), "retryIn", RetryAfter)
			retry = h.m.cfg.clock.After(RetryAfter)
			continue
		}
		h.m.cfg.logger.V(2).Info("Enqueued the objects of a range taken over", "list", fmt.Sprintf("%T", h.list), "share", todo.Fraction(), "objects", n, "deletions", deletions)
		todo = Range{}
	}
}

// enqueue adds a request for every listed object whose key is in r, and
// for every recorded deletion whose key is in r: it may have been dropped
// by every replica (the old owner let the hash go, or died, before it
// reconciled it). It returns how many of each it added.
func (h *handovers) enqueue(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], r Range) (objects, deletions int, err error) {
	list, ok := h.list.DeepCopyObject().(client.ObjectList)
	if !ok {
		return 0, 0, fmt.Errorf("%T does not copy to a client.ObjectList", h.list)
	}
	// Only names are read: a cache need not copy every object it holds
	// (a client that is not a cache ignores the option).
	if err := h.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, 0, fmt.Errorf("listing %T: %w", h.list, err)
	}
	err = meta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return fmt.Errorf("%T in %T is not a client.Object", o, h.list)
		}
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
		value, ok, err := h.key(ctx, req)
		if err != nil {
			return fmt.Errorf("placing %s: %w", req.NamespacedName, err)
		}
		if ok && r.Contains(Hash(value)) {
			q.Add(req)
			objects++
		}
		return nil
	})
	if err != nil {
		return objects, 0, err
	}
	if h.deleted != nil {
		for _, name := range h.deleted.replay(r) {
			q.Add(reconcile.Request{NamespacedName: name})
			deletions++
		}
	}
	return objects, deletions, nil
}
