package codec

import (
	"slices"
	"sync"
	"sync/atomic"
)

// The dictionary of managedFields keys. FieldsV1 keys ("f:metadata", ".",
// "k:{\"name\":\"app\"}") repeat across every object of a kind, so a
// compact FieldsV1 refers to them by number; a few are unique to one object
// (a Pod's IP, its token volume's name) and must not grow the dictionary
// without end. Three limits bound it:
//   - a key is admitted only when it is seen a second time: the keys of a
//     kind's field sets enter with its second object, most keys unique to
//     one object never do;
//   - at most MaxFieldKeys keys of at most maxFieldKeyLen bytes each, after
//     which new keys are written inline (as long as in JSON, no longer);
//   - at most maxCandidates keys seen once are remembered; when that many
//     are, they are forgotten, so unique keys cannot grow that set either.
//
// At its bounds the dictionary holds at most 2,048 keys of at most 128
// bytes and as many candidates, well under 1 MiB; the kinds measured need
// far fewer (a Pod's field sets have about 150 distinct keys).
const (
	// MaxFieldKeys is the number of distinct managedFields keys a Codec
	// keeps in its dictionary; later keys are encoded inline.
	MaxFieldKeys = 2048
	// maxFieldKeyLen is the longest key the dictionary admits: a longer
	// key is unlikely to repeat and saves little by being numbered.
	maxFieldKeyLen = 128
	// maxCandidates bounds the keys seen once and not yet admitted.
	maxCandidates = 2048
	// maxMemoBytes bounds the memo of compact forms (raw and compact bytes
	// counted); past it the memo is emptied and fills again.
	maxMemoBytes = 256 << 10
)

// fieldKeys numbers managedFields keys. Decoding reads an immutable,
// append-only snapshot of the keys without locking; encoding, which looks
// keys up and admits new ones, holds mu.
type fieldKeys struct {
	mu         sync.Mutex
	ids        map[string]uint32   // guarded by mu; the number of each key in keys
	candidates map[string]struct{} // guarded by mu; keys seen once
	// memo maps FieldsV1 raws to their compact forms, for forms that number
	// every key: objects of a kind written by one manager mostly share
	// their field sets byte for byte, so most encodings skip the parse.
	// Such a form stays valid for good (a key's number never changes).
	// Guarded by mu, as is memoBytes, the bytes it holds.
	memo      map[string][]byte
	memoBytes int
	// keys are the keys by number, each as it opens its member in JSON
	// ("key":{), which decoding appends in one piece. A new snapshot
	// appends to the last one's array; readers of an older snapshot never
	// look past its length.
	keys atomic.Pointer[[]string]
}

// snapshot returns the keys numbered so far, as they open their members
// in JSON ("key":{).
func (d *fieldKeys) snapshot() []string {
	if p := d.keys.Load(); p != nil {
		return *p
	}
	return nil
}

// lookup returns key's number. The caller holds mu.
func (d *fieldKeys) lookup(key []byte) (uint32, bool) {
	id, ok := d.ids[string(key)]
	return id, ok
}

// admit records the keys one object's encoding wrote inline, in order of
// appearance with their number of occurrences (a key may be listed once
// per managedFields entry): keys seen in an earlier object are numbered,
// the most frequent first (their numbers, and encodings, are then
// shortest), the others become candidates. The caller holds mu.
func (d *fieldKeys) admit(inlined []inlinedKey) {
	inlined = mergeInlined(inlined)
	var admitted []inlinedKey
	for _, k := range inlined {
		if len(k.key) > maxFieldKeyLen {
			continue
		}
		if _, seen := d.candidates[k.key]; seen {
			delete(d.candidates, k.key)
			admitted = append(admitted, k)
			continue
		}
		if len(d.candidates) >= maxCandidates {
			d.candidates = nil // forget them all: cheaper than choosing
		}
		if d.candidates == nil {
			d.candidates = map[string]struct{}{}
		}
		d.candidates[k.key] = struct{}{}
	}
	if len(admitted) == 0 {
		return
	}
	cur := d.snapshot()
	if room := MaxFieldKeys - len(cur); len(admitted) > room {
		admitted = admitted[:room]
	}
	if len(admitted) == 0 {
		return
	}
	slices.SortStableFunc(admitted, func(a, b inlinedKey) int { return b.count - a.count })
	if d.ids == nil {
		d.ids = map[string]uint32{}
	}
	next := cur
	for _, k := range admitted {
		d.ids[k.key] = uint32(len(next))
		next = append(next, `"`+k.key+`":{`)
	}
	d.keys.Store(&next)
}

// remembered returns raw's memoised compact form. The caller holds mu and
// must not change the bytes returned.
func (d *fieldKeys) remembered(raw []byte) ([]byte, bool) {
	out, ok := d.memo[string(raw)]
	return out, ok
}

// remember memoises compact as raw's compact form; compact numbers every
// key. The caller holds mu and does not change compact afterwards.
func (d *fieldKeys) remember(raw, compact []byte) {
	size := len(raw) + len(compact)
	if size > maxMemoBytes/16 {
		return // one raw that large would crowd out the others
	}
	if d.memoBytes+size > maxMemoBytes {
		d.memo, d.memoBytes = nil, 0 // forget them all: cheaper than choosing
	}
	if d.memo == nil {
		d.memo = map[string][]byte{}
	}
	d.memo[string(raw)] = compact
	d.memoBytes += size
}

// mergeInlined returns inlined with each key once, its counts summed.
func mergeInlined(inlined []inlinedKey) []inlinedKey {
	at := make(map[string]int, len(inlined))
	merged := inlined[:0]
	for _, k := range inlined {
		if i, ok := at[k.key]; ok {
			merged[i].count += k.count
			continue
		}
		at[k.key] = len(merged)
		merged = append(merged, k)
	}
	return merged
}

// inlinedKey is a key an encoding wrote inline, with how often.
type inlinedKey struct {
	key   string
	count int
}
