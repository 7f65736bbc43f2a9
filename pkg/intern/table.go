package intern

import (
	"hash/maphash"
	"maps"
	"sync"
	"unsafe"
	"weak"

	"k8s.io/apimachinery/pkg/types"
)

// shards spreads a table over independently locked parts, so that informers
// interning at the same time rarely wait for each other.
const shards = 16

// minSweep is the number of entries a shard holds before its first sweep.
const minSweep = 256

// admitAt is the number of objects that must have a value for it to get
// an entry. An entry costs about 90 bytes of heap, more than most strings it
// saves: a value two objects have costs more shared than not.
const admitAt = 3

// An owner tells apart the objects a table counts a value in: the hash of
// an object's UID (see ownerOf), or anonymous when the caller names no
// object (String), each such call counting as another object.
type owner uint32

const anonymous owner = 1 // ownerOf never returns it, nor 0 (no owner yet)

// sighting is what a shard knows of a value without an entry: the owners
// of the objects it was seen in, in order; 0 for none yet.
type sighting [admitAt - 1]owner

// Table is a set of canonical strings. Interning a string returns the one
// instance of its value the table holds, so that equal strings of many
// objects share their bytes.
//
// A value gets an entry when it is seen in a third object; before, the
// table only counts it, and the strings keep their own copies. An entry
// costs more than most strings it saves (about 90 bytes), so values that
// only one or two objects have (names, IPs, IDs) are better left alone.
// Object tells objects apart by UID: the versions of one object (a list,
// then its updates and relists) and a value it holds several times count
// as one object; String counts each call as another object. The table
// forgets the values it counts when a shard has counted as many of them as
// it holds entries.
//
// The table holds its strings weakly: an entry lives as long as some string
// anywhere in the process still points at its bytes (a stored object, a
// handler's copy, ...). Once none does, the garbage collector frees the
// bytes and the table drops the entry the next time it sweeps, which it does
// whenever a shard has doubled since its last sweep. So the table never
// holds more than about twice the distinct strings in use, however objects
// churn.
//
// Unlike the unique package, whose entries live only as long as their
// Handles, the table keys liveness on the string bytes themselves: objects
// hold plain strings, not Handles, and would lose their sharing at the first
// garbage collection with unique.Make(s).Value().
//
// A Table is safe for concurrent use. The zero value is not usable: call
// NewTable.
type Table struct {
	seed   maphash.Seed
	shards [shards]shard
}

type shard struct {
	mu      sync.Mutex
	entries map[uint64]entry // by hash of the value
	sweepAt int              // sweep when entries reaches this size
	// seen records the objects seen with values not yet interned, by hash.
	seen map[uint64]sighting
	_    [32]byte // keep shards on separate cache lines
}

// entry is a canonical string, held weakly through its first byte.
type entry struct {
	data weak.Pointer[byte]
	len  int
}

// weakBytes points weakly at the bytes of s, which must be on the heap.
func weakBytes(s string) weak.Pointer[byte] { return weak.Make(unsafe.StringData(s)) }

// NewTable returns an empty table.
func NewTable() *Table {
	t := &Table{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].entries = map[uint64]entry{}
		t.shards[i].seen = map[uint64]sighting{}
		t.shards[i].sweepAt = minSweep
	}
	return t
}

var defaultTable = NewTable()

// Default returns the process-wide table that informer.WithInterning uses.
// Sharing one table lets objects of different informers share strings too.
func Default() *Table { return defaultTable }

// String returns a string equal to s: s itself the first two times its value
// is seen, and from the third time on the canonical instance, whose bytes
// all later equal strings interned in t share. The canonical instance is a copy
// the table makes, so that it never pins a larger buffer s may be part of.
// The empty string is returned as is. Each call counts as a sighting in
// another object; Object counts the strings of one object once.
func (t *Table) String(s string) string { return t.intern(s, anonymous) }

// StringOf is String for a string of the object whose UID is uid: however
// many times the strings of one object (of its versions) are interned, the
// object counts once towards a value's entry, as in Object. An empty uid
// names no object: each call then counts, as String's do.
func (t *Table) StringOf(s string, uid types.UID) string {
	return t.intern(s, t.ownerOf(string(uid)))
}

// ownerOf returns the owner that stands for the object of UID uid, anonymous
// if uid is empty.
func (t *Table) ownerOf(uid string) owner {
	if uid == "" {
		return anonymous
	}
	return owner(maphash.String(t.seed, uid)) | 1<<31
}

// intern returns the canonical instance of s if it has an entry, or makes
// one if s is now seen in a third object; else s, counted as seen in o.
func (t *Table) intern(s string, o owner) string {
	if s == "" {
		return s
	}
	h := maphash.String(t.seed, s)
	sh := &t.shards[h%shards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.entries[h]; ok {
		if p := e.data.Value(); p != nil {
			if c := unsafe.String(p, e.len); c == s {
				return c
			}
			// Another value with the same 64-bit hash: leave s unshared
			// rather than chain entries for an event this rare.
			return s
		}
	}
	sg, counted := sh.seen[h]
	for i, seenIn := range sg {
		switch {
		case seenIn == o && o != anonymous:
			return s // an object already counted: another version of it, or a repeat within it
		case seenIn == 0:
			if !counted && len(sh.seen) >= max(minSweep, len(sh.entries)) {
				// Forget the values counted long ago, in a new map: clear
				// would keep the old one's room.
				sh.seen = make(map[uint64]sighting, minSweep)
			}
			sg[i] = o
			sh.seen[h] = sg
			return s
		}
	}
	delete(sh.seen, h)
	c := canonicalCopy(s)
	sh.entries[h] = entry{data: weakBytes(c), len: len(c)}
	if len(sh.entries) >= sh.sweepAt {
		sh.sweep()
	}
	return c
}

// smallestOwnBlock is the size from which the runtime gives a pointer-free
// allocation a block of its own: smaller ones come from its tiny allocator,
// several to a 16-byte block that stays while any of them is alive.
const smallestOwnBlock = 16

// canonicalCopy copies s into a block of its own, at least
// smallestOwnBlock bytes. strings.Clone would put a short value (most
// namespaces, label values, "true") into a tiny block beside other small
// allocations: one of those alive keeps the block, so the entry's weak
// pointer never clears and the table never forgets the value.
func canonicalCopy(s string) string {
	b := make([]byte, len(s), max(len(s), smallestOwnBlock))
	copy(b, s)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// sweep drops the entries whose strings the garbage collector has freed and
// sets the size of the next sweep to twice what is left, so that sweeping
// costs O(1) per interned value.
func (sh *shard) sweep() {
	before := len(sh.entries)
	for h, e := range sh.entries {
		if e.data.Value() == nil {
			delete(sh.entries, h)
		}
	}
	if len(sh.entries) < before/4 {
		// Most entries went: move the rest to a map of their size, as
		// maps never shrink (and maps.Clone keeps the room too).
		live := make(map[uint64]entry, len(sh.entries))
		maps.Copy(live, sh.entries)
		sh.entries = live
	}
	sh.sweepAt = max(minSweep, 2*len(sh.entries))
}

// Len returns the number of entries the table holds: the distinct strings in
// use, plus those freed since their shard's last sweep.
func (t *Table) Len() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.entries)
		sh.mu.Unlock()
	}
	return n
}

// Sweep drops, in every shard, the entries whose strings have been freed.
// The table sweeps by itself as it grows; Sweep is for callers that want
// to release the entries' own memory at once, after a large collection
// went away.
func (t *Table) Sweep() {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		sh.sweep()
		sh.mu.Unlock()
	}
}
