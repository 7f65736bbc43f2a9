package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Reading labels without decoding. Every generated top-level API type keeps
// its ObjectMeta in protobuf field 1, and ObjectMeta keeps its labels in
// field 11, a map written as one length-delimited entry (key: field 1, value:
// field 2) per label. Walking the wire format to those entries costs a few
// length skips per object, against a full decode.
const (
	objectMetaField = 1  // in every top-level type that embeds metav1.ObjectMeta
	labelsField     = 11 // in metav1.ObjectMeta
	entryKeyField   = 1  // in a map entry
	entryValueField = 2
)

// errNotWalkable says that an encoding's labels cannot be read from its
// bytes: the reader decodes the object instead.
var errNotWalkable = errors.New("labels not readable from the encoding")

// Labels are the labels of an encoded object. It implements labels.Labels
// (Has, Get, Lookup), so a labels.Selector can match it. Read from protobuf,
// it is a view over the encoding's bytes and allocates nothing per label:
// the strings it returns share those bytes, which never change (a store
// keeps an encoding as it is; Labels decompresses into bytes of its own).
// The zero value has no labels.
type Labels struct {
	// entries is the ObjectMeta's bytes from its first labels entry to the
	// end of its last (other fields between them are skipped), or nil: then
	// set holds the labels (read from a decoded object).
	entries []byte
	set     labels.Set
}

var _ labels.Labels = Labels{}

// Has reports whether the object has the label.
func (l Labels) Has(label string) bool {
	_, ok := l.Lookup(label)
	return ok
}

// Get returns the label's value, "" if the object does not have it.
func (l Labels) Get(label string) string {
	v, _ := l.Lookup(label)
	return v
}

// Lookup returns the label's value and whether the object has it. As when
// protobuf decodes a map, the last of entries with the same key wins.
func (l Labels) Lookup(label string) (value string, ok bool) {
	if l.entries == nil {
		value, ok = l.set[label]
		return value, ok
	}
	for b := l.entries; len(b) > 0; {
		field, wireType, entry, rest, err := nextField(b)
		if err != nil {
			break // findLabels checked the bytes: not reached
		}
		b = rest
		if field != labelsField || wireType != wireBytes {
			continue
		}
		if key, v, err := mapEntry(entry); err == nil && key == label {
			value, ok = v, true
		}
	}
	return value, ok
}

// Labels returns the labels of the object data encodes (data is what
// Encode returned), reading them from the protobuf bytes where it can and
// decoding the object otherwise (unstructured objects, a type that does not
// keep its ObjectMeta in field 1, bytes it does not expect). The Labels stay
// valid as long as the caller keeps them: they hold on to data, or to bytes
// of their own.
func (c *Codec) Labels(data []byte) (Labels, error) {
	r, err := c.labelsOf(data, nil)
	return r.labels, err
}

// MatchLabels returns a function that reports whether the labels of the
// object an encoding stands for match sel. For a match, it also returns the
// object (else nil) where it decoded it anyway: to tell (see Labels), or
// from the bytes it decompressed to read the labels of a compressed
// encoding (which saves a second decompression), so that a caller that wants
// the matches need not decode them again. The function must not be called
// concurrently; each call of MatchLabels returns a new one.
func (c *Codec) MatchLabels(sel labels.Selector) func(data []byte) (matches bool, decoded any, err error) {
	var view Labels // one per matcher: sel.Matches(&view) then allocates nothing per object
	var kinds kindCache
	return func(data []byte) (bool, any, error) {
		r, err := c.labelsOf(data, &kinds)
		if err != nil {
			return false, nil, err
		}
		view = r.labels
		if !sel.Matches(&view) {
			return false, nil, nil
		}
		if r.decoded == nil && r.decompressed != nil {
			if r.decoded, err = c.decodeProto(r.kind, r.decompressed); err != nil {
				return false, nil, fmt.Errorf("decoding: %w", err)
			}
		}
		return true, r.decoded, nil
	}
}

// labelsRead is what labelsOf read.
type labelsRead struct {
	labels  Labels
	decoded any // the object, if labelsOf decoded it
	// kind and decompressed are the kind and decompressed payload of a
	// compressed protobuf encoding whose labels were read from the bytes.
	kind         *kind
	decompressed []byte
}

// kindCache remembers, for one matcher, whether the last kind number it
// saw can have its labels read from the bytes: a store holds one kind or a
// few, so this saves a lookup by type per object.
type kindCache struct {
	id     uint64
	valid  bool
	field1 bool // the kind keeps ObjectMeta in field 1
}

// walkable reports whether kind k, numbered id, keeps ObjectMeta in field 1
// of its protobuf encoding.
func (kc *kindCache) walkable(id uint64, k *kind) bool {
	if k.unstructured {
		return false
	}
	if kc == nil {
		return hasObjectMetaInField1(k.typ)
	}
	if !kc.valid || kc.id != id {
		*kc = kindCache{id: id, valid: true, field1: hasObjectMetaInField1(k.typ)}
	}
	return kc.field1
}

// labelsOf returns the labels of data's object, and the object if it had
// to decode it; kinds (nil: none) caches what it learns about kinds.
func (c *Codec) labelsOf(data []byte, kinds *kindCache) (labelsRead, error) {
	v, n := binary.Uvarint(data)
	if n <= 0 {
		return labelsRead{}, errors.New("reading labels: no kind number")
	}
	k, err := c.kinds.get(v >> 1)
	if err != nil {
		return labelsRead{}, fmt.Errorf("reading labels: %w", err)
	}
	if kinds.walkable(v>>1, k) {
		payload, decompressed := data[n:], []byte(nil)
		if v&1 == 1 {
			// A buffer of its own, never reused: the Labels' strings share it.
			if payload, err = c.decompress(k, v>>1, payload, nil); err != nil {
				return labelsRead{}, fmt.Errorf("reading labels: %w", err)
			}
			decompressed = payload
		}
		if entries, err := findLabels(payload); err == nil {
			return labelsRead{labels: Labels{entries: entries}, kind: k, decompressed: decompressed}, nil
		}
	}
	obj, err := c.Decode(data)
	if err != nil {
		return labelsRead{}, fmt.Errorf("reading labels: %w", err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return labelsRead{}, fmt.Errorf("reading labels: %T has no metadata: %w", obj, err)
	}
	return labelsRead{labels: Labels{set: m.GetLabels()}, decoded: obj}, nil
}

// decompress returns the decompressed payload of kind k (number id), in
// dst's array if it is large enough.
func (c *Codec) decompress(k *kind, id uint64, payload, dst []byte) ([]byte, error) {
	var coder *dictCoder
	if k.compression != nil {
		coder = k.compression.coder.Load()
	}
	if coder == nil {
		return nil, fmt.Errorf("compressed, but kind %d has no dictionary", id)
	}
	out, err := coder.decompress(dst, payload)
	if err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	return out, nil
}

// objectMetaTypes caches hasObjectMetaInField1 by type.
var objectMetaTypes sync.Map // reflect.Type -> bool

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// hasObjectMetaInField1 reports whether the generated type t keeps a
// metav1.ObjectMeta in protobuf field 1, as its struct tags say.
func hasObjectMetaInField1(t reflect.Type) bool {
	if ok, found := objectMetaTypes.Load(t); found {
		return ok.(bool)
	}
	ok := false
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			if f := t.Field(i); f.Type == objectMetaType && strings.HasPrefix(f.Tag.Get("protobuf"), "bytes,1,") {
				ok = true
				break
			}
		}
	}
	objectMetaTypes.Store(t, ok)
	return ok
}

// findLabels returns the bytes of the top-level message b's ObjectMeta
// (field 1) from the start of its first labels entry to the end of its last
// (empty if it has none). It checks
// that b and the ObjectMeta parse, that field 1 occurs once (several would
// be merged by a decoder: not what Encode writes), and that every labels
// entry is a well-formed map entry; anything else is errNotWalkable.
func findLabels(b []byte) ([]byte, error) {
	var objectMeta []byte
	found := false
	for len(b) > 0 {
		field, wireType, value, rest, err := nextField(b)
		if err != nil {
			return nil, err
		}
		b = rest
		if field != objectMetaField {
			continue
		}
		if wireType != wireBytes || found {
			return nil, errNotWalkable
		}
		objectMeta, found = value, true
	}
	// The span from the first labels entry to the end of the last one:
	// Encode writes them one after the other, so Lookup walks them alone.
	start, end := -1, 0
	for m := objectMeta; len(m) > 0; {
		field, wireType, value, rest, err := nextField(m)
		if err != nil {
			return nil, err
		}
		if field == labelsField {
			if wireType != wireBytes {
				return nil, errNotWalkable
			}
			if _, _, err := mapEntry(value); err != nil {
				return nil, err
			}
			if start < 0 {
				start = len(objectMeta) - len(m)
			}
			end = len(objectMeta) - len(rest)
		}
		m = rest
	}
	if start < 0 {
		return []byte{}, nil // no labels, read from the bytes (nil would mean "decoded")
	}
	return objectMeta[start:end:end], nil
}

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// nextField splits b's first field off: its number, wire type, the bytes
// of a length-delimited value (nil for the others) and the rest of b.
// Groups (wire types 3 and 4), which no generated API type uses, and
// anything malformed are errNotWalkable.
func nextField(b []byte) (field uint64, wireType int, value, rest []byte, err error) {
	// Most fields of ObjectMeta and its labels: a one-byte tag of a
	// length-delimited field shorter than 128 bytes.
	if len(b) >= 2 && b[0] < 0x80 && b[0]&7 == wireBytes && b[0]>>3 != 0 && b[1] < 0x80 {
		if end := 2 + int(b[1]); end <= len(b) {
			return uint64(b[0] >> 3), wireBytes, b[2:end:end], b[end:], nil
		}
	}
	tag, n := uvarint(b)
	if n <= 0 || tag>>3 == 0 {
		return 0, 0, nil, nil, errNotWalkable
	}
	b = b[n:]
	field, wireType = tag>>3, int(tag&7)
	switch wireType {
	case wireVarint:
		if _, n = uvarint(b); n <= 0 {
			return 0, 0, nil, nil, errNotWalkable
		}
		return field, wireType, nil, b[n:], nil
	case wireFixed64, wireFixed32:
		size := 8
		if wireType == wireFixed32 {
			size = 4
		}
		if len(b) < size {
			return 0, 0, nil, nil, errNotWalkable
		}
		return field, wireType, nil, b[size:], nil
	case wireBytes:
		length, n := uvarint(b)
		if n <= 0 || length > uint64(len(b)-n) {
			return 0, 0, nil, nil, errNotWalkable
		}
		b = b[n:]
		return field, wireType, b[:length:length], b[length:], nil
	}
	return 0, 0, nil, nil, errNotWalkable
}

// uvarint is binary.Uvarint with the one-byte case (most tags and
// lengths) inline.
func uvarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return binary.Uvarint(b)
}

// mapEntry returns the key and value of a map<string, string> entry, as
// the generated decoder reads them: missing ones are "", a repeated one's
// last occurrence wins, other fields are skipped. The strings share b.
func mapEntry(b []byte) (key, value string, err error) {
	for len(b) > 0 {
		field, wireType, v, rest, err := nextField(b)
		if err != nil {
			return "", "", err
		}
		b = rest
		switch field {
		case entryKeyField, entryValueField:
			if wireType != wireBytes {
				return "", "", errNotWalkable
			}
			if field == entryKeyField {
				key = bytesString(v)
			} else {
				value = bytesString(v)
			}
		}
	}
	return key, value, nil
}

// bytesString returns b as a string without copying it. Callers pass bytes
// that never change: an encoding a store keeps, or a buffer that only
// the Labels reading it hold.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
