package informer

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/leaninformer/leaninformer/internal/memstat"
)

// version is an object of the keyed queue's tests: a key's n-th state.
type version struct {
	key string
	n   int
}

func TestKeyedQueueFolds(t *testing.T) {
	v := func(key string, n int) version { return version{key, n} }
	for _, tc := range []struct {
		name string
		ops  func(q *keyedQueue)
		want []string
	}{
		{"updates fold into one with the oldest old and the newest new", func(q *keyedQueue) {
			q.fold("a", changeUpdate, v("a", 0), v("a", 1), false, 0)
			q.fold("b", changeUpdate, v("b", 0), v("b", 1), false, 0)
			q.fold("a", changeUpdate, v("a", 1), v("a", 2), false, 0)
			q.fold("a", changeUpdate, v("a", 2), v("a", 3), false, 0)
		}, []string{"update a 0->3", "update b 0->1"}},
		{"add then update is one add of the newest", func(q *keyedQueue) {
			q.fold("a", changeAdd, nil, v("a", 1), true, 1)
			q.fold("a", changeUpdate, v("a", 1), v("a", 2), false, 0)
		}, []string{"add a 2 initial syncs=1"}},
		{"update then delete ends the entry", func(q *keyedQueue) {
			q.fold("a", changeUpdate, v("a", 0), v("a", 1), false, 0)
			q.fold("a", changeDelete, nil, v("a", 1), false, 0)
		}, []string{"delete a 1"}},
		{"add then delete is nothing", func(q *keyedQueue) {
			q.fold("a", changeAdd, nil, v("a", 1), false, 0)
			q.fold("b", changeAdd, nil, v("b", 1), false, 0)
			q.fold("a", changeDelete, nil, v("a", 1), false, 0)
		}, []string{"add b 1"}},
		{"delete then add is both, in order", func(q *keyedQueue) {
			q.fold("a", changeUpdate, v("a", 0), v("a", 1), false, 0)
			q.fold("a", changeDelete, nil, v("a", 1), false, 0)
			q.fold("a", changeAdd, nil, v("a", 5), false, 0)
			q.fold("a", changeUpdate, v("a", 5), v("a", 6), false, 0)
		}, []string{"delete a 1", "add a 6"}},
		{"add-delete-add behind a delete: the delete and the last add", func(q *keyedQueue) {
			q.fold("a", changeDelete, nil, v("a", 0), false, 0)
			q.fold("a", changeAdd, nil, v("a", 1), false, 0)
			q.fold("a", changeDelete, nil, v("a", 1), false, 0)
			q.fold("a", changeAdd, nil, v("a", 2), false, 0)
		}, []string{"delete a 0", "add a 2"}},
		{"an update behind a pending delete becomes an add", func(q *keyedQueue) {
			q.fold("a", changeDelete, nil, v("a", 0), false, 0)
			q.fold("a", changeUpdate, v("a", 0), v("a", 1), false, 0)
		}, []string{"delete a 0", "add a 1"}},
		{"two deletes keep the newest last state", func(q *keyedQueue) {
			q.fold("a", changeDelete, nil, v("a", 1), false, 0)
			q.fold("a", changeDelete, nil, v("a", 2), false, 0)
		}, []string{"delete a 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newKeyedQueue()
			tc.ops(q)
			var got []string
			for c, ok := q.pop(); ok; c, ok = q.pop() {
				got = append(got, describeChange(c))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("delivered %q, want %q", got, tc.want)
			}
			if q.len != 0 || len(q.newest) != 0 {
				t.Errorf("drained queue still holds %d changes, %d keys", q.len, len(q.newest))
			}
		})
	}
}

func describeChange(c *pendingChange) string {
	s := ""
	switch c.kind {
	case changeAdd:
		s = fmt.Sprintf("add %s %d", c.key, c.obj.(version).n)
	case changeUpdate:
		s = fmt.Sprintf("update %s %d->%d", c.key, c.old.(version).n, c.obj.(version).n)
	case changeDelete:
		s = fmt.Sprintf("delete %s %d", c.key, c.obj.(version).n)
	}
	if c.isInInitialList {
		s += " initial"
	}
	if c.syncs > 0 {
		s += fmt.Sprintf(" syncs=%d", c.syncs)
	}
	return s
}

// TestKeyedQueueAgainstModel plays random histories of a few keys into a
// queue, delivering now and then, and checks what a handler relies on:
// every call is consistent with what the handler last heard (OnAdd of a key
// it does not hold, OnUpdate from the very object it holds to a newer one,
// OnDelete of a key it holds), the queue never holds more than two changes
// per key, initial-list counts are all delivered or cancelled, and once
// drained the handler holds what the store holds.
func TestKeyedQueueAgainstModel(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		keys := []string{"a", "b", "c", "d"}
		store := map[string]version{}   // what the informer's store holds
		handler := map[string]version{} // what the handler has heard
		next := map[string]int{}
		q := newKeyedQueue()
		pushedSyncs, settledSyncs := 0, 0
		deliver := func(c *pendingChange) {
			held, has := handler[c.key]
			switch c.kind {
			case changeAdd:
				if has {
					t.Fatalf("seed %d: OnAdd(%v) of a key the handler holds as %v", seed, c.obj, held)
				}
				handler[c.key] = c.obj.(version)
			case changeUpdate:
				if !has || c.old != held || c.obj.(version).n <= held.n {
					t.Fatalf("seed %d: OnUpdate(%v, %v) while the handler holds %v (%v)", seed, c.old, c.obj, held, has)
				}
				handler[c.key] = c.obj.(version)
			case changeDelete:
				if !has {
					t.Fatalf("seed %d: OnDelete(%v) of a key the handler does not hold", seed, c.obj)
				}
				delete(handler, c.key)
			}
			settledSyncs += c.syncs
		}
		for range 200 {
			key := keys[rng.IntN(len(keys))]
			cur, exists := store[key]
			syncs := 0
			initial := rng.IntN(4) == 0
			if initial {
				syncs = 1
			}
			action := rng.IntN(9)
			if action < 3 { // the handler takes a few
				for range 1 + rng.IntN(3) {
					if c, ok := q.pop(); ok {
						deliver(c)
					}
				}
				continue
			}
			var folded, cancelled int
			switch {
			case !exists:
				next[key]++
				store[key] = version{key, next[key]}
				folded, cancelled = q.fold(key, changeAdd, nil, store[key], initial, syncs)
			case action < 5:
				delete(store, key)
				syncs = 0 // deletes never count towards HasSynced
				folded, cancelled = q.fold(key, changeDelete, nil, cur, false, 0)
			default:
				next[key]++
				store[key] = version{key, next[key]}
				folded, cancelled = q.fold(key, changeUpdate, cur, store[key], false, 0)
				syncs = 0
			}
			pushedSyncs += syncs
			settledSyncs += cancelled
			if folded > 1 || q.len > 2*len(keys) {
				t.Fatalf("seed %d: folded %d, queue of %d changes for %d keys", seed, folded, q.len, len(keys))
			}
		}
		for c, ok := q.pop(); ok; c, ok = q.pop() {
			deliver(c)
		}
		if fmt.Sprint(handler) != fmt.Sprint(store) {
			t.Fatalf("seed %d: drained, the handler holds %v, the store %v", seed, handler, store)
		}
		if pushedSyncs != settledSyncs {
			t.Fatalf("seed %d: %d initial-list notifications queued, %d delivered or cancelled", seed, pushedSyncs, settledSyncs)
		}
	}
}

// An emptied queue gives back the room of its largest burst: a coalescing
// handler's initial list or relist folds every stored key into it at once,
// and a Go map keeps the room of its largest size. It kept about 35 bytes a
// key for as long as the handler was registered.
func TestKeyedQueueShrinksOnceEmpty(t *testing.T) {
	const n = 100_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/cm-%07d", i)
	}
	q := newKeyedQueue()
	before := memstat.HeapAfterGC()
	for _, k := range keys {
		q.fold(k, changeAdd, nil, nil, false, 0)
	}
	for _, ok := q.pop(); ok; _, ok = q.pop() {
	}
	retained := int64(memstat.HeapAfterGC()) - int64(before)
	runtime.KeepAlive(keys)
	runtime.KeepAlive(q)
	if retained > 256<<10 {
		t.Errorf("the emptied queue holds %d KiB after a burst of %d keys, want the room given back", retained>>10, n)
	}
	// And it works as before after shrinking.
	q.fold("ns/a", changeAdd, nil, version{"ns/a", 1}, false, 0)
	if c, ok := q.pop(); !ok || c.key != "ns/a" || q.len != 0 {
		t.Errorf("after shrinking: popped %+v, %v; len %d", c, ok, q.len)
	}
}
