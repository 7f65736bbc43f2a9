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

// pagedReplace is the buffer of a paged replace in progress: the next generation, built
// page by page, indices included, while readers use the live one.
type pagedReplace struct {
	gen *generation
	// changes holds the buffered keys in order of first occurrence: the
	// diff's list order. Their Old and New are filled when the paged replace
	// finishes, in place, so that finishing allocates nothing in proportion
	// to the collection at the moment both generations are alive.
	changes []Change
	// sizedFor is the number of objects gen's maps were made for.
	sizedFor int
}

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

// StartReplace opens an empty replace buffer, discarding any paged replace in
// progress. Until FinishReplace, readers and live writes keep using the live
// generation.
func (c *Indexer) StartReplace() {
	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()
	c.buffer = nil // let a discarded buffer go before allocating the next
	// The collection is most likely about as large as it was: size the maps
	// for that rather than growing them (and their garbage) page by page.
	c.mu.RLock()
	size, indexSizes := len(c.live.items), c.live.indexSizes()
	c.mu.RUnlock()
	c.buffer = &pagedReplace{
		gen:      newGeneration(size, c.indexers, indexSizes),
		changes:  make([]Change, 0, size),
		sizedFor: size,
	}
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
// cannot be). With relist reuse on, if the live generation holds an object
// with the same key, UID and non-empty resourceVersion, that live object is
// buffered instead: obj is not kept and transform is not called (reused is
// true). Otherwise transform, if not nil, is applied to obj first, without
// the store's locks held; if it fails, nothing is buffered and its error is
// returned wrapped. Adding a key already buffered replaces the buffered
// object. It returns ErrNoReplace if no paged replace is in progress.
//
// With a codec, the (transformed) object is encoded outside the store's
// locks and stored is the encoded entry (see Decode); relist reuse compares
// the UID and resourceVersion kept beside the live entry, without decoding.
func (c *Indexer) AddToReplace(obj any, transform toolscache.TransformFunc) (stored any, reused bool, err error) {
	key, err := c.key(obj)
	if err != nil {
		return nil, false, err
	}
	if !c.Replacing() { // spare the transform
		return nil, false, ErrNoReplace
	}
	if c.relistReuse {
		stored, reused = c.unchangedLive(key, obj)
	}
	var final any // the object stored, for its index values
	if !reused {
		final = obj
		if transform != nil {
			if final, err = transform(obj); err != nil {
				return nil, false, fmt.Errorf("transforming: %w", err)
			}
		}
		stored = c.encode(final)
	}

	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()
	if c.buffer == nil { // aborted meanwhile
		return nil, false, ErrNoReplace
	}
	if !reused {
		c.setIndexValues(key, final, stored)
	}
	if _, existed := c.buffer.gen.put(c.indexers, key, stored); !existed {
		c.buffer.changes = append(c.buffer.changes, Change{Key: key})
	}
	return stored, reused, nil
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

// FinishReplace makes the replace buffer the live generation at
// resourceVersion and returns the difference to the generation it replaced,
// which is dropped as a whole (objects that handlers or the Diff still hold
// stay valid). The diff is computed under the read lock; the write lock is
// held only for the swap, unless a live write came in between, in which case
// the diff is computed again under it. It returns ErrNoReplace if no paged replace
// is in progress.
func (c *Indexer) FinishReplace(resourceVersion string) (*Diff, error) {
	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()
	buf := c.buffer
	if buf == nil {
		return nil, ErrNoReplace
	}
	d := &Diff{ResourceVersion: resourceVersion}
	seen := c.diffLive(buf, d)
	if c.testHookBeforeWriteLock != nil {
		c.testHookBeforeWriteLock()
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.liveWrites != seen {
		buf.diff(c.live, d)
	}
	c.live = buf.gen
	if buf.sizedFor >= minShrinkToFit && buf.sizedFor >= 2*len(buf.gen.items) {
		// Sized for a collection at least twice as large (a sharded
		// informer's range shrank, or half the objects were deleted): Go's
		// maps never shrink, so copy them into maps of the right size
		// rather than keep the larger ones until the next relist.
		c.live = buf.gen.shrunkToFit()
	}
	c.rv = resourceVersion
	c.liveWrites++
	c.buffer = nil
	return d, nil
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
		c.New, c.Old = r.gen.items[c.Key], live.items[c.Key]
		if samePointer(c.Old, c.New) {
			d.Reused++
		}
	}
	d.Deleted = d.Deleted[:0]
	for key, obj := range live.items {
		if _, ok := r.gen.items[key]; !ok {
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
