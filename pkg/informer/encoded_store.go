package informer

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/codec"
	"github.com/leaninformer/leaninformer/pkg/intern"
)

// WithEncodedStore makes the informer keep its objects encoded (package
// codec: protobuf for built-in types and PartialObjectMetadata, CBOR for
// unstructured objects; codec.WithCompression adds S2 compression with a
// dictionary per kind), with each object's key, UID, resourceVersion and
// index values beside its bytes.
// The store then holds a fraction of one decoded copy of the collection:
// see the README's "Encoded store" for figures.
//
// Every read of the store (GetStore, GetIndexer, listers) decodes a fresh
// object that the caller owns: writing into it never changes the store, so
// client-go's cache mutation detector has nothing to find and is not fed.
// Handlers receive objects decoded from the store too, of the same form as
// every read (package codec's README says what the round trip changes, for
// objects from the API server nothing), so handlers comparing an old and a
// new object see no spurious change: a live event's objects are decoded
// once and shared by all handlers; a relist's or resync's are decoded as
// each handler is called, so handler queues never hold decoded copies of
// the store. A delete's object is the one the watch delivered. Objects the
// codec refuses (typed custom resources: they have no protobuf) are kept
// decoded and counted (the store's CodecStats); reads get copies of them,
// but handlers are handed the stored object, as client-go's are, so a
// handler must not write into it (and no mutation detector watches it).
//
// With NewCacheWith, it also makes controller-runtime skip its DeepCopy on
// reads (DefaultUnsafeDisableDeepCopy), unless the cache options set it,
// and every typed object that reads and handlers get (a live delete's
// too) carries its kind, which controller-runtime's reader would otherwise
// set on its copies; a client-go informer's handlers get typed objects
// without it. A read with controller-runtime's UnsafeDisableDeepCopy is a
// fresh decode as well: writing into it never changes the cache, where
// controller-runtime's own cache hands out the stored object.
func WithEncodedStore(opts ...codec.Option) Option {
	return func(c *config) {
		c.encoded = true
		c.codecOpts = opts
	}
}

// indexerOptions are the options of the informer's indexer.
func (c *config) indexerOptions() []cache.Option {
	opts := []cache.Option{cache.WithRelistReuse(c.relistReuse)}
	if c.encoded {
		enc := codec.New(c.codecOpts...)
		var cc storeCodec = enc
		var kinds *kindSetter
		if c.readKind != nil {
			kinds = &kindSetter{Codec: enc, gvk: *c.readKind}
			cc = *kinds
		}
		if c.interner != nil {
			cc = internRefused{storeCodec: cc, kinds: kinds, table: c.interner}
		}
		opts = append(opts, cache.WithCodec(cc))
	}
	return opts
}

// storeCodec is what an encoded store's codec provides: the codec's
// methods the store looks for.
type storeCodec interface {
	cache.Codec
	cache.LabelReader
	cache.RefusedCopier
}

// internRefused interns the objects the codec refuses, which the store
// then keeps decoded (WithInterning with WithEncodedStore): interning the
// others would be work for nothing, their strings gone once encoded.
type internRefused struct {
	storeCodec
	kinds *kindSetter // nil without a read kind
	table *intern.Table
}

// FinishRefused gives obj the read kind, if any, and interns it: in place
// when the store owns obj (the informer's transformed object); a caller's
// object handed to the store's Add, Update, Replace or Transaction is left
// as it is, as client-go's store leaves it, and interned only in the copy
// that the kind needed.
func (c internRefused) FinishRefused(obj any, owned bool) any {
	kept, copied := obj, false
	if c.kinds != nil {
		kept, copied = c.kinds.finish(obj, owned)
	}
	if owned || copied {
		c.table.Object(kept)
	}
	return kept
}

// IndexForm gives index functions an encoded object with the read kind,
// as decodes have it (see kindSetter.IndexForm).
func (c internRefused) IndexForm(obj any, owned bool) any {
	if c.kinds == nil {
		return obj
	}
	return c.kinds.IndexForm(obj, owned)
}

// withReadKind makes an encoded store's objects stored without TypeMeta
// (typed list items) decode with gvk. controller-runtime's cache reader sets
// the kind on the copies it returns; with the encoded store it makes no
// copies (see cacheOptions), so NewCacheWith has the store do it.
func withReadKind(gvk schema.GroupVersionKind) Option {
	return func(c *config) { c.readKind = &gvk }
}

// kindSetter gives decoded objects without a kind the informer's.
type kindSetter struct {
	*codec.Codec
	gvk schema.GroupVersionKind
}

var (
	_ cache.LabelReader   = kindSetter{}
	_ cache.RefusedCopier = kindSetter{}
)

// FinishRefused gives an object the codec refused (a typed custom
// resource), which the store then keeps as it is, the kind, before the
// store holds it: handlers are handed the stored object itself (an initial
// list's, a late handler's, a relist's, a live update's old one), so it
// must carry the kind that decoded objects and reads' copies carry. A
// caller's object handed to the store's Add, Update, Replace or
// Transaction (not owned) stays as it is: the store keeps a copy with the
// kind.
func (k kindSetter) FinishRefused(obj any, owned bool) any {
	kept, _ := k.finish(obj, owned)
	return kept
}

// finish is FinishRefused, reporting whether it made a copy.
func (k kindSetter) finish(obj any, owned bool) (kept any, copied bool) {
	o, ok := obj.(runtime.Object)
	if !ok || !o.GetObjectKind().GroupVersionKind().Empty() {
		return obj, false
	}
	if !owned {
		o, copied = o.DeepCopyObject(), true
	}
	o.GetObjectKind().SetGroupVersionKind(k.gvk)
	return o, copied
}

// IndexForm returns obj, which the codec encoded, as index functions see
// it: with the kind its decodes get, as the objects the codec refuses are
// kept and as AddIndexers decodes objects, so that an index function
// reading TypeMeta sees one kind for them all. An object handed over to the
// store (owned: the informer's own writes, whose objects the store drops
// once encoded) is given the kind in place; a caller's without one is
// copied shallowly (its maps and slices shared), obj left as it is.
func (k kindSetter) IndexForm(obj any, owned bool) any {
	o, ok := obj.(runtime.Object)
	if !ok || !o.GetObjectKind().GroupVersionKind().Empty() {
		return obj
	}
	if owned {
		o.GetObjectKind().SetGroupVersionKind(k.gvk)
		return obj
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	shallow, ok := cp.Interface().(runtime.Object)
	if !ok {
		return obj
	}
	shallow.GetObjectKind().SetGroupVersionKind(k.gvk)
	return shallow
}

func (k kindSetter) Decode(data []byte) (any, error) {
	obj, err := k.Codec.Decode(data)
	k.setKind(obj)
	return obj, err
}

// MatchLabels is the codec's (the store's ListByLabels reads labels with
// it); an object it decodes to tell gets the kind too.
func (k kindSetter) MatchLabels(sel labels.Selector) func(data []byte) (bool, any, error) {
	match := k.Codec.MatchLabels(sel)
	return func(data []byte) (bool, any, error) {
		matches, obj, err := match(data)
		k.setKind(obj)
		return matches, obj, err
	}
}

// CopyRefused gives the copies reads hand out of objects the codec refused
// (typed custom resources: they have no protobuf) the kind too.
func (k kindSetter) CopyRefused(obj runtime.Object) runtime.Object {
	cp := k.Codec.CopyRefused(obj)
	k.setKind(cp)
	return cp
}

// readKindSetter returns what sets the read kind on an object that reaches
// handlers without passing through the store (a live delete's), or nil
// without an encoded store or a read kind.
func (c *config) readKindSetter() func(obj any) {
	if !c.encoded || c.readKind == nil {
		return nil
	}
	return kindSetter{gvk: *c.readKind}.setKind
}

func (k kindSetter) setKind(obj any) {
	if o, ok := obj.(runtime.Object); ok && o.GetObjectKind().GroupVersionKind().Empty() {
		o.GetObjectKind().SetGroupVersionKind(k.gvk)
	}
}

// mutationDetector returns client-go's cache mutation detector (a no-op
// unless KUBE_CACHE_MUTATION_DETECTOR is set), or none for an encoded
// store, which no caller can mutate.
func (c *config) mutationDetector(name string) toolscache.MutationDetector {
	if c.encoded {
		return noMutationDetector{}
	}
	return toolscache.NewCacheMutationDetector(name)
}

type noMutationDetector struct{}

func (noMutationDetector) AddObject(any)       {}
func (noMutationDetector) Run(<-chan struct{}) {}

// decoder turns what the store hands out without decoding (a Diff's
// objects, a snapshot of ListStored) into objects as a handler is called.
type decoder func(stored any) (any, error)

// decodeForHandler decodes stored for a handler call; an object that cannot
// be decoded (only a broken codec does that) is reported and the call
// skipped.
func (d decoder) decodeForHandler(stored any, what string) (any, bool) {
	obj, err := d(stored)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("skipping %s: %w", what, err))
		return nil, false
	}
	return obj, true
}

// decodeTombstone decodes the object a tombstone carries.
func (d decoder) decodeTombstone(tomb toolscache.DeletedFinalStateUnknown) (toolscache.DeletedFinalStateUnknown, bool) {
	obj, ok := d.decodeForHandler(tomb.Obj, "OnDelete of "+tomb.Key)
	if !ok {
		return tomb, false
	}
	tomb.Obj = obj
	return tomb, true
}

var (
	_ cache.RefusedFinisher = kindSetter{}
	_ cache.RefusedFinisher = internRefused{}
	_ cache.IndexFormer     = kindSetter{}
	_ cache.IndexFormer     = internRefused{}
)
