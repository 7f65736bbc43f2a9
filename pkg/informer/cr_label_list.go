package informer

import (
	"context"
	"fmt"
	"strings"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/leaninformer/leaninformer/pkg/cache"
)

// labelListCache is the controller-runtime cache of NewCacheWith with the
// encoded store. controller-runtime's reader lists every object of a type
// and then filters by labels, which on an encoded store decodes them all;
// labelListCache answers a List with a label selector from the store's
// ListByLabels, which decodes only the matches, and returns what
// controller-runtime's reader would. Every List it cannot prove it answers
// the same way goes to controller-runtime's cache unchanged.
type labelListCache struct {
	crcache.Cache
	scheme *runtime.Scheme
	// noDeepCopy is the UnsafeDisableDeepCopy of each type's reader by
	// GVK (ByObject), else defaultNoDeepCopy: a reader that copies also sets
	// the GVK on what it returns.
	noDeepCopy        map[schema.GroupVersionKind]bool
	defaultNoDeepCopy bool
	// multiNamespace says by GVK (ByObject), else defaultMultiNamespace,
	// whether controller-runtime keeps the type in a multi-namespace cache.
	// Its informer is never ours, and asking for it would start informers
	// in every namespace of the cache and a goroutine that waits for them,
	// where controller-runtime's List of one namespace starts nothing else:
	// such Lists go to controller-runtime without a look.
	multiNamespace        map[schema.GroupVersionKind]bool
	defaultMultiNamespace bool
	// mapper and informers (nil where the informers are not ours) find a
	// cluster-scoped type's informer in a multi-namespace cache, which
	// keeps such a type in one cluster-wide informer but hands it out
	// wrapped.
	mapper    apimeta.RESTMapper
	informers *informerRegistry
}

// informerRegistry holds the informers NewCacheWith built, by kind and
// form (typed, unstructured, metadata-only); of a kind built more than once
// (one per namespace of a multi-namespace cache), the last.
type informerRegistry struct {
	mu sync.Mutex
	m  map[registryKey]*SharedIndexInformer
}

type registryKey struct {
	gvk  schema.GroupVersionKind
	form string
}

func newInformerRegistry() *informerRegistry {
	return &informerRegistry{m: map[registryKey]*SharedIndexInformer{}}
}

// formOf is the form of obj's informer, as controller-runtime keeps
// informers apart.
func formOf(obj runtime.Object) string {
	switch obj.(type) {
	case runtime.Unstructured:
		return "unstructured"
	case *metav1.PartialObjectMetadata:
		return "metadata"
	}
	return "typed"
}

func (r *informerRegistry) add(gvk schema.GroupVersionKind, obj runtime.Object, inf *SharedIndexInformer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[registryKey{gvk, formOf(obj)}] = inf
}

func (r *informerRegistry) get(gvk schema.GroupVersionKind, obj runtime.Object) *SharedIndexInformer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[registryKey{gvk, formOf(obj)}]
}

func (r *informerRegistry) remove(gvk schema.GroupVersionKind, obj runtime.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, registryKey{gvk, formOf(obj)})
}

// newLabelListCache wraps c, made by controller-runtime from opts, or
// returns it as it is where every List must go to controller-runtime:
// readers that fail on a missing informer (finding ours would start one).
func newLabelListCache(c crcache.Cache, s *runtime.Scheme, opts crcache.Options, informers *informerRegistry) (crcache.Cache, error) {
	if opts.ReaderFailOnMissingInformer {
		return c, nil
	}
	l := &labelListCache{Cache: c, scheme: s, mapper: opts.Mapper, informers: informers, noDeepCopy: map[schema.GroupVersionKind]bool{},
		defaultNoDeepCopy:     ptr.Deref(opts.DefaultUnsafeDisableDeepCopy, false),
		multiNamespace:        map[schema.GroupVersionKind]bool{},
		defaultMultiNamespace: len(opts.DefaultNamespaces) > 0,
	}
	for obj, byObject := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, s)
		if err != nil {
			return nil, fmt.Errorf("the GVK of ByObject entry %T: %w", obj, err)
		}
		l.noDeepCopy[gvk] = ptr.Deref(byObject.UnsafeDisableDeepCopy, l.defaultNoDeepCopy)
		// As cache.New decides: an entry with namespaces, or a namespaced
		// one without that takes DefaultNamespaces. A cluster-scoped one of
		// the latter kind is not, which List tells with the RESTMapper.
		l.multiNamespace[gvk] = len(byObject.Namespaces) > 0 ||
			(byObject.Namespaces == nil && len(opts.DefaultNamespaces) > 0)
	}
	return l, nil
}

// List lists from the encoded store when opts select by labels, else
// through controller-runtime's cache.
func (l *labelListCache) List(ctx context.Context, out client.ObjectList, opts ...client.ListOption) error {
	if done, err := l.listByLabels(ctx, out, opts); done {
		return err
	}
	return l.Cache.List(ctx, out, opts...)
}

// NeedLeaderElection is the wrapped cache's answer, as a manager would get
// it (controller-runtime's single-namespace cache does not need leader
// election; a runnable that does not say so does).
func (l *labelListCache) NeedLeaderElection() bool {
	if r, ok := l.Cache.(interface{ NeedLeaderElection() bool }); ok {
		return r.NeedLeaderElection()
	}
	return true
}

// listByLabels answers the List if it can (done), as controller-runtime's
// CacheReader.List does: a label selector and no field selector or
// continue token, on a type whose informer is ours, synced, with an encoded
// store (any other informer is a multi-namespace cache's or the caller's;
// the informers of a multi-namespace cache are not even looked up, but for
// a cluster-scoped type's, which NewCacheWith keeps). A
// failed look-up of the informer is done too, with the look-up's error.
func (l *labelListCache) listByLabels(ctx context.Context, out client.ObjectList, opts []client.ListOption) (done bool, err error) {
	var listOpts client.ListOptions
	listOpts.ApplyOptions(opts)
	if listOpts.LabelSelector == nil || listOpts.FieldSelector != nil || listOpts.Continue != "" {
		return false, nil
	}
	gvk, obj, ok := l.itemType(out)
	if !ok {
		return false, nil // controller-runtime returns the error
	}
	multi, found := l.multiNamespace[gvk]
	if !found {
		multi = l.defaultMultiNamespace
	}
	var ours *SharedIndexInformer
	if multi {
		if ours = l.clusterInformer(gvk, obj); ours == nil {
			return false, nil
		}
	} else {
		// Not blocking: an informer that has not synced (or a cache that
		// has not started) is controller-runtime's to wait for or to
		// refuse. Its List looks the informer up the same way: where that
		// fails (a kind the RESTMapper does not know, after discovery
		// requests), its error is the List's, and asking again would
		// repeat the discovery.
		inf, err := l.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
		if err != nil {
			return true, err
		}
		var ok bool
		if ours, ok = inf.(*SharedIndexInformer); !ok {
			return false, nil
		}
	}
	if !ours.cfg.encoded || !ours.HasSynced() || ours.IsStopped() {
		return false, nil
	}
	q := cache.LabelQuery{Selector: listOpts.LabelSelector, Limit: int(max(listOpts.Limit, 0))}
	if listOpts.Namespace != "" {
		q.IndexName, q.IndexedValue = toolscache.NamespaceIndex, listOpts.Namespace
	}
	objs, err := ours.indexer.ListByLabels(q)
	if err != nil {
		return true, err
	}
	noDeepCopy, found := l.noDeepCopy[gvk]
	if !found {
		noDeepCopy = l.defaultNoDeepCopy
	}
	setGVK := !noDeepCopy && !ptr.Deref(listOpts.UnsafeDisableDeepCopy, false)
	items := make([]runtime.Object, 0, len(objs))
	for _, item := range objs {
		o, isObj := item.(runtime.Object)
		if !isObj {
			return true, fmt.Errorf("cache contained %T, which is not an Object", item)
		}
		if setGVK {
			// controller-runtime's reader sets it on the copy it makes; this
			// object is already a fresh decode.
			o.GetObjectKind().SetGroupVersionKind(gvk)
		}
		items = append(items, o)
	}
	if err := apimeta.SetList(out, items); err != nil {
		return true, err
	}
	out.SetContinue("continue-not-supported")
	return true, nil
}

// clusterInformer returns the informer of a cluster-scoped type that may
// be in a multi-namespace cache, which keeps it in one cluster-wide
// informer, or nil: for a namespaced type (the cache keeps one informer per
// namespace), one the RESTMapper does not know (controller-runtime's List
// returns its error), or an informer NewCacheWith has not built (the
// cache's List builds it, as controller-runtime's would).
func (l *labelListCache) clusterInformer(gvk schema.GroupVersionKind, obj runtime.Object) *SharedIndexInformer {
	if l.mapper == nil || l.informers == nil {
		return nil
	}
	namespaced, err := apiutil.IsGVKNamespaced(gvk, l.mapper)
	if err != nil || namespaced {
		return nil
	}
	return l.informers.get(gvk, obj)
}

// RemoveInformer forgets the informer that controller-runtime stops.
func (l *labelListCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	if l.informers != nil {
		if gvk, err := apiutil.GVKForObject(obj, l.scheme); err == nil {
			l.informers.remove(gvk, obj)
		}
	}
	return l.Cache.RemoveInformer(ctx, obj)
}

// itemType returns the GVK and an object of the items of list, as
// controller-runtime's cache finds the informer of a List: ok is false
// where it would fail.
func (l *labelListCache) itemType(list client.ObjectList) (schema.GroupVersionKind, client.Object, bool) {
	gvk, err := apiutil.GVKForObject(list, l.scheme)
	if err != nil {
		return gvk, nil, false
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	switch list.(type) {
	case runtime.Unstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return gvk, u, true
	case *metav1.PartialObjectMetadataList:
		pom := &metav1.PartialObjectMetadata{}
		pom.SetGroupVersionKind(gvk)
		return gvk, pom, true
	}
	obj, err := l.scheme.New(gvk)
	if err != nil {
		return gvk, nil, false
	}
	o, ok := obj.(client.Object)
	if ok {
		// GetInformer finds the kind of a Go type registered under
		// several by the object's; controller-runtime's List looks the
		// informer up by gvk itself.
		o.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return gvk, o, ok
}
