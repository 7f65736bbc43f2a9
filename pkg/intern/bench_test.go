package intern

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

type protoList interface {
	runtime.Object
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
	var all []runtime.Object
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
