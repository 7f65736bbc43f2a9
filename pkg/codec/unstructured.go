package codec

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

var unstructuredType = reflect.TypeFor[unstructured.Unstructured]()

// unstructuredBody encodes u's content as CBOR. CBOR rather than JSON: it
// is smaller and faster to decode, and keeps float64s that hold whole
// numbers float64 (JSON turns 1.0 into the int64 1).
func (c *Codec) unstructuredBody(u *unstructured.Unstructured) (body, error) {
	if u == nil || u.Object == nil {
		// Decoding gives an empty, non-nil content: not what was stored.
		return body{}, fmt.Errorf("%w: unstructured object without content", ErrUnsupported)
	}
	if err := checkJSONValue(u.Object, 1); err != nil {
		return body{}, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	id, k, err := c.kinds.id(kind{unstructured: true, typ: unstructuredType})
	if err != nil {
		return body{}, err
	}
	data, err := direct.Marshal(u.Object)
	if err != nil {
		return body{}, fmt.Errorf("encoding unstructured object as CBOR: %w", err)
	}
	return body{id: id, kind: k, size: len(data), write: func(dst []byte) error {
		copy(dst, data)
		return nil
	}}, nil
}

func decodeUnstructured(data []byte) (any, error) {
	var content map[string]any
	if err := direct.Unmarshal(data, &content); err != nil {
		return nil, fmt.Errorf("decoding unstructured object as CBOR: %w", err)
	}
	return &unstructured.Unstructured{Object: content}, nil
}

// The bounds of apimachinery's CBOR decoding (the same as its JSON
// decoding's): content past them encodes, but would never decode again.
const (
	maxNesting  = 10000   // maps and slices, one inside the other
	maxMapPairs = 2097152 // entries of one map
)

// checkJSONValue returns an error unless v, at the given nesting depth
// (1 for an object's content), holds only what decoding JSON into
// unstructured content produces, so that CBOR gives it back exactly: maps
// with string keys, slices, valid UTF-8 strings, int64s, finite float64s,
// bools and nils, nested at most maxNesting deep. The depth bound also
// ends the walk of content that contains itself, which JSON cannot hold.
func checkJSONValue(v any, depth int) *invalidValue {
	switch v.(type) {
	case map[string]any, []any:
		if depth > maxNesting {
			return &invalidValue{reason: fmt.Sprintf("nested more than %d maps and slices deep (or contains itself)", maxNesting)}
		}
	}
	switch v := v.(type) {
	case nil, bool, int64:
		return nil
	case string:
		if !utf8.ValidString(v) {
			return &invalidValue{reason: "string is not valid UTF-8"}
		}
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return &invalidValue{reason: fmt.Sprintf("%v is not a JSON number", v)}
		}
	case map[string]any:
		if v == nil {
			// CBOR's null decodes as a nil interface, not a nil map.
			return &invalidValue{reason: "nil map"}
		}
		if len(v) > maxMapPairs {
			return &invalidValue{reason: fmt.Sprintf("map of %d entries, more than the %d that decoding allows", len(v), maxMapPairs)}
		}
		for k, e := range v {
			if !utf8.ValidString(k) {
				return &invalidValue{reason: fmt.Sprintf("key %q is not valid UTF-8", k)}
			}
			if err := checkJSONValue(e, depth+1); err != nil {
				err.path = append(err.path, "."+k)
				return err
			}
		}
	case []any:
		if v == nil {
			return &invalidValue{reason: "nil slice"}
		}
		for i, e := range v {
			if err := checkJSONValue(e, depth+1); err != nil {
				err.path = append(err.path, fmt.Sprintf("[%d]", i))
				return err
			}
		}
	default:
		return &invalidValue{reason: fmt.Sprintf("%T is not a JSON value", v)}
	}
	return nil
}

// pathEnds is how many steps of a long path an error names at each end.
const pathEnds = 8

// invalidValue says where unstructured content holds what JSON cannot.
type invalidValue struct {
	path   []string // innermost first
	reason string
}

func (e *invalidValue) Error() string {
	var b strings.Builder
	b.WriteString("object")
	for i := len(e.path) - 1; i >= 0; i-- {
		if i == len(e.path)-1-pathEnds && len(e.path) > 2*pathEnds+1 {
			// A path through thousands of levels would swamp a log line:
			// name its ends only.
			fmt.Fprintf(&b, "...(%d more)...", len(e.path)-2*pathEnds)
			i = pathEnds
			continue
		}
		b.WriteString(e.path[i])
	}
	return b.String() + ": " + e.reason
}
