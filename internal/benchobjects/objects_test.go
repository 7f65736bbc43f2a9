package benchobjects

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The i-th object of a kind is always the same, is labelled, lives in one
// of the bench namespaces and ends its name in i: hack/bench finds its
// objects again by those, and the package benchmarks' populations count on
// the same objects as the benchmark's.
func TestObjectsAreNumberedLabelledAndRepeatable(t *testing.T) {
	for kind, build := range map[string]func(int) metav1.Object{
		"RoleBinding": func(i int) metav1.Object { return RoleBinding(i) },
		"ConfigMap":   func(i int) metav1.Object { return ConfigMap(i) },
		"Pod":         func(i int) metav1.Object { return Pod(i) },
	} {
		seen := map[string]bool{}
		for _, i := range []int{0, 1, 9, 10, 12345, 9_999_999} {
			o := build(i)
			if !reflect.DeepEqual(o, build(i)) {
				t.Errorf("%s %d differs from one call to the next", kind, i)
			}
			if !strings.HasSuffix(o.GetName(), fmt.Sprintf("%07d", i)) || seen[o.GetName()] {
				t.Errorf("%s %d is named %q: want a name of its own ending in %07d", kind, i, o.GetName(), i)
			}
			seen[o.GetName()] = true
			if o.GetLabels()[Label] != LabelValue {
				t.Errorf("%s %d lacks %s=%s: %v", kind, i, Label, LabelValue, o.GetLabels())
			}
			var ns []string
			for n := range Namespaces {
				ns = append(ns, Namespace(n))
			}
			if !strings.HasPrefix(o.GetNamespace(), NamespacePrefix) || !slices.Contains(ns, o.GetNamespace()) {
				t.Errorf("%s %d is in namespace %q, not one of %v", kind, i, o.GetNamespace(), ns)
			}
		}
	}
	if RoleBinding(3).Namespace != Namespace(3) || ConfigMap(3).Name != ConfigMapName(3) || Pod(3).Name != PodName(3) || Pod(3).Namespace != PodNamespace(3) {
		t.Error("an object's namespace or name differs from what the name functions say")
	}
}
