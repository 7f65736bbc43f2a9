package intern

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/leaninformer/leaninformer/internal/benchsize"
	"github.com/leaninformer/leaninformer/internal/memstat"
	"github.com/leaninformer/leaninformer/internal/testobjects"
)

type protoList interface {
	k8sruntime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
	Reset()
}

// BenchmarkIngest measures what an informer spends per object as it lists:
// decoding a protobuf page and copying each object out of it, as client-go
// does, and the same with interning, side by side. Objects are the
// benchmark's, as a kube-apiserver returned them (internal/testobjects).
func BenchmarkIngest(b *testing.B) {
	for _, kind := range []struct {
		name string
		list func(*testing.B) protoList
	}{
		{"rolebindings", func(b *testing.B) protoList { return pageOf[rbacv1.RoleBindingList](b, "rolebindings") }},
		{"configmaps", func(b *testing.B) protoList { return pageOf[corev1.ConfigMapList](b, "configmaps") }},
		{"pods", func(b *testing.B) protoList { return pageOf[corev1.PodList](b, "pods") }},
	} {
		list := kind.list(b)
		page, err := list.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		for _, interning := range []bool{false, true} {
			// Compare with: benchstat -col /intern
			b.Run(fmt.Sprintf("kind=%s/intern=%v", kind.name, interning), func(b *testing.B) {
				tab := NewTable()
				objects := 0
				b.ReportAllocs()
				for b.Loop() {
					list.Reset()
					if err := list.Unmarshal(page); err != nil {
						b.Fatal(err)
					}
					items, err := meta.ExtractListWithAlloc(list)
					if err != nil {
						b.Fatal(err)
					}
					if interning {
						for _, o := range items {
							tab.Object(o)
						}
					}
					objects += len(items)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(objects), "ns/object")
			})
		}
	}
}

// pageOf returns the server objects of kind as a list of 200 objects
// (copies of them, as on a page of a large LIST).
func pageOf[T any, L interface {
	protoList
	*T
}](b *testing.B, kind string) protoList {
	b.Helper()
	objs := realObjects(b, kind)
	var all []k8sruntime.Object
	for len(all) < 200 {
		for _, o := range objs {
			all = append(all, o.DeepCopyObject())
		}
	}
	list := L(new(T))
	if err := meta.SetList(list, all[:200]); err != nil {
		b.Fatal(err)
	}
	return list
}

// BenchmarkString measures interning a value the table shares.
func BenchmarkString(b *testing.B) {
	tab := NewTable()
	values := []string{"rbac.authorization.k8s.io", "app.kubernetes.io/managed-by", "Update", "leaninformer-bench-07"}
	for _, v := range values {
		tab.String(copyOf(v))
	}
	i := 0
	for b.Loop() {
		tab.String(values[i%len(values)])
		i++
	}
}

// BenchmarkHeld reports what 10k distinct objects of each kind hold once
// decoded (the live heap after a full GC over the heap before, per object),
// held in a slice, plain as decoded and interned by a Table, side by side in
// the same run, and of the interned figure the share of the table itself
// (its shards' maps and weak pointers; the strings it shares are in the
// objects' share). The timed loop is empty: the figures are memory.
//
//	go test -run '^$' -bench Held ./pkg/intern/
func BenchmarkHeld(b *testing.B) {
	for _, kind := range testobjects.Kinds {
		pop := testobjects.NewPopulation(b, kind)
		var plain float64
		for _, interning := range []bool{false, true} {
			// Compare with: benchstat -col /intern
			b.Run(fmt.Sprintf("kind=%s/intern=%v", kind, interning), func(b *testing.B) {
				n := benchsize.N(10_000)
				base := memstat.HeapAfterGC()
				var tab *Table // only the interned rows have one: the plain rows hold nothing else
				if interning {
					tab = NewTable()
				}
				held := make([]any, n)
				for i := range held {
					held[i] = pop.Object(i)
					if tab != nil {
						held[i] = tab.Object(held[i])
					}
				}
				all := memstat.HeapAfterGC()
				runtime.KeepAlive(tab)
				tab = nil
				objects := memstat.HeapAfterGC()
				for b.Loop() {
				}
				perObject := float64(all-base) / float64(n)
				b.ReportMetric(perObject, "held-B/object")
				if interning {
					b.ReportMetric(float64(all-objects)/float64(n), "table-B/object")
					if plain > 0 {
						b.ReportMetric(perObject/plain, "x-plain")
					}
				} else {
					plain = perObject
				}
				runtime.KeepAlive(held)
			})
		}
	}
}
