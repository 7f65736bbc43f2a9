package informer

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/internal/testobjects"
)

// customKinds are custom resources as a controller reads them: typed
// (testobjects.Gizmo: the codec refuses it, the encoded store keeps it
// decoded) and unstructured, from a dynamic informer (CBOR-encoded).
var customKinds = []randomKind{
	{
		list: &testobjects.GizmoList{}, example: &testobjects.Gizmo{}, gvk: testobjects.GizmoGVK,
		object: func(g *testobjects.Random, i int) kruntime.Object { return g.Gizmo(i) },
		exact:  true, refused: true,
	},
	{
		list: &unstructured.UnstructuredList{}, example: &unstructured.Unstructured{}, gvk: testobjects.GizmoGVK,
		object: func(g *testobjects.Random, i int) kruntime.Object { return g.UnstructuredGizmo(i) },
		exact:  true,
	},
}

// TestDifferentialEncodedStoreRandomCustomResources runs the differential
// of TestDifferentialEncodedStoreRandomObjects on custom resources: random
// typed Gizmos (maps, slices, pointers, nested structs, pointer times,
// quantities, a RawExtension, free-form JSON), which the encoded store
// keeps decoded as the codec refuses them, and random unstructured ones
// (int64s, float64s, bools, nils, nested and empty maps and slices), which
// it keeps as CBOR. Every handler call and read (List, GetByKey, ByIndex,
// ListByLabels) must equal the plain informer's, with the kind under the
// read kind; a handler given an object kept decoded gets the stored object,
// as client-go's; writes into everything else handed out (every read, a
// decoded handler object) leave the store as it was.
func TestDifferentialEncodedStoreRandomCustomResources(t *testing.T) {
	steps := 30
	if testing.Short() {
		steps = 10
	}
	for k, kind := range customKinds {
		for _, reuse := range []bool{true, false} {
			name := fmt.Sprintf("%T, relist reuse %v", kind.example, reuse)
			t.Run(name, func(t *testing.T) {
				common := []Option{WithStrategy(strategies[k%len(strategies)]), WithRelistReuse(reuse), WithPageSize(4)}
				seed := int64(k+1) * 104729
				if reuse {
					seed++
				}
				h := newRandomHistory(t, k, kind, seed, common)
				h.run(steps)
				for i, v := range randomVariants {
					if !v.encoded {
						continue
					}
					stats := h.infs[i].indexer.CodecStats()
					if refused := stats.Unencoded > 0; refused != kind.refused {
						t.Errorf("%s: CodecStats %+v: the codec refused the objects: %v, want %v", v.name, stats, refused, kind.refused)
					}
				}
				wanted := []string{"relist delete", "update of labels", "update of a pointer time"}
				if reuse {
					wanted = append(wanted, "relist reuse")
				}
				for _, what := range wanted {
					if h.covered[what] == 0 && !t.Failed() {
						t.Errorf("the history had no %s (covered: %v)", what, h.covered)
					}
				}
			})
		}
	}
}

// The store's own Add, Update, Replace and Transaction leave the caller's
// random custom resources as the caller gave them (client-go's store does:
// no kind set, no string interned, no slice trimmed), under every variant
// of the differential; reads then return them in the variant's form. An
// encoded store that keeps its own copy (CBOR; a refused object given the
// read kind) is not reached by the caller's later writes, nor by writes
// into what it read.
func TestDirectWritesLeaveRandomCustomResourcesAlone(t *testing.T) {
	type write struct {
		name string
		do   func(s toolscache.Store, obj kruntime.Object) error
	}
	writes := []write{
		{"Add", func(s toolscache.Store, obj kruntime.Object) error { return s.Add(obj) }},
		{"Update", func(s toolscache.Store, obj kruntime.Object) error { return s.Update(obj) }},
		{"Replace", func(s toolscache.Store, obj kruntime.Object) error { return s.Replace([]any{obj}, "7") }},
		{"Transaction", func(s toolscache.Store, obj kruntime.Object) error {
			if err := s.(toolscache.TransactionStore).Transaction(toolscache.Transaction{Type: toolscache.TransactionTypeUpdate, Object: obj}); err != nil {
				return err
			}
			return nil
		}},
	}
	for k, kind := range customKinds {
		g := testobjects.NewRandom(int64(k) + 31)
		h := &randomHistory{t: t, kind: kind}
		for _, v := range append([]randomVariant{{name: "plain", opts: func(schema.GroupVersionKind) []Option { return nil }}}, randomVariants...) {
			inf := NewSharedIndexInformerWithOptions(&toolscache.ListWatch{}, kind.example,
				toolscache.SharedIndexInformerOptions{Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}},
				v.opts(kind.gvk)...)
			store := inf.GetStore()
			for n := range 12 {
				w := writes[n%len(writes)]
				// The intern table has seen these strings: interning the
				// caller's object would replace them.
				seen := kind.object(g, n)
				obj := seen.DeepCopyObject()
				if err := store.Add(seen); err != nil {
					t.Fatal(err)
				}
				accessor(obj).SetResourceVersion(fmt.Sprint(n + 10))
				given, before := obj.DeepCopyObject(), memoryOf(obj)
				if err := w.do(store, obj); err != nil {
					t.Fatalf("%T %s: %s: %v", kind.example, v.name, w.name, err)
				}
				what := fmt.Sprintf("%T %s: %s of object %d", kind.example, v.name, w.name, n)
				if !reflect.DeepEqual(obj, given) {
					t.Fatalf("%s changed the caller's object:\n%s", what, objectDiff(given, obj))
				}
				if after := memoryOf(obj); !slices.Equal(before, after) {
					t.Fatalf("%s replaced strings or slices of the caller's object (interned or trimmed them)", what)
				}
				key := objKey(obj)
				read := func() any {
					got, ok, err := store.GetByKey(key)
					if err != nil || !ok {
						t.Fatalf("%s: GetByKey(%s): %v, %v", what, key, ok, err)
					}
					return got
				}
				want := h.form(v, given, true)
				if got := read(); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: a read returned another object than was written:\n%s", what, objectDiff(want, got))
				}
				if !v.encoded {
					continue
				}
				testobjects.Poison(reflect.ValueOf(read()))
				if own := !kind.refused || v.readKind && given.GetObjectKind().GroupVersionKind().Empty(); own {
					// The store holds its own copy: an encoding, or a
					// refused object given the read kind it lacked (one
					// with a kind is kept as given, as client-go's store
					// keeps it).
					testobjects.Poison(reflect.ValueOf(obj))
				}
				if got := read(); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: a write into a read or the caller's object reached the store:\n%s", what, objectDiff(want, got))
				}
			}
			if v.encoded {
				if stats := inf.indexer.CodecStats(); (stats.Unencoded > 0) != kind.refused {
					t.Errorf("%T %s: CodecStats %+v, refused: want %v", kind.example, v.name, stats, kind.refused)
				}
			}
		}
	}
}

// memoryOf lists where the strings and slices reachable from v's exported
// fields, maps and interfaces are (data pointer, and a slice's capacity), in
// an order that is the same for equal values of unchanged maps.
func memoryOf(v any) []uintptr {
	var out []uintptr
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			out = append(out, uintptr(unsafe.Pointer(unsafe.StringData(v.String()))))
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice:
			out = append(out, v.Pointer(), uintptr(v.Cap()))
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			for _, k := range keys {
				walk(k)
				walk(v.MapIndex(k))
			}
		}
	}
	walk(reflect.ValueOf(v))
	return out
}
