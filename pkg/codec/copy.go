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
// no such values for a reader to expect to own.
func (c *Codec) CopyRefused(obj runtime.Object) runtime.Object {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil || checkJSONValue(u.Object) == nil {
		return obj.DeepCopyObject()
	}
	content, _ := copyValue(reflect.ValueOf(u.Object)).Interface().(map[string]any)
	return &unstructured.Unstructured{Object: content}
}

// copyValue returns a copy of v that shares no map, slice or array with
// it.
func copyValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(copyValue(v.Elem()))
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), copyValue(it.Value()))
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(copyValue(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(copyValue(v.Index(i)))
		}
		return out
	default:
		return v
	}
}
