package shard

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Range is a set of hashes: a union of intervals of the 64-bit hash space.
// The zero Range is empty. A Range is a value: its methods never change it,
// and it is safe to share.
type Range struct {
	// spans are sorted, disjoint and never adjacent (adjacent spans are
	// merged), so that two equal sets have equal spans.
	spans []span
}

// span is the interval [first, last] of hashes. An inclusive last bound lets
// a span reach the top of the hash space without a 65-bit number.
type span struct{ first, last uint64 }

// FullRange is every hash.
func FullRange() Range { return Range{spans: []span{{0, math.MaxUint64}}} }

// NewRange is the hashes start <= h < end; end 0 means 2^64 (the top of
// the hash space). It is empty when start >= end (end not 0).
func NewRange(start, end uint64) Range {
	if end == 0 {
		return Range{spans: []span{{start, math.MaxUint64}}}
	}
	if start >= end {
		return Range{}
	}
	return Range{spans: []span{{start, end - 1}}}
}

// Empty reports whether r holds no hash.
func (r Range) Empty() bool { return len(r.spans) == 0 }

// Contains reports whether h is in r.
func (r Range) Contains(h uint64) bool {
	_, found := slices.BinarySearchFunc(r.spans, h, func(s span, h uint64) int {
		switch {
		case s.last < h:
			return -1
		case s.first > h:
			return 1
		default:
			return 0
		}
	})
	return found
}

// Equal reports whether r and o hold the same hashes.
func (r Range) Equal(o Range) bool { return slices.Equal(r.spans, o.spans) }

// Fraction is the share of the hash space r holds, between 0 and 1.
func (r Range) Fraction() float64 {
	var f float64
	for _, s := range r.spans {
		f += (float64(s.last-s.first) + 1) / (1 << 64)
	}
	return f
}

// Terms is the number of shardRange terms r's selector has: its count of
// separate intervals.
func (r Range) Terms() int { return len(r.spans) }

// Union is the hashes in r or o.
func (r Range) Union(o Range) Range {
	all := make([]span, 0, len(r.spans)+len(o.spans))
	all = append(append(all, r.spans...), o.spans...)
	return normalize(all)
}

// Intersect is the hashes in both r and o.
func (r Range) Intersect(o Range) Range {
	var out []span
	i, j := 0, 0
	for i < len(r.spans) && j < len(o.spans) {
		a, b := r.spans[i], o.spans[j]
		first, last := max(a.first, b.first), min(a.last, b.last)
		if first <= last {
			out = append(out, span{first, last})
		}
		if a.last < b.last {
			i++
		} else {
			j++
		}
	}
	return normalize(out)
}

// Minus is the hashes in r and not in o.
func (r Range) Minus(o Range) Range { return r.Intersect(o.complement()) }

// Overlaps reports whether r and o share a hash.
func (r Range) Overlaps(o Range) bool { return !r.Intersect(o).Empty() }

// complement is every hash not in r.
func (r Range) complement() Range {
	var out []span
	next, open := uint64(0), true // next: the first hash not yet covered
	for _, s := range r.spans {
		if s.first > next {
			out = append(out, span{next, s.first - 1})
		}
		if s.last == math.MaxUint64 {
			open = false
			break
		}
		next = s.last + 1
	}
	if open {
		out = append(out, span{next, math.MaxUint64})
	}
	return Range{spans: out}
}

// normalize sorts spans and merges overlapping and adjacent ones.
func normalize(spans []span) Range {
	if len(spans) == 0 {
		return Range{}
	}
	slices.SortFunc(spans, func(a, b span) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		default:
			return 0
		}
	})
	out := spans[:1]
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if last.last == math.MaxUint64 || s.first <= last.last+1 {
			last.last = max(last.last, s.last)
			continue
		}
		out = append(out, s)
	}
	return Range{spans: slices.Clip(out)}
}

// String is r's text form, as published in a member's Lease: comma-separated
// half-open intervals START-END of 0x-prefixed, 16-digit lowercase hex, END
// exclusive and 0x10000000000000000 for the top of the space. The empty
// Range is "". ParseRange reads it back.
func (r Range) String() string {
	var b strings.Builder
	for i, s := range r.spans {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(bound(s.first, false))
		b.WriteByte('-')
		b.WriteString(bound(s.last, true))
	}
	return b.String()
}

// Selector is r as a KEP-5866 shard selector on key: one
// shardRange(key, 'START', 'END') term per interval, joined by ||. The
// API server requires exactly 16 hex digits per bound (17 for the top,
// 0x10000000000000000), rejects an empty selector, and parses at most
// 100,000 characters (cel-go's default). It is "" for the empty Range,
// which no selector can express.
func (r Range) Selector(key Key) string {
	var b strings.Builder
	for i, s := range r.spans {
		if i > 0 {
			b.WriteString(" || ")
		}
		fmt.Fprintf(&b, "shardRange(%s, '%s', '%s')", key, bound(s.first, false), bound(s.last, true))
	}
	return b.String()
}

// bound formats a span bound: the first hash as is, the last one as the
// exclusive end that follows it.
func bound(h uint64, exclusiveAfter bool) string {
	if exclusiveAfter {
		if h == math.MaxUint64 {
			return "0x10000000000000000"
		}
		h++
	}
	return fmt.Sprintf("0x%016x", h)
}

// ParseRange reads the form Range.String writes.
func ParseRange(s string) (Range, error) {
	if s == "" {
		return Range{}, nil
	}
	var spans []span
	for part := range strings.SplitSeq(s, ",") {
		start, end, ok := strings.Cut(part, "-")
		if !ok {
			return Range{}, fmt.Errorf("range %q: interval %q is not START-END", s, part)
		}
		first, err := parseBound(start, false)
		if err != nil {
			return Range{}, fmt.Errorf("range %q: start of %q: %w", s, part, err)
		}
		last, err := parseBound(end, true)
		if err != nil {
			return Range{}, fmt.Errorf("range %q: end of %q: %w", s, part, err)
		}
		if first > last {
			return Range{}, fmt.Errorf("range %q: interval %q ends before it starts", s, part)
		}
		spans = append(spans, span{first, last})
	}
	return normalize(spans), nil
}

// parseBound reads a 0x-prefixed 16-digit hex bound; an exclusive end may
// also be the top of the space, 0x10000000000000000, and is returned as the
// last hash it covers.
func parseBound(s string, exclusiveEnd bool) (uint64, error) {
	if exclusiveEnd && s == "0x10000000000000000" {
		return math.MaxUint64, nil
	}
	digits, ok := strings.CutPrefix(s, "0x")
	if !ok || len(digits) != 16 {
		return 0, fmt.Errorf("%q is not a 0x-prefixed 16-digit hex number", s)
	}
	v, err := strconv.ParseUint(digits, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	if exclusiveEnd {
		if v == 0 {
			return 0, errors.New("an exclusive end of 0x0000000000000000 covers nothing")
		}
		return v - 1, nil
	}
	return v, nil
}

// bucketRange is bucket i of n equal buckets of the hash space: the hashes
// h with floor(h*n/2^64) == i.
func bucketRange(i, n int) Range {
	return Range{spans: []span{{bucketStart(i, n), bucketStart(i+1, n) - 1}}}
}

// bucketStart is the first hash of bucket i of n: ceil(i*2^64/n); for i == n
// it is 0, which as an exclusive end means 2^64.
func bucketStart(i, n int) uint64 {
	if i == n {
		return 0
	}
	q, r := bits.Div64(uint64(i), 0, uint64(n))
	if r != 0 {
		q++
	}
	return q
}

// bucketOf is the bucket of n that holds h.
func bucketOf(h uint64, n int) int {
	hi, _ := bits.Mul64(h, uint64(n))
	return int(hi)
}
