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
// which the codec assigns the first time it sees the kind, and whether it
// is compressed; the bytes are only meaningful to the Codec that produced
// them. A Codec is safe for concurrent use.
type Codec struct {
	kinds     kindTable
	fieldKeys fieldKeys // managedFields keys, shared by all kinds
}

// Option configures a Codec.
type Option func(*Codec)

// WithCompression makes the Codec compress encodings with S2 and a
// dictionary per kind, which it makes from the first TrainingSamples objects
// of the kind it encodes (those stay uncompressed). Each kind's dictionary
// costs a fixed amount of memory (at most about 100 KiB), and every decode
// decompresses first: see the package's README for what it saves and costs.
func WithCompression() Option {
	return func(c *Codec) { c.kinds.compress = true }
}

// New returns a Codec.
func New(opts ...Option) *Codec {
	c := &Codec{}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// body is an object's encoding before its prefix: size bytes that write
// puts into a buffer of exactly that size.
type body struct {
	id    uint64
	kind  *kind
	size  int
	write func(dst []byte) error
}

// Encode returns obj's encoding. It refuses, with an error wrapping
// ErrUnsupported, objects it cannot encode faithfully: anything but pointers
// to generated protobuf types and unstructured objects, typed objects
// holding a runtime.RawExtension with an Object (protobuf writes Raw
// alone; the API server sends Raw only), unstructured
// content holding values that JSON cannot represent (Go ints, NaN, invalid
// UTF-8, content that holds itself, ...) or that decoding would refuse
// (more than 10,000 maps and slices deep, a map of more than 2,097,152
// entries), and a kind beyond the first MaxKinds distinct ones.
func (c *Codec) Encode(obj any) ([]byte, error) {
	var b body
	var err error
	if u, ok := obj.(*unstructured.Unstructured); ok {
		b, err = c.unstructuredBody(u)
	} else {
		b, err = c.protoBody(obj)
	}
	if err != nil {
		return nil, err
	}
	z := b.kind.compression
	if z != nil && b.size <= maxDecompressed { // Decode refuses to decompress more
		if coder := z.coder.Load(); coder != nil {
			return compress(b, coder)
		}
	}
	data := make([]byte, uvarintLen(b.id<<1)+b.size)
	n := binary.PutUvarint(data, b.id<<1)
	if err := b.write(data[n:]); err != nil {
		return nil, err
	}
	if z != nil {
		z.sample(data[n:])
	}
	return data, nil
}

// compress returns b compressed, or uncompressed if that is not smaller,
// in a buffer of the exact size: the store keeps it.
func compress(b body, coder *dictCoder) ([]byte, error) {
	rawBuf := decompressBuffers.Get().(*[]byte)
	defer decompressBuffers.Put(rawBuf)
	*rawBuf = append((*rawBuf)[:0], make([]byte, b.size)...)
	raw := *rawBuf
	if err := b.write(raw); err != nil {
		return nil, err
	}
	outBuf := decompressBuffers.Get().(*[]byte)
	defer decompressBuffers.Put(outBuf)
	out := coder.compress(*outBuf, raw)
	*outBuf = out

	flagged, plain := b.id<<1|1, b.id<<1
	if uvarintLen(flagged)+len(out) >= uvarintLen(plain)+len(raw) {
		data := make([]byte, uvarintLen(plain)+len(raw))
		copy(data[binary.PutUvarint(data, plain):], raw)
		return data, nil
	}
	data := make([]byte, uvarintLen(flagged)+len(out))
	copy(data[binary.PutUvarint(data, flagged):], out)
	return data, nil
}

// Decode returns a new object decoded from data, which Encode returned.
//
// The object equals the one encoded except where the encoding has no way
// to tell two representations apart, as for a client that reads the object
// from the API server in that encoding:
//   - typed objects (protobuf): an empty slice or map decodes as nil,
//     except []byte: a field keeps nil and empty apart, and a value of a
//     map (ConfigMap.BinaryData, Secret.Data) decodes as an empty slice even
//     if it was nil; a metav1.Time keeps whole seconds and a
//     metav1.MicroTime whole microseconds, both in the local time zone (as
//     when decoded from JSON), a zero one as time.Time{} in no zone; a
//     resource.Quantity is in canonical form
//     (equal by Cmp, but for values that form cannot write, such as 1000E,
//     which apimachinery's protobuf and JSON both write as 1);
//   - unstructured objects (CBOR) decode exactly: the same maps, slices,
//     strings, int64s, float64s, bools and nils.
//
// Decoding the same bytes twice gives two reflect.DeepEqual objects, so
// objects decoded from one store compare equal when their encodings are.
func (c *Codec) Decode(data []byte) (any, error) {
	v, n := binary.Uvarint(data)
	if n <= 0 {
		return nil, errors.New("decoding: no kind number")
	}
	k, err := c.kinds.get(v >> 1)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	payload := data[n:]
	if v&1 == 1 {
		var coder *dictCoder
		if k.compression != nil {
			coder = k.compression.coder.Load()
		}
		if coder == nil {
			return nil, fmt.Errorf("decoding: compressed, but kind %d has no dictionary", v>>1)
		}
		buf := decompressBuffers.Get().(*[]byte)
		defer decompressBuffers.Put(buf)
		if payload, err = coder.decompress(*buf, payload); err != nil {
			return nil, fmt.Errorf("decoding: decompressing: %w", err)
		}
		*buf = payload // decoding copies what it keeps out of payload
	}
	if k.unstructured {
		return decodeUnstructured(payload)
	}
	return c.decodeProto(k, payload)
}
