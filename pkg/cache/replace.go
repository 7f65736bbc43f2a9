package cache

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// ErrNoReplace is returned by AddToReplace and FinishReplace when no paged replace
// is in progress.
var ErrNoReplace = errors.New("no paged replace in progress")

// pagedReplace is a paged replace in progress. It starts in place: it
// records the list against the live generation (each key with the object
// the list gave, and the set of keys seen) and finishing writes only what
// differs into the live generation, under the write lock. While most objects
// are reused, that holds far less beside the store than a second generation
// would: the key set and the change list instead of a second map of every
// key and a second copy of every index (108 against 167 bytes an object
// in TestPagedReplaceInPlaceHoldsLess).
// Once more than maxInPlace objects differ (while adding, or at the end
// counting the deletions), it builds the next generation beside the live
// one and finishing swaps it in whole, so that readers never wait for more
// than maxInPlace writes.
type pagedReplace struct {
	// gen is the next generation once it is built beside the live one;
	// nil while the replace is recorded in place.
	gen *generation
	// seen holds the keys of changes while gen is nil.
	seen map[string]struct{}
	// changes holds the buffered keys in order of first occurrence: the
	// diff's list order. In place, New is the object recorded for the key
	// (the live object when reused); Old, and New once gen exists, are
	// filled when the paged replace finishes, in place, so that finishing
	// allocates nothing in proportion to the collection.
	changes []Change
	// differing counts the objects recorded in place that were not reused
	// (an upper bound: a key given twice counts twice).
	differing int
	// maxInPlace is the most writes finishing does in place.
	maxInPlace int
	// sizedFor is the number of objects gen's maps are made for, and
	// indexSizes the values per index, both from the live generation at
	// the start.
	sizedFor   int
	indexSizes []int
}

// inPlaceShare bounds the writes a paged replace may do in place to a
// quarter of the live generation: the longest readers wait for a finish.
// client-go's Replace holds its lock while it builds a whole new store.
const inPlaceShare = 4

// Diff is what finishing a paged replace changed: everything an informer needs to
// notify its handlers without reading the store again.
type Diff struct {
	// ResourceVersion is the resourceVersion the paged replace finished at.
	ResourceVersion string
	// Deleted holds the keys of the replaced generation that the new one
	// lacks, each with the last object stored under it, ready for OnDelete.
	// Their order is unspecified.
	Deleted []toolscache.DeletedFinalStateUnknown
	// Changes holds every object of the new generation, in the order its key
	// was first added to the paged replace (the object is the last one added under
	// that key). Old is the object the key held before the swap, or nil if
	// the key is new. Objects kept by relist reuse have Old == New: the very
	// same pointer.
	//
	// In a store with a codec, the objects of Deleted and Changes are what
	// the store holds, encoded entries for the most part: Decode gives their
	// objects, so that a consumer decodes each as it needs it rather than
	// all of them at once.
	Changes []Change
	// Reused is the number of Changes whose New is the very object it
	// replaced (pointer identity): the relist reuse hits.
	Reused int
}

// Change is one key of a finished paged replace: added if Old is nil, otherwise
// updated from Old to New (possibly the same object).
type Change struct {
	Key      string
	Old, New any
}

// StartReplace opens an empty paged replace, discarding any in progress.
// Until FinishReplace, readers and live writes keep using the live
// generation.
func (c *Indexer) StartReplace() {
	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()
	c.buffer = nil // let a discarded buffer go before allocating the next
	// The collection is most likely about as large as it was: size for that
	// rather than growing (and leaving garbage) page by page.
	c.mu.RLock()
	size, indexSizes := len(c.live.items), c.live.indexSizes()
	c.mu.RUnlock()
	maxInPlace := size / inPlaceShare
	if c.testInPlaceLimit != nil {
		maxInPlace = c.testInPlaceLimit(size)
	}
	r := &pagedReplace{
		changes:    make([]Change, 0, size),
		maxInPlace: maxInPlace,
		sizedFor:   size,
		indexSizes: indexSizes,
	}
	if c.relistReuse && r.maxInPlace > 0 {
		r.seen = make(map[string]struct{}, size)
	} else {
		// Without reuse every object differs; an empty or tiny store gains
		// nothing in place.
		r.gen = newGeneration(size, c.indexers, indexSizes)
	}
	c.buffer = r
}

// Replacing reports whether a paged replace is in progress.
func (c *Indexer) Replacing() bool {
	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()
	return c.buffer != nil
}

// AbortReplace discards the paged replace in progress, if any; the live
// generation stays as it is.
func (c *Indexer) AbortReplace() {
	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()
	c.buffer = nil
}

// AddToReplace buffers one object of a replace page and returns the object
// actually buffered. Its key is computed on obj as given (a KeyError if it
// cannot be), and the object is buffered under the key of what transform
// returns (a transform that renames stores under the new name, as live
// writes do). With relist reuse on, if the live generation holds an object
// with the same key, UID and non-empty resourceVersion, that live object is
// buffered instead: obj is not kept and transform is not called (reused is
// true). Otherwise transform, if not nil, is applied to obj first, without
// the store's locks held; if it fails, nothing is buffered and its error is
// returned wrapped. Adding a key already buffered replaces the buffered
// object. It returns ErrNoReplace if no paged replace is in progress, or if
// the one in progress when it was called was aborted or discarded (by
// StartReplace) before obj was buffered: obj then goes to no replace. A
// live write may replace the object found unchanged before it is buffered;
// obj is then compared with what is live again, so that what is buffered
// is always the live object or obj itself.
//
// With a codec, the (transformed) object is encoded outside the store's
// locks and stored is the encoded entry (see Decode); as with Upsert, obj
// is handed over to the store (see RefusedFinisher). Relist reuse compares
// the UID and resourceVersion kept beside the live entry, without decoding.
func (c *Indexer) AddToReplace(obj any, transform toolscache.TransformFunc) (stored any, reused bool, err error) {
	key, err := c.key(obj)
	if err != nil {
		return nil, false, err
	}
	// The replace this call adds to: one started after it (a restart
	// discarding this one) must not get what this list gave.
	buf := c.currentReplace()
	if buf == nil { // spare the transform
		return nil, false, ErrNoReplace
	}
	var final, own any // the (transformed) object and what stores it, once computed
	finalKey := key    // final's key: a transform may rename
	computed := false
	for {
		reused = false
		if c.relistReuse {
			stored, reused = c.unchangedLive(key, obj)
		}
		if !reused {
			if !computed {
				final = obj
				if transform != nil {
					if final, err = transform(obj); err != nil {
						return nil, false, fmt.Errorf("transforming: %w", err)
					}
					// Stored under the transformed object's key, as a live
					// write and client-go's store do. A transform that
					// renames gets no reuse: the live object is under the
					// new name, and its UID or resourceVersion would not
					// match obj's anyway if the transform changed them.
					if finalKey, err = c.key(final); err != nil {
						return nil, false, err
					}
				}
				own, computed = c.encode(final, true), true
			}
			stored = own
		}
		k := key
		if !reused {
			k = finalKey
		}
		if done, err := c.bufferAdded(buf, k, final, stored, reused); err != nil {
			return nil, false, err
		} else if done {
			return stored, reused, nil
		}
		// A live write replaced the object found unchanged: look again.
	}
}

// currentReplace returns the paged replace in progress, nil if none.
func (c *Indexer) currentReplace() *pagedReplace {
	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()
	return c.buffer
}

// bufferAdded buffers stored under key in buf, unless buf is no longer the
// replace in progress (ErrNoReplace) or stored is a live object found
// unchanged that a live write has replaced since (done is false): between
// the two, AddIndexers would have given its new indices' values to neither
// (an encoded entry keeps them), and the listed object, not the live one
// it matched, is what the list says. final is the object stored when not
// reused, for its index values.
func (c *Indexer) bufferAdded(buf *pagedReplace, key string, final, stored any, reused bool) (done bool, err error) {
	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()
	if c.buffer != buf { // aborted, or discarded by a new StartReplace
		return true, ErrNoReplace
	}
	if reused && !c.isLive(key, stored) {
		return false, nil
	}
	if !reused {
		c.setIndexValues(key, final, stored, true)
		if buf.gen == nil {
			// Index it now, as a generation being built would: an index
			// function that fails must panic here, not halfway through
			// the writes of FinishReplace.
			c.checkIndexable(c.indexers, key, stored)
		}
	}
	buf.add(c.indexers, key, stored, reused)
	return true, nil
}

// isLive reports whether the live generation still holds stored, an object
// it held, under key. Objects that are not pointers have no identity to
// compare: any object under key will do.
func (c *Indexer) isLive(key string, stored any) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	live, ok := c.live.items[key]
	if !ok {
		return false
	}
	t := reflect.TypeOf(live)
	return samePointer(live, stored) || t != nil && t.Kind() != reflect.Pointer
}

// checkIndexable runs indexers on a plain object, panicking as a put would
// if one fails; an encoded entry's values are already computed.
func (c *Indexer) checkIndexable(indexers []namedIndexer, key string, stored any) {
	if _, isEncoded := stored.(*encoded); isEncoded || stored == nil {
		return
	}
	for _, ix := range indexers {
		ix.values(key, stored)
	}
}

// add buffers stored under key; reused says it is the live object.
func (r *pagedReplace) add(indexers []namedIndexer, key string, stored any, reused bool) {
	if r.gen != nil {
		if _, existed := r.gen.put(indexers, key, stored); !existed {
			r.changes = append(r.changes, Change{Key: key})
		}
		return
	}
	if !reused {
		r.differing++
	}
	if _, again := r.seen[key]; again {
		r.replaceRecorded(key, stored)
	} else {
		r.seen[key] = struct{}{}
		r.changes = append(r.changes, Change{Key: key, New: stored})
	}
	if r.differing > r.maxInPlace {
		r.buildGeneration(indexers)
	}
}

// replaceRecorded replaces the object recorded for key, which a list gave
// twice. A list never should, so a linear search is enough.
func (r *pagedReplace) replaceRecorded(key string, stored any) {
	for i := len(r.changes) - 1; i >= 0; i-- {
		if r.changes[i].Key == key {
			r.changes[i].New = stored
			return
		}
	}
}

// buildGeneration turns a replace recorded in place into the next
// generation, built from what it recorded; from then on it is built as
// pages come.
func (r *pagedReplace) buildGeneration(indexers []namedIndexer) {
	r.gen = newGeneration(r.sizedFor, indexers, r.indexSizes)
	for _, ch := range r.changes {
		r.gen.put(indexers, ch.Key, ch.New)
	}
	r.seen = nil
}

// holds reports whether the replace has an object under key.
func (r *pagedReplace) holds(key string) bool {
	if r.gen != nil {
		_, ok := r.gen.items[key]
		return ok
	}
	_, ok := r.seen[key]
	return ok
}

// unchangedLive returns the live object under key if obj is the same
// version of it: same UID and resourceVersion. An empty resourceVersion
// proves nothing, so it never matches.
func (c *Indexer) unchangedLive(key string, obj any) (any, bool) {
	next, err := meta.Accessor(obj)
	if err != nil || next.GetResourceVersion() == "" {
		return nil, false
	}
	c.mu.RLock()
	live, ok := c.live.items[key]
	c.mu.RUnlock()
	if !ok {
		return nil, false
	}
	if e, isEncoded := live.(*encoded); isEncoded {
		return live, e.sameVersion(string(next.GetUID()), next.GetResourceVersion())
	}
	cur, err := meta.Accessor(live)
	if err != nil || cur.GetUID() != next.GetUID() || cur.GetResourceVersion() != next.GetResourceVersion() {
		return nil, false
	}
	return live, true
}

// FinishReplace makes what the paged replace buffered the live generation
// at resourceVersion and returns the difference to what it replaces. The
// diff is computed under the read lock; the write lock is held only to
// write it (a replace recorded in place: at most a quarter of the store's
// keys) or to swap in the generation built beside the live one, which is
// then dropped as a whole. Objects that handlers or the Diff hold stay valid
// either way. If a live write came in between, the diff is computed again
// under the write lock. It returns ErrNoReplace if no paged replace is in
// progress.
func (c *Indexer) FinishReplace(resourceVersion string) (*Diff, error) {
	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()
	buf := c.buffer
	if buf == nil {
		return nil, ErrNoReplace
	}
	d := &Diff{ResourceVersion: resourceVersion}
	seen := c.diffLive(buf, d)
	if buf.gen == nil && inPlaceWrites(d) > buf.maxInPlace {
		// Many deleted (or changed by live writes meanwhile): building what
		// stays costs readers less than writing it all in place would. The
		// diff stays as it is: the generation holds the very objects
		// recorded.
		buf.buildGeneration(c.indexers)
	}
	if c.testHookBeforeWriteLock != nil {
		c.testHookBeforeWriteLock()
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.liveWrites != seen {
		// The live writes in between add at most their own number to the
		// writes done in place.
		buf.diff(c.live, d)
	}
	switch {
	case buf.gen == nil:
		c.live.apply(c.indexers, d)
	case buf.sizedFor >= minShrinkToFit && buf.sizedFor >= 2*len(buf.gen.items):
		// Sized for a collection at least twice as large (a sharded
		// informer's range shrank, or half the objects were deleted): Go's
		// maps never shrink, so copy them into maps of the right size
		// rather than keep the larger ones until the next relist.
		c.live = buf.gen.shrunkToFit()
	default:
		c.live = buf.gen
	}
	c.rv = resourceVersion
	c.liveWrites++
	c.buffer = nil
	return d, nil
}

// inPlaceWrites is the number of writes applying d in place takes.
func inPlaceWrites(d *Diff) int {
	return len(d.Changes) - d.Reused + len(d.Deleted)
}

// apply writes d, a diff from g, into g: what differs and the deletions.
// An unchanged relist writes nothing: the changes are not even walked.
func (g *generation) apply(indexers []namedIndexer, d *Diff) {
	for i := 0; i < len(d.Changes) && d.Reused < len(d.Changes); i++ {
		if ch := d.Changes[i]; !samePointer(ch.Old, ch.New) {
			g.put(indexers, ch.Key, ch.New)
		}
	}
	for _, del := range d.Deleted {
		g.remove(indexers, del.Key)
	}
}

// diffLive fills d under the read lock and returns the live write count it
// reflects.
func (c *Indexer) diffLive(buf *pagedReplace, d *Diff) uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	buf.diff(c.live, d)
	return c.liveWrites
}

// diff fills d with the difference from live to the buffer, reusing d's
// slices.
func (r *pagedReplace) diff(live *generation, d *Diff) {
	d.Changes = r.changes
	d.Reused = 0
	for i := range d.Changes {
		c := &d.Changes[i]
		if r.gen != nil {
			c.New = r.gen.items[c.Key]
		}
		c.Old = live.items[c.Key]
		if samePointer(c.Old, c.New) {
			d.Reused++
		}
	}
	d.Deleted = d.Deleted[:0]
	for key, obj := range live.items {
		if !r.holds(key) {
			d.Deleted = append(d.Deleted, toolscache.DeletedFinalStateUnknown{Key: key, Obj: obj})
		}
	}
}

// samePointer reports whether a and b are the same pointer. Only pointers
// are compared: comparing other dynamic types with == could panic.
func samePointer(a, b any) bool {
	if a == nil || reflect.TypeOf(a).Kind() != reflect.Pointer {
		return false
	}
	return a == b
}
