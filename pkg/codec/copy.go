package codec

import (
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// CopyRefused returns a deep copy of obj, an object Encode refused, for a
// store to hand out in its stead (it makes Codec a cache.RefusedCopier).
// Unstructured content that Encode refuses (a Go int, a map[string]string,
// ...) is exactly what unstructured's DeepCopyObject panics on, so such
// content is copied by reflection instead: every map, slice and array is
// copied; pointers, structs and channels in it are shared, since JSON has
// no such values for a reader to expect to own. Content that contains
// itself is copied with the same shape; past maxNesting levels the copy
// shares what lies deeper, so that no content can exhaust the stack.
func (c *Codec) CopyRefused(obj runtime.Object) runtime.Object {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil || checkJSONValue(u.Object, 1) == nil {
		return obj.DeepCopyObject()
	}
	cp := copier{copies: map[shared]reflect.Value{}}
	content, _ := cp.value(reflect.ValueOf(u.Object), 1).Interface().(map[string]any)
	return &unstructured.Unstructured{Object: content}
}

// copier copies a value, each map and slice in it once.
type copier struct {
	// copies holds the copy of each map and slice already copied, so that
	// one reached twice (or from inside itself) is copied once.
	copies map[shared]reflect.Value
}

// shared identifies a map or slice by what its copies would share.
type shared struct {
	typ      reflect.Type
	ptr      uintptr
	len, cap int
}

// value returns a copy of v, at the given nesting depth, that shares no
// map, slice or array with it.
func (cp *copier) value(v reflect.Value, depth int) reflect.Value {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(cp.value(v.Elem(), depth))
		return out
	case reflect.Map:
		if v.IsNil() || depth > maxNesting {
			return v
		}
		id := shared{typ: v.Type(), ptr: v.Pointer()}
		if out, ok := cp.copies[id]; ok {
			return out
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		cp.copies[id] = out
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), cp.value(it.Value(), depth+1))
		}
		return out
	case reflect.Slice:
		if v.IsNil() || depth > maxNesting {
			return v
		}
		id := shared{typ: v.Type(), ptr: v.Pointer(), len: v.Len(), cap: v.Cap()}
		if out, ok := cp.copies[id]; ok {
			return out
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		cp.copies[id] = out
		for i := range v.Len() {
			out.Index(i).Set(cp.value(v.Index(i), depth+1))
		}
		return out
	case reflect.Array:
		if depth > maxNesting {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(cp.value(v.Index(i), depth+1))
		}
		return out
	default:
		return v
	}
}
