package cache

import (
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

// values returns the indexed values of obj, panicking on an error as
// client-go does: a store cannot keep an object it cannot index.
func (ix namedIndexer) values(key string, obj any) []string {
	values, err := ix.fn(obj)
	if err != nil {
		panic(fmt.Errorf("unable to calculate an index entry for key %q on index %q: %w", key, ix.name, err))
	}
	return values
}

// generation is one complete version of the store's contents: the objects by
// key and, for each indexer, the keys by indexed value. The live store and the
// restart buffer are both generations; finishing a restart makes the buffer
// the live one.
type generation struct {
	items map[string]any
	// indices[i] belongs to the Indexer's indexers[i].
	indices []index
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
// object it replaced. As in client-go, a nil object counts as absent for the
// indices.
func (g *generation) put(indexers []namedIndexer, key string, obj any) (old any, existed bool) {
	old, existed = g.items[key]
	g.items[key] = obj
	for i, ix := range indexers {
		g.indices[i].update(ix, key, old, obj)
	}
	return old, existed
}

// remove deletes key and its index entries and returns the object it held.
func (g *generation) remove(indexers []namedIndexer, key string) (old any, existed bool) {
	old, existed = g.items[key]
	if !existed {
		return nil, false
	}
	for i, ix := range indexers {
		g.indices[i].update(ix, key, old, nil)
	}
	delete(g.items, key)
	return old, true
}

// buildIndex indexes every object of items with ix.
func buildIndex(ix namedIndexer, items map[string]any) index {
	idx := index{}
	for key, obj := range items {
		idx.update(ix, key, nil, obj)
	}
	return idx
}

// index maps an indexed value to the keys of the objects that produce it.
// A value with no keys left is deleted, so that high-cardinality values of
// short-lived objects do not accumulate.
type index map[string]keySet

// update moves key from the values of oldObj to those of newObj; either may
// be nil (create, delete).
func (idx index) update(ix namedIndexer, key string, oldObj, newObj any) {
	var oldValues, newValues []string
	if oldObj != nil {
		oldValues = ix.values(key, oldObj)
	}
	if newObj != nil {
		newValues = ix.values(key, newObj)
	}
	// The common update: one value, unchanged.
	if len(oldValues) == 1 && len(newValues) == 1 && oldValues[0] == newValues[0] {
		return
	}
	for _, v := range oldValues {
		idx.removeKey(v, key)
	}
	for _, v := range newValues {
		idx.addKey(v, key)
	}
}

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
	case set.many == nil:
		idx[value] = set // the slice header changed
	}
}

// maxFewKeys is the size up to which a keySet is a slice. Linear search over
// a few strings is as fast as hashing them, and a slice of one key costs 16
// bytes where a map costs about 200.
const maxFewKeys = 16

// keySet is a set of store keys. Most indexed values (a workload's label, a
// node name) are shared by few objects, so a small set is a slice and only a
// large one becomes a map.
type keySet struct {
	few  []string            // the keys while there are at most maxFewKeys
	many map[string]struct{} // the keys once there were more; few is then nil
}

func (s *keySet) add(key string) {
	switch {
	case s.many != nil:
		s.many[key] = struct{}{}
	case slices.Contains(s.few, key):
	case len(s.few) < maxFewKeys:
		s.few = append(s.few, key)
	default:
		s.many = make(map[string]struct{}, 2*maxFewKeys)
		for _, k := range s.few {
			s.many[k] = struct{}{}
		}
		s.many[key] = struct{}{}
		s.few = nil
	}
}

func (s *keySet) remove(key string) {
	if s.many != nil {
		delete(s.many, key)
		return
	}
	i := slices.Index(s.few, key)
	if i < 0 {
		return
	}
	last := len(s.few) - 1
	s.few[i] = s.few[last]
	s.few[last] = "" // do not keep the key's bytes reachable
	s.few = s.few[:last]
}

func (s keySet) len() int {
	if s.many != nil {
		return len(s.many)
	}
	return len(s.few)
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
		for _, k := range s.few {
			if !yield(k) {
				return
			}
		}
	}
}
