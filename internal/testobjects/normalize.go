package testobjects

import "reflect"

// EmptyToNil sets every empty, non-nil slice and map reachable from v
// through exported fields, pointers, slices, maps and interfaces to nil, in
// place: the form of a typed object decoded from protobuf, which cannot
// tell an empty list or map from an absent one. v must be settable (reached
// through a pointer).
func EmptyToNil(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			EmptyToNil(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				EmptyToNil(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			if !v.IsNil() && v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes
		}
		for i := range v.Len() {
			EmptyToNil(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 {
			if !v.IsNil() && v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			EmptyToNil(e)
			v.SetMapIndex(k, e)
		}
	}
}
