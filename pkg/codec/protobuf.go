package codec

import (
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// protoObject is what the generated protobuf code of k8s.io/api and
// apimachinery's meta/v1 types provides.
type protoObject interface {
	runtime.Object
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// protoBody encodes a generated protobuf type.
func (c *Codec) protoBody(obj any) (body, error) {
	p, ok := obj.(protoObject)
	if !ok {
		return body{}, fmt.Errorf("%w: %T has no generated protobuf methods", ErrUnsupported, obj)
	}
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return body{}, fmt.Errorf("%w: %T is not a non-nil pointer to a struct", ErrUnsupported, obj)
	}
	tm, ok := p.GetObjectKind().(*metav1.TypeMeta)
	if !ok {
		// The kind could not be restored on decode.
		return body{}, fmt.Errorf("%w: %T does not keep its kind in a metav1.TypeMeta", ErrUnsupported, obj)
	}
	if holdsRawExtensionObject(v.Elem()) {
		return body{}, fmt.Errorf("%w: %T holds a runtime.RawExtension with an Object, which protobuf does not encode", ErrUnsupported, obj)
	}
	id, k, err := c.kinds.id(kind{typ: v.Elem().Type(), typeMeta: *tm})
	if err != nil {
		return body{}, err
	}
	p = c.withCompactFields(p, v)
	size := p.Size()
	return body{id: id, kind: k, size: size, write: func(dst []byte) error {
		n, err := p.MarshalToSizedBuffer(dst)
		if err != nil {
			return fmt.Errorf("encoding %T as protobuf: %w", obj, err)
		}
		if n != size {
			return fmt.Errorf("encoding %T as protobuf: wrote %d bytes, its Size is %d", obj, n, size)
		}
		return nil
	}}, nil
}

// decodeProto decodes a new object of k's type and restores its
// managedFields' FieldsV1 and its TypeMeta.
func (c *Codec) decodeProto(k *kind, data []byte) (any, error) {
	obj := reflect.New(k.typ).Interface().(protoObject)
	if err := obj.Unmarshal(data); err != nil {
		return nil, fmt.Errorf("decoding %v as protobuf: %w", k.typ, err)
	}
	if err := c.expandCompactFields(obj); err != nil {
		return nil, fmt.Errorf("decoding %v: %w", k.typ, err)
	}
	if k.typeMeta != (metav1.TypeMeta{}) {
		*obj.GetObjectKind().(*metav1.TypeMeta) = k.typeMeta
	}
	return obj, nil
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
