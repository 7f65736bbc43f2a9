package cache

import "fmt"

// indexBuild builds the indices of indexers added to a store (AddIndexers)
// for one or more generations. An encoded entry's values for the added
// indices are computed once, decoding it, whichever generations hold it;
// attach then appends them to the entry's values.
type indexBuild struct {
	codec  Codec
	added  []namedIndexer
	values map[*encoded]addedValues
}

// addedValues are an entry's values for the added indices: flat, with
// their ends unless each index has exactly one.
type addedValues struct {
	flat []string
	ends []int32
}

func (v addedValues) of(j int) []string {
	if v.ends == nil {
		return v.flat[j : j+1 : j+1]
	}
	start := int32(0)
	if j > 0 {
		start = v.ends[j-1]
	}
	return v.flat[start:v.ends[j]:v.ends[j]]
}

// build returns the added indices for items.
func (b *indexBuild) build(items map[string]any) []index {
	indices := make([]index, len(b.added))
	for j := range indices {
		indices[j] = index{}
	}
	for key, obj := range items {
		e, isEncoded := obj.(*encoded)
		var ev addedValues
		if isEncoded {
			ev = b.entryValues(key, e)
		}
		for j, ix := range b.added {
			var values []string
			if isEncoded {
				values = ev.of(j)
			} else if obj != nil {
				values = ix.values(key, obj)
			}
			indices[j].insert(key, values)
		}
	}
	return indices
}

// prepare readies obj, stored under key, for a later put with the added
// indices: an encoded entry gets its values (attach appends them), a plain
// object is checked to be indexable. Either panics as build would.
func (b *indexBuild) prepare(key string, obj any) {
	switch e := obj.(type) {
	case nil:
	case *encoded:
		b.entryValues(key, e)
	default:
		for _, ix := range b.added {
			ix.values(key, obj)
		}
	}
}

// entryValues returns e's values for the added indices, decoding it the
// first time. An entry that cannot be decoded cannot be indexed: like an
// index function that fails, that panics, and the store stays as it was.
func (b *indexBuild) entryValues(key string, e *encoded) addedValues {
	if v, ok := b.values[e]; ok {
		return v
	}
	obj, err := b.codec.Decode(e.data)
	if err != nil {
		panic(fmt.Errorf("unable to decode the object stored under %q to index it: %w", key, err))
	}
	flat, ends := computeValues(b.added, key, obj)
	v := addedValues{flat: flat, ends: ends}
	if b.values == nil {
		b.values = map[*encoded]addedValues{}
	}
	b.values[e] = v
	return v
}

// attach appends to each entry its values for the added indices; the
// caller holds both of the store's locks.
func (b *indexBuild) attach() {
	for e, v := range b.values {
		e.appendValues(v.flat, v.ends)
	}
}
