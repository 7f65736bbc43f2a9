package codec

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// The generated protobuf of runtime.RawExtension writes Raw alone. Objects
// from the API server carry Raw and no Object, but one built in the process
// (by a fake clientset, a transform, a test) may hold an Object, alone or
// beside Raw: encoding it would silently lose the Object, so Encode refuses
// it and the store keeps the object decoded.

var rawExtensionType = reflect.TypeFor[runtime.RawExtension]()

// rawExtensionTypes caches, by type, whether a RawExtension is reachable
// from it: most types reach none, and are never walked.
var rawExtensionTypes sync.Map // reflect.Type → bool

func mayHoldRawExtension(t reflect.Type) bool {
	if holds, ok := rawExtensionTypes.Load(t); ok {
		return holds.(bool)
	}
	holds := reachesRawExtension(t, map[reflect.Type]bool{})
	rawExtensionTypes.Store(t, holds)
	return holds
}

func reachesRawExtension(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == rawExtensionType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return reachesRawExtension(t.Elem(), seen)
	case reflect.Map:
		return reachesRawExtension(t.Key(), seen) || reachesRawExtension(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if reachesRawExtension(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// holdsRawExtensionObject reports whether v holds a RawExtension with an
// Object, which protobuf does not write.
func holdsRawExtensionObject(v reflect.Value) bool {
	if !mayHoldRawExtension(v.Type()) {
		return false
	}
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && holdsRawExtensionObject(v.Elem())
	case reflect.Struct:
		if v.Type() == rawExtensionType {
			re := v.Interface().(runtime.RawExtension)
			return re.Object != nil
		}
		for i := range v.NumField() {
			if holdsRawExtensionObject(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if holdsRawExtensionObject(v.Index(i)) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if holdsRawExtensionObject(it.Key()) || holdsRawExtensionObject(it.Value()) {
				return true
			}
		}
	}
	return false
}
