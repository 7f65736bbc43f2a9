package intern

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/leaninformer/leaninformer/internal/testobjects"
)

// TestObjectCountsVersionsOfAnObjectOnce interns every object of a
// population once, as a list does, and in another table three times, as a
// list and two updates (or relists) of each do, keeping only the last
// version as a store would. Versions of one object (one UID) are one
// object: a value only that object has must get no entry however often the
// object changes, so both tables must end with the same entries.
func TestObjectCountsVersionsOfAnObjectOnce(t *testing.T) {
	const n = 500
	for _, kind := range testobjects.Kinds {
		t.Run(kind, func(t *testing.T) {
			pop := testobjects.NewPopulation(t, kind)
			entries := map[int]int{}
			for _, versions := range []int{1, 3} {
				tab := NewTable()
				stored := make([]any, n)
				for i := range stored {
					for range versions {
						stored[i] = tab.Object(pop.Object(i)) // a fresh decode each time
					}
				}
				runtime.GC()
				tab.Sweep()
				entries[versions] = tab.Len()
				runtime.KeepAlive(stored)
			}
			if entries[3] != entries[1] {
				t.Errorf("%d objects interned in three versions each left %d table entries, in one version %d: versions of one object counted as more objects", n, entries[3], entries[1])
			}
		})
	}
}

// TestObjectCountsRepeatsWithinAnObjectOnce: a value one object holds three
// times (a pod's IP is in status.podIP and status.podIPs) is still a value
// of one object, and gets no entry. Typed, unstructured and in a list.
func TestObjectCountsRepeatsWithinAnObjectOnce(t *testing.T) {
	own := func(i int) string { return fmt.Sprintf("value-of-object-%04d-only", i) }
	typed := func(i int) any {
		v := own(i)
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), UID: testobjects.UID(i), Labels: map[string]string{"k": strings.Clone(v)}},
			Data:       map[string]string{"a": strings.Clone(v), "b": strings.Clone(v), "c": strings.Clone(v)},
		}
	}
	unstr := func(i int) *unstructured.Unstructured {
		v := own(i)
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%04d", i), "uid": string(testobjects.UID(i)), "labels": map[string]any{"k": strings.Clone(v)}},
			"data":     map[string]any{"a": strings.Clone(v), "b": strings.Clone(v), "c": strings.Clone(v)},
		}}
	}
	for _, tc := range []struct {
		name   string
		object func(i int) any
	}{
		{"typed", typed},
		{"unstructured", func(i int) any { return unstr(i) }},
		{"typed list", func(i int) any {
			return &corev1.ConfigMapList{Items: []corev1.ConfigMap{*typed(2 * i).(*corev1.ConfigMap), *typed(2*i + 1).(*corev1.ConfigMap)}}
		}},
		{"unstructured list", func(i int) any {
			return &unstructured.UnstructuredList{Object: map[string]any{}, Items: []unstructured.Unstructured{*unstr(2 * i), *unstr(2*i + 1)}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := NewTable()
			kept := make([]any, 100)
			for i := range kept {
				kept[i] = tab.Object(tc.object(i))
			}
			// Keys ("k", "a", "data", "metadata", "uid", ...) are every
			// object's: shared.
			if got := tab.Len(); got > 10 {
				t.Errorf("the table holds %d entries, want at most the 10 keys all objects share: a value one object holds three times got one", got)
			}
			runtime.KeepAlive(kept)
		})
	}
}
