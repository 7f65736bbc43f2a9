package informer

import (
	"context"
	"strings"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// kindedCache is NewCacheWith's controller-runtime cache when the
// informers are ours with an encoded store, for Go types the scheme
// registers under several kinds (one struct serving two versions of a
// CRD). controller-runtime builds the informer of such a kind, for a
// GetInformerForKind or a List, from an object of the type without a kind,
// so the informer cannot tell which kind its objects are and decodes them
// without one (withReadKind), where controller-runtime's reader sets the
// kind on the copies it hands out. kindedCache hands controller-runtime an
// object with the kind wherever the informer it builds is the same
// (GetInformerForKind; a List, but for one namespace of a multi-namespace
// cache, which builds the informer of that namespace alone), and gives the
// objects that Get and List read the kind they were read as. Every other
// type and call goes to controller-runtime unchanged.
type kindedCache struct {
	crcache.Cache
	scheme *runtime.Scheme
	// failOnMissing is ReaderFailOnMissingInformer: a List builds nothing.
	failOnMissing bool
	// multiNamespace says, as labelListCache's, by GVK (else
	// defaultMultiNamespace) whether the type may be in a multi-namespace
	// cache.
	multiNamespace        map[schema.GroupVersionKind]bool
	defaultMultiNamespace bool

	mu sync.Mutex
	// built holds the kinds whose informer a List had built with the kind.
	built map[schema.GroupVersionKind]bool

	// isAmbiguous remembers, by GVK, what ambiguous found: Get and List
	// ask on every read, and making an object of the type to tell costs an
	// allocation each time.
	isAmbiguous sync.Map // schema.GroupVersionKind -> bool
}

func newKindedCache(c crcache.Cache, s *runtime.Scheme, opts crcache.Options) *kindedCache {
	k := &kindedCache{Cache: c, scheme: s, failOnMissing: opts.ReaderFailOnMissingInformer,
		multiNamespace:        map[schema.GroupVersionKind]bool{},
		defaultMultiNamespace: len(opts.DefaultNamespaces) > 0,
		built:                 map[schema.GroupVersionKind]bool{},
	}
	for obj, byObject := range opts.ByObject {
		// cache.New, which made c, refused a ByObject type without a GVK.
		if gvk, err := apiutil.GVKForObject(obj, s); err == nil {
			k.multiNamespace[gvk] = len(byObject.Namespaces) > 0 ||
				(byObject.Namespaces == nil && len(opts.DefaultNamespaces) > 0)
		}
	}
	return k
}

// ambiguous returns an object of gvk's Go type with the kind set, if that
// type is typed and registered under more than one kind.
func (k *kindedCache) ambiguous(gvk schema.GroupVersionKind) (client.Object, bool) {
	if gvk.Empty() {
		return nil, false
	}
	if known, ok := k.isAmbiguous.Load(gvk); ok && !known.(bool) {
		return nil, false
	}
	obj, ok := k.newAmbiguous(gvk)
	k.isAmbiguous.Store(gvk, ok)
	return obj, ok
}

func (k *kindedCache) newAmbiguous(gvk schema.GroupVersionKind) (client.Object, bool) {
	obj, err := k.scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata:
		return nil, false
	}
	kinds, _, err := k.scheme.ObjectKinds(obj)
	if err != nil || len(kinds) < 2 {
		return nil, false
	}
	o, ok := obj.(client.Object)
	if !ok {
		return nil, false
	}
	o.GetObjectKind().SetGroupVersionKind(gvk)
	return o, true
}

// GetInformerForKind is controller-runtime's GetInformer of an object of
// gvk's type with the kind, which finds or builds the same informer.
func (k *kindedCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...crcache.InformerGetOption) (crcache.Informer, error) {
	if obj, ok := k.ambiguous(gvk); ok {
		return k.GetInformer(ctx, obj, opts...)
	}
	return k.Cache.GetInformerForKind(ctx, gvk, opts...)
}

// RemoveInformer forgets that a List built the informer.
func (k *kindedCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	if gvk, err := apiutil.GVKForObject(obj, k.scheme); err == nil {
		k.mu.Lock()
		delete(k.built, gvk)
		k.mu.Unlock()
	}
	return k.Cache.RemoveInformer(ctx, obj)
}

// Get gives out the kind it was read as (which it must carry: the type's
// kind is ambiguous otherwise).
func (k *kindedCache) Get(ctx context.Context, key client.ObjectKey, out client.Object, opts ...client.GetOption) error {
	gvk := out.GetObjectKind().GroupVersionKind()
	if err := k.Cache.Get(ctx, key, out, opts...); err != nil {
		return err
	}
	if out.GetObjectKind().GroupVersionKind().Empty() {
		if _, ok := k.ambiguous(gvk); ok {
			out.GetObjectKind().SetGroupVersionKind(gvk)
		}
	}
	return nil
}

// List builds the informer of an ambiguous kind with the kind where
// controller-runtime's List would build the same one, and gives the items
// read without a kind the list's.
func (k *kindedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := apiutil.GVKForObject(list, k.scheme)
	if err != nil {
		return k.Cache.List(ctx, list, opts...) // controller-runtime's error
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	obj, ok := k.ambiguous(gvk)
	if !ok {
		return k.Cache.List(ctx, list, opts...)
	}
	var listOpts client.ListOptions
	listOpts.ApplyOptions(opts)
	multi, found := k.multiNamespace[gvk]
	if !found {
		multi = k.defaultMultiNamespace
	}
	if !k.failOnMissing && (!multi || listOpts.Namespace == "") {
		k.mu.Lock()
		if !k.built[gvk] {
			// A failed look-up (a kind the RESTMapper does not know) is the
			// List's error: controller-runtime's would repeat it,
			// discovery requests included.
			if _, err := k.GetInformer(ctx, obj, crcache.BlockUntilSynced(false)); err != nil {
				k.mu.Unlock()
				return err
			}
			k.built[gvk] = true
		}
		k.mu.Unlock()
	}
	if err := k.Cache.List(ctx, list, opts...); err != nil {
		return err
	}
	return apimeta.EachListItem(list, func(item runtime.Object) error {
		if item.GetObjectKind().GroupVersionKind().Empty() {
			item.GetObjectKind().SetGroupVersionKind(gvk)
		}
		return nil
	})
}

// NeedLeaderElection is the wrapped cache's answer.
func (k *kindedCache) NeedLeaderElection() bool {
	if r, ok := k.Cache.(interface{ NeedLeaderElection() bool }); ok {
		return r.NeedLeaderElection()
	}
	return true
}
