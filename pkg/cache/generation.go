package cache

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"

	toolscache "k8s.io/client-go/tools/cache"
)

// namedIndexer is one index function with its name. An Indexer keeps them in
// a slice so that every generation can keep its indices in a parallel slice.
type namedIndexer struct {
	name string
	fn   toolscache.IndexFunc
}

// sortedIndexers returns the index functions of indexers ordered by name.
func sortedIndexers(indexers toolscache.Indexers) []namedIndexer {
	out := make([]namedIndexer, 0, len(indexers))
	for _, name := range slices.Sorted(maps.Keys(indexers)) {
		out = append(out, namedIndexer{name: name, fn: indexers[name]})
	}
	return out
}

// errNilIndexFunc is why a nil index function cannot index an object.
var errNilIndexFunc = errors.New("the index function is nil")

// values returns the indexed values of obj, panicking on an error as
// client-go does: a store cannot keep an object it cannot index. A nil
// function panics too (client-go's calls it), naming the index.
func (ix namedIndexer) values(key string, obj any) []string {
	if ix.fn == nil {
		panic(fmt.Errorf("unable to calculate an index entry for key %q on index %q: %w", key, ix.name, errNilIndexFunc))
	}
	values, err := ix.fn(obj)
	if err != nil {
		panic(fmt.Errorf("unable to calculate an index entry for key %q on index %q: %w", key, ix.name, err))
	}
	return values
}

// generation is one complete version of the store's contents: the objects by
// key and, for each indexer, the keys by indexed value. The live store is
// one; a paged replace in which many objects differ builds another beside
// it, and finishing makes that the live one.
type generation struct {
	// items holds objects, or encoded entries in a store with a codec.
	items map[string]any
	// indices[i] belongs to the Indexer's indexers[i].
	indices []index
	// encoded counts the items that are encoded entries, encodedBytes
	// their encodings' bytes.
	encoded      int
	encodedBytes int64
}

// newGeneration returns an empty generation with room for size objects and,
// for each index, indexSizes[i] values (nil: no hint).
func newGeneration(size int, indexers []namedIndexer, indexSizes []int) *generation {
	g := &generation{
		items:   make(map[string]any, size),
		indices: make([]index, len(indexers)),
	}
	for i := range g.indices {
		hint := 0
		if i < len(indexSizes) {
			hint = indexSizes[i]
		}
		g.indices[i] = make(index, hint)
	}
	return g
}

// minShrinkToFit is the smallest map size a finished replace copies into
// smaller maps: below it the copy saves too little to matter.
const minShrinkToFit = 1024

// shrunkToFit returns g with its maps copied into maps made for what they
// hold; the objects and key sets are shared, not copied.
func (g *generation) shrunkToFit() *generation {
	out := &generation{
		items:        make(map[string]any, len(g.items)),
		indices:      make([]index, len(g.indices)),
		encoded:      g.encoded,
		encodedBytes: g.encodedBytes,
	}
	maps.Copy(out.items, g.items)
	for i, idx := range g.indices {
		out.indices[i] = make(index, len(idx))
		maps.Copy(out.indices[i], idx)
	}
	return out
}

// indexSizes returns the number of values in each index, a size hint for the
// next generation.
func (g *generation) indexSizes() []int {
	sizes := make([]int, len(g.indices))
	for i, idx := range g.indices {
		sizes[i] = len(idx)
	}
	return sizes
}

// put stores obj under key, moves key to obj's indexed values and returns the
// object it replaced. obj's values are computed before anything is written:
// an index function that fails panics with the generation unchanged, not
// with obj stored and in some indices only. As in client-go, a nil object
// counts as absent for the indices.
func (g *generation) put(indexers []namedIndexer, key string, obj any) (old any, existed bool) {
	var room [4][]string // most stores have one or two indexers
	values := room[:0]
	if obj != nil {
		for i, ix := range indexers {
			values = append(values, indexValuesOf(ix, i, key, obj))
		}
	}
	old, existed = g.items[key]
	g.items[key] = obj
	for i, ix := range indexers {
		var newValues []string
		if obj != nil {
			newValues = values[i]
		}
		g.indices[i].update(ix, i, key, old, newValues)
	}
	g.count(old, -1)
	g.count(obj, 1)
	return old, existed
}

// count adds sign times stored to the generation's encoded counters.
func (g *generation) count(stored any, sign int) {
	if e, ok := stored.(*encoded); ok {
		g.encoded += sign
		g.encodedBytes += int64(sign * len(e.data))
	}
}

// remove deletes key and its index entries and returns the object it held.
func (g *generation) remove(indexers []namedIndexer, key string) (old any, existed bool) {
	old, existed = g.items[key]
	if !existed {
		return nil, false
	}
	for i, ix := range indexers {
		g.indices[i].update(ix, i, key, old, nil)
	}
	g.count(old, -1)
	delete(g.items, key)
	return old, true
}

// index maps an indexed value to the keys of the objects that produce it.
// A value with no keys left is deleted, so that high-cardinality values of
// short-lived objects do not accumulate.
type index map[string]keySet

// update moves key from the values of oldObj (nil on a create) to
// newValues (nil on a delete) in the index of ix, the i-th indexer. An
// encoded entry's values are those computed when it was stored: updates
// and deletes never decode.
func (idx index) update(ix namedIndexer, i int, key string, oldObj any, newValues []string) {
	var oldValues []string
	if oldObj != nil {
		oldValues = indexValuesOf(ix, i, key, oldObj)
	}
	// The common update: one value, unchanged.
	if len(oldValues) == 1 && len(newValues) == 1 && oldValues[0] == newValues[0] {
		return
	}
	for _, v := range oldValues {
		idx.removeKey(v, key)
	}
	if _, exact := oldObj.(*encoded); oldObj == nil || exact {
		idx.insert(key, newValues)
		return
	}
	// The values the function gives for the stored object now need not be
	// those it was indexed under: a caller may have written into it (or
	// the function reads outside state). client-go's sets absorb that; the
	// key must not end up twice in a set here either.
	idx.insertAbsent(key, newValues)
}

// insert adds key, which is in none of the index's sets, to those of
// values.
func (idx index) insert(key string, values []string) {
	// Adding cannot duplicate key, unless the index function repeats a
	// value.
	for i, v := range values {
		if !slices.Contains(values[:i], v) {
			idx.addKey(v, key)
		}
	}
}

// insertAbsent adds key to the sets of values that do not hold it yet.
func (idx index) insertAbsent(key string, values []string) {
	for i, v := range values {
		if slices.Contains(values[:i], v) {
			continue
		}
		set, ok := idx[v]
		if !ok {
			idx.addKey(v, key)
			continue
		}
		if set.has(key) {
			idx[v] = set // has may have made it a map
			continue
		}
		set.add(key)
		idx[v] = set
	}
}

// addKey adds key, which is not in the set of value, to it.
func (idx index) addKey(value, key string) {
	set := idx[value]
	if set.many != nil {
		set.many[key] = struct{}{} // the map is shared: nothing to store back
		return
	}
	set.add(key)
	idx[value] = set
}

func (idx index) removeKey(value, key string) {
	set, ok := idx[value]
	if !ok {
		return
	}
	set.remove(key)
	switch {
	case set.len() == 0:
		delete(idx, value)
	default:
		idx[value] = set // the slice header or the representation changed
	}
}

// maxFewKeys is the size up to which a keySet stays a slice when keys are
// removed from it. Linear search over a few strings is as fast as hashing
// them.
const maxFewKeys = 16

// keySet is a set of store keys. Keys only arrive while a generation is
// built (a restart, an initial list), and most indexed values (a workload's
// label, a node name) are shared by few objects, so a set is a slice, 16
// bytes a key where a map costs three times that: callers never add a key
// twice (update removes a key from all of an index's sets before adding it
// to its new ones, and, for a plain object, whose values may have changed
// since it was indexed, adds it only where it is not yet). A large set
// becomes a map the first time a key must be found in it, to be removed
// or checked for.
type keySet struct {
	keys []string            // the keys while many is nil
	many map[string]struct{} // the keys once a large set lost one
}

// add adds key, which is not in the set.
func (s *keySet) add(key string) {
	if s.many != nil {
		s.many[key] = struct{}{}
		return
	}
	s.keys = append(s.keys, key)
}

// searchable makes a large set a map, before a key is searched in it.
func (s *keySet) searchable() {
	if s.many == nil && len(s.keys) > maxFewKeys {
		s.many = make(map[string]struct{}, len(s.keys))
		for _, k := range s.keys {
			s.many[k] = struct{}{}
		}
		s.keys = nil
	}
}

// has reports whether key is in the set; a large set becomes a map.
func (s *keySet) has(key string) bool {
	s.searchable()
	if s.many != nil {
		_, ok := s.many[key]
		return ok
	}
	return slices.Contains(s.keys, key)
}

func (s *keySet) remove(key string) {
	s.searchable()
	if s.many != nil {
		delete(s.many, key)
		return
	}
	i := slices.Index(s.keys, key)
	if i < 0 {
		return
	}
	last := len(s.keys) - 1
	s.keys[i] = s.keys[last]
	s.keys[last] = "" // do not keep the key's bytes reachable
	s.keys = s.keys[:last]
}

func (s keySet) len() int {
	if s.many != nil {
		return len(s.many)
	}
	return len(s.keys)
}

// all yields the keys in no particular order.
func (s keySet) all() iter.Seq[string] {
	return func(yield func(string) bool) {
		if s.many != nil {
			for k := range s.many {
				if !yield(k) {
					return
				}
			}
			return
		}
		for _, k := range s.keys {
			if !yield(k) {
				return
			}
		}
	}
}
