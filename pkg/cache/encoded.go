package cache

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/leaninformer/leaninformer/pkg/intern"
)

// Codec encodes objects for an Indexer that keeps them as bytes (see
// WithCodec). The Indexer knows nothing of the format: package codec
// provides one. A Codec must be safe for concurrent use.
type Codec interface {
	// Encode returns obj's encoding, or an error if it cannot encode obj so
	// that Decode gives it back; the Indexer then keeps obj as it is.
	Encode(obj any) ([]byte, error)
	// Decode returns a new object decoded from what Encode returned.
	Decode(data []byte) (any, error)
}

// encoded is an object the store keeps as bytes, with what the store needs
// without decoding it: its UID and resourceVersion for relist reuse, and
// its index values for updates and deletes. The key is the map key it is
// stored under. An encoded entry never changes once stored, except that
// AddIndexers appends the values of new indices, holding both locks. Its
// identity is read without the store's locks (relist reuse, and
// ResourceVersionOf from handlers' goroutines), so extra, which holds both
// identity and the index values' ends, is replaced whole, never written
// into.
type encoded struct {
	data []byte
	// uid and rv are the object's UID and resourceVersion in their usual
	// forms, a UUID and a decimal number (zero: empty); extra holds them as
	// strings when they are not.
	uid    [16]byte
	rv     uint64
	values indexValues
	extra  atomic.Pointer[entryExtra] // nil for the common case
}

// entryExtra is what few entries need. Once an entry holds it, it is
// read-only: a change stores a changed copy.
type entryExtra struct {
	uid, rv    string // when not in compact form
	compactUID bool
	compactRV  bool
	noMeta     bool // the object has no ObjectMeta: no UID, no resourceVersion
	// ends[i] is where index i's values end in values.flat; nil when every
	// index produced exactly one value.
	ends []int32
}

// indexValues are an object's values for each of the store's indices, in
// the order of its indexers, flattened.
type indexValues struct {
	flat []string
}

// newEncoded returns an entry for obj's encoding data, with obj's identity.
// Its index values are set by setValues.
func newEncoded(obj any, data []byte) *encoded {
	e := &encoded{data: data}
	m, err := meta.Accessor(obj)
	if err != nil {
		e.extra.Store(&entryExtra{compactUID: true, compactRV: true, noMeta: true})
		return e
	}
	uid, rv := string(m.GetUID()), m.GetResourceVersion()
	var okUID, okRV bool
	e.uid, okUID = parseUUID(uid)
	e.rv, okRV = parseRV(rv)
	if !okUID || !okRV {
		x := &entryExtra{compactUID: okUID, compactRV: okRV}
		if !okUID {
			x.uid = uid
		}
		if !okRV {
			x.rv = rv
		}
		e.extra.Store(x)
	}
	return e
}

// sameVersion reports whether the entry holds the version uid, rv of its
// object. An empty resourceVersion proves nothing, so it never matches.
func (e *encoded) sameVersion(uid, rv string) bool {
	x := e.extra.Load()
	if rv == "" || (x != nil && x.noMeta) {
		return false
	}
	if x != nil && !x.compactUID {
		if x.uid != uid {
			return false
		}
	} else if u, ok := parseUUID(uid); !ok || u != e.uid {
		return false
	}
	if x != nil && !x.compactRV {
		return x.rv == rv
	}
	v, ok := parseRV(rv)
	return ok && v == e.rv
}

// compactRV reports whether the entry keeps its object's resourceVersion as
// the number rv (zero: empty).
func (e *encoded) compactRV() bool {
	x := e.extra.Load()
	return x == nil || !x.noMeta && x.compactRV
}

// resourceVersion returns the entry's resourceVersion; ok is false if its
// object has no metadata.
func (e *encoded) resourceVersion() (rv string, ok bool) {
	x := e.extra.Load()
	switch {
	case x != nil && x.noMeta:
		return "", false
	case x != nil && !x.compactRV:
		return x.rv, true
	case e.rv == 0:
		return "", true
	}
	return strconv.FormatUint(e.rv, 10), true
}

// ResourceVersionOf returns the resourceVersion of a value the store
// handed out (an object, or an encoded entry, read without decoding it) and
// whether it has one: objects without metadata have none. An informer uses
// it to tell an unchanged object of a relist from a changed one before it
// decodes anything.
func ResourceVersionOf(stored any) (string, bool) {
	if e, ok := stored.(*encoded); ok {
		return e.resourceVersion()
	}
	return resourceVersionOf(stored)
}

// parseUUID returns the bytes of a UUID in its canonical lowercase form;
// an empty uid is the zero array. ok is false for anything else (and for
// the nil UUID, which would be taken for an empty uid).
func parseUUID(uid string) (u [16]byte, ok bool) {
	if uid == "" {
		return u, true
	}
	if len(uid) != 36 || uid[8] != '-' || uid[13] != '-' || uid[18] != '-' || uid[23] != '-' {
		return u, false
	}
	hexDigits := uid[0:8] + uid[9:13] + uid[14:18] + uid[19:23] + uid[24:36]
	for i := range len(hexDigits) {
		if c := hexDigits[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return u, false // uppercase would not format back the same
		}
	}
	if _, err := hex.Decode(u[:], []byte(hexDigits)); err != nil || u == ([16]byte{}) {
		return [16]byte{}, false
	}
	return u, true
}

// parseRV returns a resourceVersion that is a decimal number as written
// without leading zeros; an empty one is 0. ok is false for anything else,
// "0" included.
func parseRV(rv string) (uint64, bool) {
	if rv == "" {
		return 0, true
	}
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil || v == 0 || rv[0] == '0' || rv[0] == '+' {
		return 0, false
	}
	return v, true
}

// indexValuesOf returns obj's values in index i: from the entry if obj is
// one (computed when it was stored), else from the index function.
func indexValuesOf(ix namedIndexer, i int, key string, obj any) []string {
	if e, ok := obj.(*encoded); ok {
		return e.valuesOf(i)
	}
	return ix.values(key, obj)
}

func (e *encoded) valuesOf(i int) []string {
	x := e.extra.Load()
	if x == nil || x.ends == nil {
		return e.values.flat[i : i+1 : i+1]
	}
	start := int32(0)
	if i > 0 {
		start = x.ends[i-1]
	}
	return e.values.flat[start:x.ends[i]:x.ends[i]]
}

// computeValues computes obj's values for indexers, interning them (a
// namespace or a label value is shared by many objects) as obj's UID's, so
// that the versions of one object count as one towards a value's entry, as
// flat values and, unless every index produced exactly one, their ends.
func computeValues(indexers []namedIndexer, key string, obj any) (flat []string, ends []int32) {
	var uid types.UID
	if m, err := meta.Accessor(obj); err == nil {
		uid = m.GetUID()
	}
	flat = make([]string, 0, len(indexers))
	var endsBuf [8]int32
	ends = endsBuf[:0]
	one := true
	for _, ix := range indexers {
		values := ix.values(key, obj)
		one = one && len(values) == 1
		for _, v := range values {
			flat = append(flat, intern.Default().StringOf(v, uid))
		}
		ends = append(ends, int32(len(flat)))
	}
	if one {
		return flat, nil
	}
	return flat, slices.Clone(ends)
}

// setValues sets the entry's index values, computed from obj, the object
// it encodes.
func (e *encoded) setValues(indexers []namedIndexer, key string, obj any) {
	flat, ends := computeValues(indexers, key, obj)
	e.values.flat = flat
	e.setEnds(ends)
}

// setEnds stores ends, replacing extra rather than writing into it.
func (e *encoded) setEnds(ends []int32) {
	switch x := e.extra.Load(); {
	case ends != nil && x == nil:
		e.extra.Store(&entryExtra{compactUID: true, compactRV: true, ends: ends})
	case x != nil:
		changed := *x
		changed.ends = ends
		e.extra.Store(&changed)
	}
}

// appendValues appends the values of added indices to the entry's.
func (e *encoded) appendValues(flat []string, ends []int32) {
	n := len(e.values.flat)
	x := e.extra.Load()
	if x == nil || x.ends == nil {
		if ends == nil {
			e.values.flat = append(e.values.flat[:n:n], flat...)
			return
		}
		// The entry's indices had one value each: spell out their ends.
		old := make([]int32, n)
		for i := range old {
			old[i] = int32(i + 1)
		}
		e.values.flat = append(e.values.flat[:n:n], flat...)
		e.setEnds(append(old, shifted(ends, n, len(flat))...))
		return
	}
	prev := x.ends
	e.values.flat = append(e.values.flat[:n:n], flat...)
	e.setEnds(append(prev[:len(prev):len(prev)], shifted(ends, n, len(flat))...))
}

// shifted returns the ends of added values placed after n existing ones;
// nil ends stand for one value per index.
func shifted(ends []int32, n, count int) []int32 {
	out := make([]int32, 0, count)
	if ends == nil {
		for i := range count {
			out = append(out, int32(n+i+1))
		}
		return out
	}
	for _, end := range ends {
		out = append(out, int32(n)+end)
	}
	return out
}

// codecCounters count what the store could not do with its codec.
type codecCounters struct {
	encodeFailures atomic.Uint64
	decodeFailures atomic.Uint64
}

// CodecStats describes the live objects of an Indexer made with WithCodec.
type CodecStats struct {
	// Encoded is the number of objects kept as bytes, and EncodedBytes the
	// size of their encodings.
	Encoded      int
	EncodedBytes int64
	// Unencoded is the number of objects kept as they are because the codec
	// refused them.
	Unencoded int
	// EncodeFailures counts the objects the codec refused since the store
	// was made; DecodeFailures the reads that could not decode an object
	// (none unless the codec is broken: such an object is left out of List
	// and index reads, and Get returns the error).
	EncodeFailures, DecodeFailures uint64
}

// CodecStats returns what the store holds encoded and what its codec
// refused. All zero without a codec.
func (c *Indexer) CodecStats() CodecStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return CodecStats{
		Encoded:        c.live.encoded,
		EncodedBytes:   c.live.encodedBytes,
		Unencoded:      len(c.live.items) - c.live.encoded,
		EncodeFailures: c.counters.encodeFailures.Load(),
		DecodeFailures: c.counters.decodeFailures.Load(),
	}
}

// Decode returns the object a stored value stands for: a freshly decoded
// object for an encoded entry, anything else as it is. Use it on what
// Upsert, Remove and the Diff of FinishReplace hand out when the store has a
// codec.
func (c *Indexer) Decode(stored any) (any, error) {
	e, ok := stored.(*encoded)
	if !ok {
		return stored, nil
	}
	obj, err := c.decodeEntry(e)
	if err != nil {
		return nil, fmt.Errorf("decoding a stored object: %w", err)
	}
	return obj, nil
}

// decodeEntry decodes e, counting a failure; its error is the codec's.
func (c *Indexer) decodeEntry(e *encoded) (any, error) {
	obj, err := c.codec.Decode(e.data)
	if err != nil {
		c.counters.decodeFailures.Add(1)
		return nil, err
	}
	return obj, nil
}

// undecodable is a read's failure to decode the entry e: the codec's
// error.
type undecodable struct {
	e   *encoded
	err error
}

func (u *undecodable) Error() string { return "decoding a stored object: " + u.err.Error() }

func (u *undecodable) Unwrap() error { return u.err }

// undecodableUnder names the object that could not be decoded by its key.
func undecodableUnder(key string, err error) error {
	return fmt.Errorf("decoding the object stored under %q: %w", key, err)
}

// reportUndecodable reports the objects a list read left out because they
// could not be decoded, each by its key. Entries do not hold their keys:
// they are found by one pass over the live generation, which only a broken
// codec ever costs.
func (c *Indexer) reportUndecodable(failed []undecodable) {
	if len(failed) == 0 {
		return
	}
	keys := make(map[*encoded]string, len(failed))
	for _, f := range failed {
		keys[f.e] = ""
	}
	c.mu.RLock()
	for key, stored := range c.live.items {
		if e, ok := stored.(*encoded); ok {
			if _, wanted := keys[e]; wanted {
				keys[e] = key
			}
		}
	}
	c.mu.RUnlock()
	for _, f := range failed {
		err := fmt.Errorf("decoding an object no longer stored: %w", f.err)
		if key := keys[f.e]; key != "" {
			err = undecodableUnder(key, f.err)
		}
		utilruntime.HandleError(fmt.Errorf("leaving an object out of a store read: %w", err))
	}
}

// ListStored returns every value of the live generation as the store
// holds it, and the key of each (keys[i] is stored[i]'s), in no particular
// order: with a codec, encoded entries that Decode turns into objects. An
// informer queues such a snapshot for a late handler's initial list or a
// resync and decodes each object as it delivers it, rather than holding a
// decoded copy of the store in a queue; the keys let a queue that folds by
// key do so without decoding. Without a codec the values are List's.
func (c *Indexer) ListStored() (keys []string, stored []any) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys = make([]string, 0, len(c.live.items))
	stored = make([]any, 0, len(c.live.items))
	for key, v := range c.live.items {
		keys = append(keys, key)
		stored = append(stored, v)
	}
	return keys, stored
}

// IsEncoded reports whether a value handed out by Upsert, Remove or a Diff
// is an encoded entry, which Decode turns into an object.
func IsEncoded(stored any) bool {
	_, ok := stored.(*encoded)
	return ok
}

// readable returns what a read hands out for a stored value: the object
// itself without a codec; with one, a fresh decode, or a DeepCopy of an
// object the codec refused, so that no caller can change the store through
// what it read. Only a decode fails.
func (c *Indexer) readable(stored any) (any, *undecodable) {
	if c.codec == nil {
		return stored, nil
	}
	if e, ok := stored.(*encoded); ok {
		obj, err := c.decodeEntry(e)
		if err != nil {
			return nil, &undecodable{e: e, err: err}
		}
		return obj, nil
	}
	if o, ok := stored.(runtime.Object); ok {
		if rc, ok := c.codec.(RefusedCopier); ok {
			return rc.CopyRefused(o), nil
		}
		return o.DeepCopyObject(), nil
	}
	return stored, nil
}

// RefusedCopier is a Codec that also makes what a read hands out for an
// object it refused to encode: the store keeps such an object as it is and
// reads hand out CopyRefused's copy of it instead of a DeepCopy, so that a
// codec that finishes its decodes (sets a kind, say) can finish these too.
type RefusedCopier interface {
	CopyRefused(obj runtime.Object) runtime.Object
}

// RefusedFinisher is a Codec that readies an object it refused before the
// store keeps it as it is (gives it a kind, interns its strings, say).
type RefusedFinisher interface {
	// FinishRefused returns what the store keeps for obj, which Encode
	// refused. owned: obj was handed over to the store (Upsert,
	// AddToReplace), which may write into it; otherwise it is still the
	// caller's (Add, Update, Replace, Transaction), which client-go's store
	// leaves as it is: FinishRefused then works on a copy, or leaves obj
	// alone.
	FinishRefused(obj any, owned bool) any
}

// encode returns what the store keeps for obj: an entry with its encoding,
// or, without a codec or if the codec refuses it, obj itself (or what a
// RefusedFinisher makes of it; owned: obj is the store's to write into).
// The entry's index values are left to the caller, which computes them
// holding the lock that keeps the indexers still.
func (c *Indexer) encode(obj any, owned bool) any {
	if c.codec == nil || obj == nil {
		return obj
	}
	data, err := c.codec.Encode(obj)
	if err != nil {
		c.counters.encodeFailures.Add(1)
		if f, ok := c.codec.(RefusedFinisher); ok {
			return f.FinishRefused(obj, owned)
		}
		return obj
	}
	return newEncoded(obj, data)
}

// IndexFormer is a Codec that finishes its decodes (gives them a kind,
// say): the store computes the index values of an object the codec encodes
// on IndexForm's view of it, so that index functions see it as decodes
// give it, as AddIndexers later indexes it, and as a RefusedFinisher
// readies the objects the codec refuses.
type IndexFormer interface {
	// IndexForm returns obj as a decode of its encoding would be finished.
	// owned: obj was handed over to the store (Upsert, AddToReplace), which
	// no longer needs it as it was once encoded, so IndexForm may finish it
	// in place; otherwise (Add, Update, Replace, Transaction) it must not
	// write into obj, and may share obj's maps and slices in a copy.
	IndexForm(obj any, owned bool) any
}

// setIndexValues gives an entry that encode returned for obj its index
// values; the caller holds a lock that keeps the indexers still. owned:
// obj was handed over to the store (see IndexFormer).
func (c *Indexer) setIndexValues(key string, obj, stored any, owned bool) {
	if e, ok := stored.(*encoded); ok {
		if f, ok := c.codec.(IndexFormer); ok {
			obj = f.IndexForm(obj, owned)
		}
		e.setValues(c.indexers, key, obj)
	}
}
