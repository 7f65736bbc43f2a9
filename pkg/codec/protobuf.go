package codec

import (
	"encoding/binary"
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

// encodeProto encodes a generated protobuf type, prefixed by its kind
// number, into one buffer of the exact size.
func (c *Codec) encodeProto(obj any) ([]byte, error) {
	p, ok := obj.(protoObject)
	if !ok {
		return nil, fmt.Errorf("%w: %T has no generated protobuf methods", ErrUnsupported, obj)
	}
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %T is not a non-nil pointer to a struct", ErrUnsupported, obj)
	}
	tm, ok := p.GetObjectKind().(*metav1.TypeMeta)
	if !ok {
		// The kind could not be restored on decode.
		return nil, fmt.Errorf("%w: %T does not keep its kind in a metav1.TypeMeta", ErrUnsupported, obj)
	}
	id, err := c.kinds.id(kind{typ: v.Elem().Type(), typeMeta: *tm})
	if err != nil {
		return nil, err
	}
	size := p.Size()
	prefix := uvarintLen(id)
	data := make([]byte, prefix+size)
	binary.PutUvarint(data, id)
	n, err := p.MarshalToSizedBuffer(data[prefix:])
	if err != nil {
		return nil, fmt.Errorf("encoding %T as protobuf: %w", obj, err)
	}
	if n != size {
		return nil, fmt.Errorf("encoding %T as protobuf: wrote %d bytes, its Size is %d", obj, n, size)
	}
	return data, nil
}

// decodeProto decodes a new object of k's type and restores its TypeMeta.
func (k *kind) decodeProto(data []byte) (any, error) {
	obj := reflect.New(k.typ).Interface().(protoObject)
	if err := obj.Unmarshal(data); err != nil {
		return nil, fmt.Errorf("decoding %v as protobuf: %w", k.typ, err)
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
