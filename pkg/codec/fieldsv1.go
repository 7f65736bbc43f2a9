package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Compact FieldsV1. A managedFields entry's FieldsV1 is JSON the API server
// writes in one form: objects only, no whitespace, every value an object
// ({} for a leaf), keys repeating across the objects of a kind. Protobuf
// keeps it as those JSON bytes, most of a Pod's encoding. The codec stores
// it instead as
//
//	0x00 0x01 uvarint(length of the JSON) members 0x00
//
// where each member is uvarint(1 + ref<<2 | inline<<1 | nested), ref being
// the key's number in the Codec's dictionary (fieldKeys) or, when inline is
// set, the length of the key's bytes (as between the JSON quotes, escapes
// and all), which follow; a nested member's value is an object with
// members, ended by 0x00, and any other value is {}. No JSON starts with
// 0x00, which marks the form. Raw bytes not in that form (whitespace,
// values other than objects, garbage) are kept as they are, or, if they
// start with 0x00 themselves, as 0x00 0x02 followed by them. Decoding gives
// back the exact bytes.
const (
	compactMark     = 0x00
	compactTree     = 0x01
	compactVerbatim = 0x02
	// maxFieldsDepth bounds the nesting compacted: deeper raws are kept as
	// they are.
	maxFieldsDepth = 64
)

const (
	memberNested = 1 << iota
	memberInline
	memberRefShift = iota
)

// compactFields returns raw's compact form and true, or false if raw is
// best kept as it is: empty, not in the API server's form, or no larger
// than its compact form. inlined collects the keys it wrote inline. The
// caller holds d.mu and must not change the bytes returned (they may be
// memoised).
func (d *fieldKeys) compactFields(raw []byte, inlined *[]inlinedKey) ([]byte, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	if raw[0] == compactMark {
		out := make([]byte, 0, 2+len(raw))
		return append(append(out, compactMark, compactVerbatim), raw...), true
	}
	if out, ok := d.remembered(raw); ok {
		return out, true
	}
	out, keys, ok := d.compactTree(raw)
	if !ok || len(out) >= len(raw) {
		return nil, false
	}
	if len(keys) == 0 {
		d.remember(raw, out)
	}
	*inlined = append(*inlined, keys...)
	return out, true
}

// compactTree encodes raw, an object of objects, in the compact form; ok
// is false if raw is anything else, so that the form could not give it
// back byte for byte.
func (d *fieldKeys) compactTree(raw []byte) (out []byte, inlined []inlinedKey, ok bool) {
	if len(raw) < 2 || raw[0] != '{' {
		return nil, nil, false
	}
	out = make([]byte, 0, len(raw)/2)
	out = append(out, compactMark, compactTree)
	out = binary.AppendUvarint(out, uint64(len(raw)))
	var counts map[string]int // index into inlined
	// depth counts the objects open besides the outermost; afterValue is
	// whether a member was just completed (so ',' or '}' may follow).
	depth, afterValue, afterComma := 0, false, false
	for i := 1; i < len(raw); {
		switch raw[i] {
		case '}':
			if afterComma {
				return nil, nil, false
			}
			out = append(out, 0)
			i++
			if depth == 0 {
				return out, inlined, i == len(raw)
			}
			depth--
			afterValue = true
		case ',':
			if !afterValue {
				return nil, nil, false
			}
			i++
			afterValue, afterComma = false, true
		case '"':
			if afterValue {
				return nil, nil, false
			}
			end := stringEnd(raw, i+1)
			if end < 0 || end+2 >= len(raw) || raw[end+1] != ':' || raw[end+2] != '{' {
				return nil, nil, false
			}
			key := raw[i+1 : end]
			i = end + 3
			var member uint64
			if i < len(raw) && raw[i] == '}' {
				i++
				afterValue = true
			} else {
				if depth++; depth > maxFieldsDepth {
					return nil, nil, false
				}
				member |= memberNested
				afterValue = false
			}
			afterComma = false
			if id, found := d.lookup(key); found {
				out = binary.AppendUvarint(out, 1+(uint64(id)<<memberRefShift|member))
				continue
			}
			out = binary.AppendUvarint(out, 1+(uint64(len(key))<<memberRefShift|memberInline|member))
			out = append(out, key...)
			if j, seen := counts[string(key)]; seen {
				inlined[j].count++
				continue
			}
			if counts == nil {
				counts = map[string]int{}
			}
			counts[string(key)] = len(inlined)
			inlined = append(inlined, inlinedKey{key: string(key), count: 1})
		default:
			return nil, nil, false
		}
	}
	return nil, nil, false // the outermost object never ended
}

// stringEnd returns the index of the quote that ends the JSON string whose
// contents start at raw[i], or -1.
func stringEnd(raw []byte, i int) int {
	for i < len(raw) {
		switch raw[i] {
		case '\\':
			i += 2
		case '"':
			return i
		default:
			i++
		}
	}
	return -1
}

// expandFields appends to dst the JSON bytes of a FieldsV1 raw that
// compactFields returned, reading keys from keys, a fieldKeys snapshot. A raw not
// in a compact form is appended as it is.
func expandFields(dst, raw []byte, keys []string) ([]byte, error) {
	if len(raw) == 0 || raw[0] != compactMark {
		return append(dst, raw...), nil
	}
	if len(raw) < 2 {
		return nil, errors.New("compact FieldsV1: no form")
	}
	switch raw[1] {
	case compactVerbatim:
		return append(dst, raw[2:]...), nil
	case compactTree:
	default:
		return nil, fmt.Errorf("compact FieldsV1: unknown form %d", raw[1])
	}
	size, n := binary.Uvarint(raw[2:])
	if n <= 0 || size > uint64(len(raw))*(maxFieldKeyLen+8) {
		return nil, errors.New("compact FieldsV1: bad length")
	}
	out := slices.Grow(dst, int(size))
	start := len(out)
	out = append(out, '{')
	depth := 0
	for i := 2 + n; ; {
		v, n := binary.Uvarint(raw[i:])
		if n <= 0 {
			return nil, fmt.Errorf("compact FieldsV1: truncated at byte %d", i)
		}
		i += n
		if v == 0 {
			out = append(out, '}')
			if depth == 0 {
				if i != len(raw) || uint64(len(out)-start) != size {
					return nil, fmt.Errorf("compact FieldsV1: %d bytes after the end, %d bytes of JSON for %d", len(raw)-i, len(out)-start, size)
				}
				return out, nil
			}
			depth--
			continue
		}
		v--
		ref := v >> memberRefShift
		if v&memberInline != 0 {
			if ref > uint64(len(raw)-i) {
				return nil, fmt.Errorf("compact FieldsV1: inline key of %d bytes at byte %d, %d left", ref, i, len(raw)-i)
			}
			key := raw[i : i+int(ref)]
			i += int(ref)
			if uint64(len(out)-start+len(key)+6) > size {
				return nil, fmt.Errorf("compact FieldsV1: longer than its length %d", size)
			}
			if out[len(out)-1] == '}' {
				out = append(out, ',')
			}
			out = append(out, '"')
			out = append(out, key...)
			out = append(out, '"', ':', '{')
		} else {
			if ref >= uint64(len(keys)) {
				return nil, fmt.Errorf("compact FieldsV1: key number %d, the dictionary has %d", ref, len(keys))
			}
			member := keys[ref] // "key":{
			if uint64(len(out)-start+len(member)+2) > size {
				return nil, fmt.Errorf("compact FieldsV1: longer than its length %d", size)
			}
			if out[len(out)-1] == '}' {
				out = append(out, ',')
			}
			out = append(out, member...)
		}
		if v&memberNested != 0 {
			depth++
			continue
		}
		out = append(out, '}')
	}
}
