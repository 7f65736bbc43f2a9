package testobjects

import (
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProtobufForm changes v, in place, to what decoding its protobuf encoding
// gives, which cannot tell some representations apart:
//   - an empty slice or map is nil (protobuf cannot tell it from an
//     absent one), except
//   - a []byte field keeps nil and empty apart (the generated code writes
//     an empty one and decodes it as empty), and a []byte value of a map
//     (ConfigMap.BinaryData, Secret.Data) is never nil: a nil one decodes
//     as empty;
//   - a resource.Quantity is what decoding its protobuf gives: in
//     canonical form (see package codec's README; compare quantities with
//     Cmp where that matters), its string form cached;
//   - a metav1.Time keeps whole seconds and a metav1.MicroTime whole
//     microseconds; both are in the local time zone (as decoding JSON gives
//     them too), except a zero one, which is time.Time{} whatever its zone.
//
// It walks exported fields, pointers, slices, maps and interfaces. v must be
// settable (reached through a pointer).
func ProtobufForm(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			ProtobufForm(v.Elem())
		}
	case reflect.Struct:
		if setProtobufValue(v) {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				ProtobufForm(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes: kept as they are
		}
		if v.Len() == 0 {
			if !v.IsNil() && v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for i := range v.Len() {
			ProtobufForm(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 {
			if !v.IsNil() && v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		bytesValues := v.Type().Elem() == bytesType
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			if bytesValues {
				if e.Len() == 0 {
					e.Set(reflect.ValueOf([]byte{}))
				}
			} else {
				ProtobufForm(e)
			}
			v.SetMapIndex(k, e)
		}
	}
}

var (
	bytesType     = reflect.TypeFor[[]byte]()
	timeType      = reflect.TypeFor[metav1.Time]()
	microTimeType = reflect.TypeFor[metav1.MicroTime]()
	quantityType  = reflect.TypeFor[resource.Quantity]()
)

// setProtobufValue puts a metav1.Time, MicroTime or resource.Quantity in its
// protobuf form and reports whether v was one.
func setProtobufValue(v reflect.Value) bool {
	switch v.Type() {
	case quantityType:
		v.Set(reflect.ValueOf(decodedQuantity(v.Interface().(resource.Quantity))))
		return true
	case timeType:
		if t := v.Interface().(metav1.Time); t.IsZero() {
			v.Set(reflect.ValueOf(metav1.Time{})) // written as nothing, in no zone
		} else {
			v.Set(reflect.ValueOf(metav1.Time{Time: time.Unix(t.Unix(), 0).Local()}))
		}
		return true
	case microTimeType:
		if t := v.Interface().(metav1.MicroTime); t.IsZero() {
			v.Set(reflect.ValueOf(metav1.MicroTime{}))
		} else {
			micros := time.Duration(t.Nanosecond()).Truncate(time.Microsecond)
			v.Set(reflect.ValueOf(metav1.MicroTime{Time: time.Unix(t.Unix(), int64(micros)).Local()}))
		}
		return true
	}
	return false
}

// decodedQuantity returns what decoding the protobuf of q gives: q in
// canonical form, its string form cached (as decoding JSON gives it too).
func decodedQuantity(q resource.Quantity) resource.Quantity {
	data, err := q.Marshal()
	if err != nil {
		panic(err)
	}
	var decoded resource.Quantity
	if err := decoded.Unmarshal(data); err != nil {
		panic(err)
	}
	return decoded
}
