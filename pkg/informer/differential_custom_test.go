package informer

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"

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
