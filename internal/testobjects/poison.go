package testobjects

import (
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Poison changes, in place, everything of v a caller can write: strings,
// numbers, bools, bytes, slice elements and map entries, through pointers
// and interfaces.
func Poison(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "~")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Struct:
		switch x := v.Interface().(type) {
		case time.Time:
			v.Set(reflect.ValueOf(x.Add(time.Hour)))
			return
		case resource.Quantity:
			v.Set(reflect.ValueOf(resource.MustParse("42")))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				Poison(v.Field(i))
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			Poison(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			Poison(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			Poison(e) // writes what the entry points to in place
			v.SetMapIndex(k, e)
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		switch e := v.Elem(); e.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice:
			Poison(e)
		default:
			c := reflect.New(e.Type()).Elem()
			c.Set(e)
			Poison(c)
			v.Set(c)
		}
	}
}
