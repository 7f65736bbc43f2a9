package intern

import (
	"reflect"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Object interns, in place, the strings of the object obj points to: typed
// API objects (*corev1.Pod, ...), *metav1.PartialObjectMetadata,
// *unstructured.Unstructured, their lists, and any other pointer to a
// struct. It returns obj. Values that are not pointers are left alone: they
// cannot be changed in place.
//
// It follows exported fields, pointers, slices, maps and interfaces, and
// replaces every string it finds by its canonical instance, except an
// object's own name, UID and resourceVersion, which no other object shares.
// The strings of an object (of each item of a list) are counted as its
// UID's: interning another version of it, or a value it holds twice, does
// not bring a value closer to an entry (see Table).
// Byte slices (FieldsV1, Secret data, raw extensions) are never shared: their
// bytes are writable, and a write through one object would show in every
// other. A slice with spare capacity is replaced by a copy of its exact
// length, as DeepCopy would make it. Nothing else changes: the object
// encodes, compares and deep-copies as before. A value that points back at
// itself (only one built in the process can) is walked only so far (10,000
// levels, 2^20 pointers, slices, maps and interfaces in all); strings past
// that are left as they are.
//
// The caller must own obj: no other goroutine may read it meanwhile (an
// informer's transform owns the freshly decoded object it is given).
func (t *Table) Object(obj any) any {
	w := walker{t: t, owner: anonymous}
	switch o := obj.(type) {
	case nil:
	case *unstructured.Unstructured:
		if o != nil {
			w.jsonObject(o.Object, true)
		}
	case *unstructured.UnstructuredList:
		if o != nil {
			w.jsonObject(o.Object, true)
			for i := range o.Items {
				w.jsonObject(o.Items[i].Object, true)
			}
		}
	default:
		v := reflect.ValueOf(obj)
		if v.Kind() == reflect.Pointer && !v.IsNil() && w.enter() {
			w.walk(v.UnsafePointer(), planFor(v.Type().Elem()))
			w.leave()
		}
	}
	return obj
}

// Transform interns obj's strings (see Object) and returns it. Its signature
// is client-go's cache.TransformFunc, so any informer can use it:
//
//	informer.SetTransform(intern.Default().Transform)
func (t *Table) Transform(obj any) (any, error) {
	return t.Object(obj), nil
}

// uniqueMetadata are the keys of an unstructured object's metadata whose
// values identify the object; see uniqueFields.
var uniqueMetadata = map[string]bool{"name": true, "uid": true, "resourceVersion": true, "selfLink": true}

// jsonObject interns the keys and values of a JSON object as
// encoding/json decodes it. At the top of an object (top), the values that
// identify it are left alone, and its strings are counted as its UID's.
func (w *walker) jsonObject(m map[string]any, top bool) {
	if m == nil || !w.enter() {
		return
	}
	defer w.leave()
	if top {
		defer w.restoreOwner(w.owner)
		md, _ := m["metadata"].(map[string]any)
		uid, _ := md["uid"].(string)
		w.owner = w.t.ownerOf(uid)
	}
	for k, v := range m {
		ck := w.str(k)
		changed := unsafe.StringData(ck) != unsafe.StringData(k)
		switch x := v.(type) {
		case string:
			if c := w.str(x); unsafe.StringData(c) != unsafe.StringData(x) {
				v, changed = c, true
			}
		case map[string]any:
			if top && k == "metadata" {
				w.metadata(x)
			} else {
				w.jsonObject(x, false)
			}
		case []any:
			w.jsonArray(x)
		}
		if changed {
			m[ck] = v
		}
	}
}

// metadata interns an unstructured object's metadata but its identity.
func (w *walker) metadata(m map[string]any) {
	if m == nil || !w.enter() {
		return
	}
	defer w.leave()
	for k, v := range m {
		ck := w.str(k)
		changed := unsafe.StringData(ck) != unsafe.StringData(k)
		switch x := v.(type) {
		case string:
			if uniqueMetadata[k] {
				break
			}
			if c := w.str(x); unsafe.StringData(c) != unsafe.StringData(x) {
				v, changed = c, true
			}
		case map[string]any:
			w.jsonObject(x, false)
		case []any:
			w.jsonArray(x)
		}
		if changed {
			m[ck] = v
		}
	}
}

func (w *walker) jsonArray(a []any) {
	if len(a) == 0 || !w.enter() {
		return
	}
	defer w.leave()
	for i, v := range a {
		switch x := v.(type) {
		case string:
			if c := w.str(x); unsafe.StringData(c) != unsafe.StringData(x) {
				a[i] = c
			}
		case map[string]any:
			w.jsonObject(x, false)
		case []any:
			w.jsonArray(x)
		}
	}
}
