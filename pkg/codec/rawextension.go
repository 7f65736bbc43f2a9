package codec

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// The generated protobuf of runtime.RawExtension writes Raw alone. Objects
// from the API server always carry Raw, but one built in the process (by a
// fake clientset, a transform, a test) may hold its content in Object only:
// encoding it would silently lose that content, so Encode refuses it and
// the store keeps the object decoded.

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

// holdsObjectOnlyRawExtension reports whether v holds a RawExtension whose
// content is in Object and not in Raw.
func holdsObjectOnlyRawExtension(v reflect.Value) bool {
	if !mayHoldRawExtension(v.Type()) {
		return false
	}
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && holdsObjectOnlyRawExtension(v.Elem())
	case reflect.Struct:
		if v.Type() == rawExtensionType {
			re := v.Interface().(runtime.RawExtension)
			return re.Raw == nil && re.Object != nil
		}
		for i := range v.NumField() {
			if holdsObjectOnlyRawExtension(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if holdsObjectOnlyRawExtension(v.Index(i)) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if holdsObjectOnlyRawExtension(it.Key()) || holdsObjectOnlyRawExtension(it.Value()) {
				return true
			}
		}
	}
	return false
}
