package codec

import (
	"encoding/binary"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ErrUnsupported is wrapped by the errors of Encode for objects the codec
// cannot encode so that decoding gives them back.
var ErrUnsupported = errors.New("object cannot be encoded")

// Codec encodes API objects to bytes and decodes them back. Each encoding
// starts with the number of the object's kind (its Go type and TypeMeta),
// which the codec assigns the first time it sees the kind; the bytes are
// only meaningful to the Codec that produced them. A Codec is safe for
// concurrent use.
type Codec struct {
	kinds kindTable
}

// New returns a Codec.
func New() *Codec {
	return &Codec{}
}

// Encode returns obj's encoding. It refuses, with an error wrapping
// ErrUnsupported, objects it cannot encode faithfully: anything but pointers
// to generated protobuf types and unstructured objects, unstructured
// content holding values that JSON cannot represent (Go ints, NaN, invalid
// UTF-8, ...), and a kind beyond the first MaxKinds distinct ones.
func (c *Codec) Encode(obj any) ([]byte, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return c.encodeUnstructured(u)
	}
	return c.encodeProto(obj)
}

// Decode returns a new object decoded from data, which Encode returned.
//
// The object equals the one encoded except where the encoding has no way
// to tell two representations apart, as for a client that reads the object
// from the API server in that encoding:
//   - typed objects (protobuf): an empty slice or map decodes as nil,
//     except a []byte value of a map (ConfigMap.BinaryData, Secret.Data),
//     which decodes as an empty slice even if it was nil; a metav1.Time
//     keeps whole seconds and, like a metav1.MicroTime, is in the local time
//     zone (as when decoded from JSON);
//   - unstructured objects (CBOR) decode exactly: the same maps, slices,
//     strings, int64s, float64s, bools and nils.
//
// Decoding the same bytes twice gives two reflect.DeepEqual objects, so
// objects decoded from one store compare equal when their encodings are.
func (c *Codec) Decode(data []byte) (any, error) {
	id, n := binary.Uvarint(data)
	if n <= 0 {
		return nil, errors.New("decoding: no kind number")
	}
	k, err := c.kinds.get(id)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if k.unstructured {
		return decodeUnstructured(data[n:])
	}
	return k.decodeProto(data[n:])
}
