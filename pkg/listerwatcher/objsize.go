package listerwatcher

import (
	"math/bits"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// decodedBytes estimates the heap a decoded object holds: its own
// allocation and everything reachable from it, each allocation rounded up
// as Go's allocator does. Shared values (interned strings, say) count once
// per reference, so it errs high. It reads any object, typed or
// unstructured, through reflection; it does not modify it.
func decodedBytes(obj runtime.Object) int64 {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0
	}
	return int64(allocSize(v.Elem().Type().Size())) + heapBytes(v.Elem(), 0)
}

// maxSizeDepth bounds the walk: API objects are trees a few dozen levels
// deep at most; a cycle (which no decoder builds) stops here.
const maxSizeDepth = 64

var locationType = reflect.TypeFor[time.Location]()

// heapBytes returns the bytes of the allocations v refers to, not counting
// v's own bytes, which its container holds inline.
func heapBytes(v reflect.Value, depth int) int64 {
	if depth > maxSizeDepth {
		return 0
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || v.Type().Elem() == locationType {
			return 0 // a time's Location is a shared global
		}
		return int64(allocSize(v.Type().Elem().Size())) + heapBytes(v.Elem(), depth+1)
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		n := heapBytes(e, depth+1)
		if boxed(e.Kind()) {
			n += int64(allocSize(e.Type().Size()))
		}
		return n
	case reflect.String:
		return int64(allocSize(uintptr(v.Len())))
	case reflect.Slice:
		if v.IsNil() {
			return 0
		}
		n := int64(allocSize(uintptr(v.Cap()) * v.Type().Elem().Size()))
		if refersToHeap(v.Type().Elem()) {
			for i := range v.Len() {
				n += heapBytes(v.Index(i), depth+1)
			}
		}
		return n
	case reflect.Array:
		var n int64
		if refersToHeap(v.Type().Elem()) {
			for i := range v.Len() {
				n += heapBytes(v.Index(i), depth+1)
			}
		}
		return n
	case reflect.Struct:
		var n int64
		for i := range v.NumField() {
			n += heapBytes(v.Field(i), depth+1)
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return 0
		}
		n := mapBytes(v.Len(), v.Type().Key().Size()+v.Type().Elem().Size())
		if refersToHeap(v.Type().Key()) || refersToHeap(v.Type().Elem()) {
			it := v.MapRange()
			for it.Next() {
				n += heapBytes(it.Key(), depth+1) + heapBytes(it.Value(), depth+1)
			}
		}
		return n
	}
	return 0
}

// boxed reports whether an interface holding a value of kind k points to a
// heap copy of it. Pointer-shaped values are stored in the interface
// itself; booleans and empty values point to static data.
func boxed(k reflect.Kind) bool {
	switch k {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Bool:
		return false
	}
	return true
}

// refersToHeap reports whether values of t can refer to other allocations.
func refersToHeap(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return refersToHeap(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if refersToHeap(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}

// mapBytes estimates a Go map of n entries of slot bytes each: a header,
// and groups of 8 slots with a control word, filled to at most 7/8.
func mapBytes(n int, slot uintptr) int64 {
	const header = 48
	if n == 0 {
		return header
	}
	slots := uint(8)
	if n > 8 {
		slots = 1 << bits.Len(uint(n*8/7))
	}
	return header + int64(allocSize(uintptr(slots/8)*(8+8*slot)))
}

// allocSize rounds n up roughly as Go's size classes do: to 8 bytes up to
// 16, to 16 up to 128, to an eighth of the power of two above up to 32 KiB,
// to 8 KiB pages beyond.
func allocSize(n uintptr) uintptr {
	switch {
	case n == 0:
		return 0
	case n <= 16:
		return (n + 7) &^ 7
	case n <= 128:
		return (n + 15) &^ 15
	case n <= 32<<10:
		step := uintptr(1) << (bits.Len(uint(n-1)) - 3)
		return (n + step - 1) &^ (step - 1)
	}
	return (n + 8<<10 - 1) &^ (8<<10 - 1)
}
