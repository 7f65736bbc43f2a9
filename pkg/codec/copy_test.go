package codec

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCopyRefusedOfContentThatContainsItself: content that holds itself
// (which Encode refuses, as JSON cannot hold it) is copied with the same
// shape and shares nothing with the original, and content deeper than
// the copy goes ends the copy without exhausting the stack.
func TestCopyRefusedOfContentThatContainsItself(t *testing.T) {
	spec := selfMap()
	list := selfSlice()
	obj := withField("spec", spec)
	obj.Object["list"] = list
	obj.Object["again"] = spec // the same map twice: copied once

	cp := New().CopyRefused(obj).(*unstructured.Unstructured)
	gotSpec := cp.Object["spec"].(map[string]any)
	if reflect.ValueOf(gotSpec).Pointer() == reflect.ValueOf(spec).Pointer() {
		t.Fatal("the copy shares spec with the original")
	}
	if reflect.ValueOf(gotSpec["self"]).Pointer() != reflect.ValueOf(gotSpec).Pointer() {
		t.Fatal("the copy of a map holding itself does not hold itself")
	}
	if reflect.ValueOf(cp.Object["again"]).Pointer() != reflect.ValueOf(gotSpec).Pointer() {
		t.Fatal("a map reached twice was copied twice")
	}
	gotList := cp.Object["list"].([]any)
	if &gotList[0] == &list[0] {
		t.Fatal("the copy shares list with the original")
	}
	if inner := gotList[0].([]any); &inner[0] != &gotList[0] {
		t.Fatal("the copy of a slice holding itself does not hold itself")
	}
	gotSpec["a"] = int64(2)
	if spec["a"] != int64(1) {
		t.Fatal("writing into the copy changed the original")
	}

	deep := withField("spec", nested(3*maxNesting))
	deep.Object["replicas"] = 3 // a Go int: refused, so copied by reflection
	cp = New().CopyRefused(deep).(*unstructured.Unstructured)
	outer, inner := cp.Object["spec"].(map[string]any), deep.Object["spec"].(map[string]any)
	for range maxNesting - 1 {
		if reflect.ValueOf(outer).Pointer() == reflect.ValueOf(inner).Pointer() {
			t.Fatal("the copy shares a map within maxNesting levels")
		}
		outer, inner = outer["a"].(map[string]any), inner["a"].(map[string]any)
	}
}
