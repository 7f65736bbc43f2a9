package informer

import (
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
)

// Coalesce returns handler marked for coalescing: registered with one of
// this package's informers, its queue holds at most one pending change per
// object (two across a delete and re-create) instead of every notification,
// so a handler that falls behind holds memory in proportion to the objects,
// not to the rate of change. A change for an object with one pending folds
// into it and keeps its place in the queue:
//
//   - updates fold into one OnUpdate(oldest old, newest new): a predicate
//     comparing old and new still sees the whole change;
//   - an add followed by updates is one OnAdd of the newest object (with
//     isInInitialList as the add had it);
//   - a delete after an update ends the entry: OnDelete of the last state;
//   - a delete after an add cancels the add: the handler never hears of an
//     object that came and went while it was behind;
//   - a re-create after a pending delete waits behind it: OnDelete(old
//     object), then OnAdd(new object), never an update across two objects.
//
// Relists and resyncs fold the same way, object by object (a coalescing
// handler's relist costs one queue entry per object instead of one shared
// entry). The registration's HasSynced still turns true once every object
// of the initial list has been delivered (or cancelled by its delete).
//
// It is safe for handlers that act on an object's current state, keyed by
// object: handlers that only enqueue keys into a workqueue, as
// controller-runtime's and most controllers' do, and predicates that compare
// the old and the new object. It is not safe for handlers that must see
// every change or every object: ones that count or audit events, forward
// them elsewhere, react to intermediate states, or keep expectations of
// adds and deletes to come (client-go's ReplicaSet-style expectations wait
// for the add of every object they created).
//
// Given to another informer (client-go's), the returned handler passes
// every call through unchanged: coalescing is done by this package's
// listener queues, not by the wrapper.
func Coalesce(handler toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	if c, ok := handler.(*coalescing); ok {
		return c
	}
	return &coalescing{handler}
}

// coalescing marks a handler for a coalescing queue; elsewhere it is the
// handler itself.
type coalescing struct {
	toolscache.ResourceEventHandler
}

// WithControllerRuntimeCoalescing makes every event handler that
// controller-runtime registers coalesce as Coalesce describes: the handlers
// its sources (source.Kind, source.Informer: every controller's For, Owns
// and Watches) add, which run the predicates and the handler.EventHandler
// that enqueues requests. Handlers added any other way, for instance
// through GetInformer and AddEventHandler, keep their unbounded queues
// unless wrapped in Coalesce. Use it with NewCacheWith:
//
//	ctrl.Options{NewCache: informer.NewCacheWith(informer.WithControllerRuntimeCoalescing())}
//
// It suits controllers whose handlers enqueue keys, as controller-runtime's
// built-in handlers do; see Coalesce for the handlers it does not suit.
func WithControllerRuntimeCoalescing() Option {
	return func(c *config) { c.coalesceControllerRuntime = true }
}

// controllerRuntimeSourcePkg is the package of the ResourceEventHandler
// adapter controller-runtime's sources register (EventHandler in
// pkg/internal/source, v0.15 and later).
const controllerRuntimeSourcePkg = "sigs.k8s.io/controller-runtime/pkg/internal/source"

// isControllerRuntimeHandler reports whether h is the adapter
// controller-runtime's sources register.
func isControllerRuntimeHandler(h toolscache.ResourceEventHandler) bool {
	t := reflect.TypeOf(h)
	if t == nil || t.Kind() != reflect.Pointer {
		return false
	}
	t = t.Elem()
	return t.PkgPath() == controllerRuntimeSourcePkg && strings.HasPrefix(t.Name(), "EventHandler[")
}

// coalescedHandler returns the handler to call and whether its queue
// coalesces: for a Coalesce'd handler, or, with
// WithControllerRuntimeCoalescing, for controller-runtime's.
func (c *config) coalescedHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandler, bool) {
	if w, ok := h.(*coalescing); ok {
		return w.ResourceEventHandler, true
	}
	return h, c.coalesceControllerRuntime && isControllerRuntimeHandler(h)
}

// unkeyed numbers the objects a coalescing queue cannot key (none reach
// it: the store writer drops objects without a key), each its own entry.
var unkeyed atomic.Uint64

// coalesceKey is the key a coalescing queue folds obj under: the store's.
func coalesceKey(obj any) string {
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return "\x00unkeyed/" + strconv.FormatUint(unkeyed.Add(1), 10)
	}
	return key
}
