package cache

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/internal/memstat"
	"github.com/leaninformer/leaninformer/pkg/codec"
)

// fill adds n objects a/0..a/n-1 with rv "1" and returns them.
func fill(t *testing.T, c *Indexer, n int) []*pom {
	t.Helper()
	objs := make([]*pom, n)
	for i := range objs {
		objs[i] = obj("a", strconv.Itoa(i), "uid-"+strconv.Itoa(i), "1", labels("color", "red"))
		if err := c.Add(objs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return objs
}

func mustAddToReplace(t *testing.T, c *Indexer, o any, tf toolscache.TransformFunc) (any, bool) {
	t.Helper()
	stored, reused, err := c.AddToReplace(o, tf)
	if err != nil {
		t.Fatalf("AddToReplace(%v): %v", o, err)
	}
	return stored, reused
}

func TestRelistReuseKeepsPointerIdentity(t *testing.T) {
	const n = 50
	for _, reuse := range []bool{true, false} {
		t.Run(fmt.Sprint("reuse=", reuse), func(t *testing.T) {
			c := NewIndexer(toolscache.MetaNamespaceKeyFunc, baseIndexers(), WithRelistReuse(reuse))
			live := fill(t, c, n)
			transformed := 0
			tf := func(o any) (any, error) { transformed++; return o, nil }

			c.StartReplace()
			copies := make([]*pom, n)
			for i, o := range live {
				copies[i] = o.DeepCopy()
				stored, reused := mustAddToReplace(t, c, copies[i], tf)
				want := any(copies[i])
				if reuse {
					want = o
				}
				if reused != reuse || stored != want {
					t.Fatalf("object %d: stored %p reused %v; want %p reused %v", i, stored, reused, want, reuse)
				}
			}
			d, err := c.FinishReplace("2")
			if err != nil {
				t.Fatal(err)
			}

			wantTransformed, wantReused := n, 0
			if reuse {
				wantTransformed, wantReused = 0, n
			}
			if transformed != wantTransformed {
				t.Errorf("transform called %d times, want %d", transformed, wantTransformed)
			}
			if d.Reused != wantReused {
				t.Errorf("Diff.Reused = %d, want %d", d.Reused, wantReused)
			}
			for i, ch := range d.Changes {
				if ch.Old != any(live[i]) || (ch.Old == ch.New) != reuse {
					t.Fatalf("change %d: Old %p New %p; live %p, reuse %v", i, ch.Old, ch.New, live[i], reuse)
				}
			}
			for i, o := range live {
				got, _, _ := c.GetByKey("a/" + strconv.Itoa(i))
				if (got == any(o)) != reuse {
					t.Fatalf("after the swap a/%d is %p; live was %p, reuse %v", i, got, o, reuse)
				}
			}
			if objs, _ := c.ByIndex("color", "red"); len(objs) != n {
				t.Fatalf("ByIndex(color, red) has %d objects after the swap, want %d", len(objs), n)
			}
		})
	}
}

func TestRelistReuseNeedsSameUIDAndResourceVersion(t *testing.T) {
	live := obj("a", "x", "uid-1", "10", nil)
	cases := []struct {
		name      string
		next      *pom
		wantReuse bool
	}{
		{"same UID and resourceVersion", obj("a", "x", "uid-1", "10", labels("ignored", "yes")), true},
		{"other UID", obj("a", "x", "uid-2", "10", nil), false},
		{"other resourceVersion", obj("a", "x", "uid-1", "11", nil), false},
		{"no UIDs", obj("a", "x", "", "10", nil), false},
		{"other key", obj("b", "x", "uid-1", "10", nil), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
			if err := c.Add(live); err != nil {
				t.Fatal(err)
			}
			c.StartReplace()
			stored, reused := mustAddToReplace(t, c, tc.next, nil)
			if reused != tc.wantReuse || (stored == any(live)) != tc.wantReuse {
				t.Fatalf("reused %v, stored live object %v; want %v", reused, stored == any(live), tc.wantReuse)
			}
		})
	}

	t.Run("empty resourceVersion never matches", func(t *testing.T) {
		c := NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
		if err := c.Add(obj("a", "x", "uid-1", "", nil)); err != nil {
			t.Fatal(err)
		}
		c.StartReplace()
		if _, reused := mustAddToReplace(t, c, obj("a", "x", "uid-1", "", nil), nil); reused {
			t.Fatal("an object without resourceVersion was reused")
		}
	})
}

func TestFinishReplaceDiff(t *testing.T) {
	c := NewIndexer(toolscache.MetaNamespaceKeyFunc, baseIndexers())
	kept := obj("a", "kept", "u1", "1", nil)
	changed := obj("a", "changed", "u2", "1", nil)
	gone1 := obj("a", "gone1", "u3", "1", nil)
	gone2 := obj("b", "gone2", "u4", "1", nil)
	for _, o := range []*pom{kept, changed, gone1, gone2} {
		if err := c.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	added := obj("b", "added", "u5", "2", nil)
	changedNew := obj("a", "changed", "u2", "2", nil)
	addedAgain := obj("b", "added", "u5", "3", nil)

	c.StartReplace()
	for _, o := range []*pom{added, kept.DeepCopy(), changedNew, addedAgain} {
		mustAddToReplace(t, c, o, nil)
	}
	d, err := c.FinishReplace("9")
	if err != nil {
		t.Fatal(err)
	}

	want := []Change{
		{Key: "b/added", Old: nil, New: addedAgain}, // first position, last object
		{Key: "a/kept", Old: kept, New: kept},
		{Key: "a/changed", Old: changed, New: changedNew},
	}
	if !slices.Equal(d.Changes, want) {
		t.Errorf("Changes = %v, want %v", d.Changes, want)
	}
	if d.ResourceVersion != "9" || d.Reused != 1 {
		t.Errorf("ResourceVersion %q Reused %d, want 9 and 1", d.ResourceVersion, d.Reused)
	}
	slices.SortFunc(d.Deleted, func(a, b toolscache.DeletedFinalStateUnknown) int { return cmp.Compare(a.Key, b.Key) })
	wantDeleted := []toolscache.DeletedFinalStateUnknown{{Key: "a/gone1", Obj: gone1}, {Key: "b/gone2", Obj: gone2}}
	if !slices.Equal(d.Deleted, wantDeleted) {
		t.Errorf("Deleted = %v, want %v", d.Deleted, wantDeleted)
	}
	if rv := c.LastStoreSyncResourceVersion(); rv != "9" {
		t.Errorf("LastStoreSyncResourceVersion = %q, want 9", rv)
	}
	if c.Replacing() {
		t.Error("Replacing() after FinishReplace")
	}
}

// A live write between the diff (read lock) and the swap (write lock) makes
// FinishReplace compute the diff again against what it really replaces.
func TestFinishReplaceRecomputesDiffAfterLiveWrite(t *testing.T) {
	c := NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
	a := obj("a", "a", "ua", "1", nil)
	b := obj("a", "b", "ub", "1", nil)
	if err := c.Add(a); err != nil {
		t.Fatal(err)
	}
	c.StartReplace()
	mustAddToReplace(t, c, a.DeepCopy(), nil)

	a2 := obj("a", "a", "ua", "2", nil)
	c.testHookBeforeWriteLock = func() {
		c.testHookBeforeWriteLock = nil
		if err := c.Add(a2); err != nil {
			t.Error(err)
		}
		if err := c.Add(b); err != nil {
			t.Error(err)
		}
	}
	d, err := c.FinishReplace("3")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) != 1 || d.Changes[0].Old != any(a2) || d.Changes[0].New != any(a) || d.Reused != 0 {
		t.Errorf("Changes = %v Reused %d, want a/a from %p (written last) to the reused %p", d.Changes, d.Reused, a2, a)
	}
	if len(d.Deleted) != 1 || d.Deleted[0].Key != "a/b" || d.Deleted[0].Obj != any(b) {
		t.Errorf("Deleted = %v, want a/b written during the paged replace", d.Deleted)
	}
}

// Likewise AddIndexers indexes the live generation again if a live write
// came between its read-locked build and the write lock.
func TestAddIndexersReindexesAfterLiveWrite(t *testing.T) {
	c := NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
	if err := c.Add(obj("a", "before", "", "1", nil)); err != nil {
		t.Fatal(err)
	}
	c.testHookBeforeWriteLock = func() {
		c.testHookBeforeWriteLock = nil
		if err := c.Add(obj("a", "during", "", "2", nil)); err != nil {
			t.Error(err)
		}
	}
	if err := c.AddIndexers(toolscache.Indexers{"name": nameIndex}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"before", "during"} {
		if keys, _ := c.IndexKeys("name", name); len(keys) != 1 {
			t.Errorf("IndexKeys(name, %s) = %v, want [a/%s]", name, keys, name)
		}
	}
}

func TestReplaceOpsWithoutReplace(t *testing.T) {
	c := NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
	if c.Replacing() {
		t.Fatal("a new indexer is replacing")
	}
	if _, _, err := c.AddToReplace(obj("a", "x", "", "1", nil), nil); !errors.Is(err, ErrNoReplace) {
		t.Errorf("AddToReplace error %v, want ErrNoReplace", err)
	}
	if _, err := c.FinishReplace("1"); !errors.Is(err, ErrNoReplace) {
		t.Errorf("FinishReplace error %v, want ErrNoReplace", err)
	}
	c.StartReplace()
	if !c.Replacing() {
		t.Fatal("not replacing after StartReplace")
	}
	c.AbortReplace()
	if c.Replacing() {
		t.Fatal("replacing after AbortReplace")
	}
	c.StartReplace()
	_, _, err := c.AddToReplace(obj("a", "x", "", "1", nil), failTransform)
	if err == nil || err.Error() != "transforming: boom" {
		t.Errorf("a failing transform gave %v, want transforming: boom", err)
	}
	var keyErr toolscache.KeyError
	if _, _, err := c.AddToReplace("not an object", nil); !errors.As(err, &keyErr) {
		t.Errorf("an object without a key gave %v, want a KeyError", err)
	}
}

// TestConcurrentReadersSeeWholeGenerations: while paged replaces
// generation k by generation k+1 (other objects, other sizes), every read
// sees one complete generation, whether the replace is swapped in or
// written in place.
func TestConcurrentReadersSeeWholeGenerations(t *testing.T) {
	// As the Indexer decides (built beside: nothing is reused), and with
	// every replace written in place.
	for l, limit := range inPlaceLimits {
		if l == 1 {
			continue // the same as the Indexer's own here
		}
		t.Run([]string{"own-limit", "", "in-place"}[l], func(t *testing.T) {
			const (
				generations = 40
				readers     = 3
			)
			size := func(gen int) int { return 50 + 7*(gen%5) } // differs between neighbours
			genOf := func(o any) int {
				m, err := meta.Accessor(o)
				if err != nil {
					t.Errorf("object without metadata: %v", err)
					return -1
				}
				g, _ := strconv.Atoi(m.GetLabels()["gen"])
				return g
			}
			indexers := toolscache.Indexers{
				toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
				"gen":                     func(o any) ([]string, error) { return []string{strconv.Itoa(genOf(o))}, nil },
			}
			c := NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers)
			c.testInPlaceLimit = limit
			build := func(gen int) []*pom {
				objs := make([]*pom, size(gen))
				for i := range objs {
					// Alternate namespaces, and a different resourceVersion per
					// generation so that nothing is reused.
					objs[i] = obj([]string{"x", "y"}[i%2], strconv.Itoa(i), "u"+strconv.Itoa(i), strconv.Itoa(gen), labels("gen", strconv.Itoa(gen)))
				}
				return objs
			}
			for _, o := range build(0) {
				if err := c.Add(o); err != nil {
					t.Fatal(err)
				}
			}

			// check fails unless objs are all of one generation and of its size in
			// namespace ns ("" for all).
			check := func(what string, objs []any, ns string) {
				if len(objs) == 0 {
					t.Errorf("%s: empty", what)
					return
				}
				gen := genOf(objs[0])
				for _, o := range objs[1:] {
					if g := genOf(o); g != gen {
						t.Errorf("%s mixes generations %d and %d", what, gen, g)
						return
					}
				}
				want := size(gen)
				if ns == "x" {
					want = (want + 1) / 2
				}
				if len(objs) != want {
					t.Errorf("%s: %d objects of generation %d, want %d", what, len(objs), gen, want)
				}
			}

			var done atomic.Bool
			var reads atomic.Int64
			var wg sync.WaitGroup
			for range readers {
				wg.Go(func() {
					for !done.Load() && !t.Failed() {
						check("List", c.List(), "")
						objs, err := c.ByIndex(toolscache.NamespaceIndex, "x")
						if err != nil {
							t.Error(err)
							return
						}
						check("ByIndex(namespace, x)", objs, "x")
						values := c.ListIndexFuncValues("gen")
						if len(values) != 1 {
							t.Errorf("ListIndexFuncValues(gen) = %v, want one generation", values)
						}
						reads.Add(1)
					}
				})
			}
			for gen := 1; gen <= generations && !t.Failed(); gen++ {
				// Let a read finish first: on a busy machine the readers
				// might otherwise not run before the last replace.
				for seen := reads.Load(); reads.Load() == seen && !t.Failed(); {
					runtime.Gosched()
				}
				c.StartReplace()
				for _, o := range build(gen) {
					if _, _, err := c.AddToReplace(o, nil); err != nil {
						t.Error(err)
					}
				}
				d, err := c.FinishReplace(strconv.Itoa(gen))
				if err != nil {
					t.Fatal(err)
				}
				if d.Reused != 0 || len(d.Changes) != size(gen) {
					t.Errorf("generation %d: %d changes, %d reused", gen, len(d.Changes), d.Reused)
				}
			}
			done.Store(true)
			wg.Wait()
			if reads.Load() == 0 {
				t.Fatal("no reads ran during the paged replaces")
			}
		})
	}
}

// A replace that deletes more than it may in place and leaves at most half
// the objects its generation was sized for (a sharded informer's range
// shrank) makes the live generation anew with maps of the right size: Go's
// maps never shrink. The copy holds the same objects and index entries. A
// replace that deletes a quarter is written in place: the live generation
// stays.
func TestFinishReplaceShrinksOversizedMaps(t *testing.T) {
	c := NewIndexer(toolscache.MetaNamespaceKeyFunc, baseIndexers())
	objs := fill(t, c, 4*minShrinkToFit)

	// replace returns the generation built beside the live one, nil if the
	// replace was written in place.
	replace := func(keep func(i int) bool) (built *generation) {
		t.Helper()
		c.StartReplace()
		for i, o := range objs {
			if keep(i) {
				mustAddToReplace(t, c, o, nil)
			}
		}
		c.testHookBeforeWriteLock = func() { built = c.buffer.gen }
		defer func() { c.testHookBeforeWriteLock = nil }()
		if _, err := c.FinishReplace("2"); err != nil {
			t.Fatal(err)
		}
		return built
	}

	live := c.live
	if built := replace(func(i int) bool { return i%4 != 0 }); built != nil || c.live != live {
		t.Error("a replace deleting a quarter of the objects was not written in place")
	}
	buffered := replace(func(i int) bool { return i%4 == 1 })
	if buffered == nil {
		t.Fatal("a replace deleting two thirds of the objects was written in place")
	}
	if c.live == buffered {
		t.Fatal("a replace keeping a third of what its generation was sized for kept the oversized maps")
	}
	if !maps.Equal(c.live.items, buffered.items) || len(c.live.indices) != len(buffered.indices) {
		t.Fatalf("the shrunk generation holds %d objects, the buffer %d", len(c.live.items), len(buffered.items))
	}
	for i := range buffered.indices {
		if len(c.live.indices[i]) != len(buffered.indices[i]) {
			t.Errorf("index %d: %d values, the buffer's %d", i, len(c.live.indices[i]), len(buffered.indices[i]))
		}
	}
	// Reads and writes work on the new maps.
	got, err := c.ByIndex("color", "red")
	if err != nil || len(got) != minShrinkToFit {
		t.Fatalf("ByIndex(color=red) = %d objects, %v; want %d", len(got), err, minShrinkToFit)
	}
	if err := c.Delete(objs[1]); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.ByIndex("color", "red"); len(got) != minShrinkToFit-1 {
		t.Errorf("after a delete ByIndex(color=red) = %d objects, want %d", len(got), minShrinkToFit-1)
	}
}

// A paged replace is written in place while at most a quarter of the live
// generation's objects differ or are deleted; past that it is built beside
// the live generation, from the moment the quarter is passed while adding,
// or at the end when the deletions pass it. Either way the store ends with
// exactly what was buffered.
func TestPagedReplaceInPlaceUpToAQuarter(t *testing.T) {
	const n = 100
	cases := []struct {
		name           string
		changed, added int // objects given a new resourceVersion; new keys
		deleted        int // live objects left out
		wantBeside     bool
		besideAt       int // the add after which it is built beside (0: at the end)
	}{
		{name: "unchanged", wantBeside: false},
		{name: "a quarter changed", changed: 25},
		{name: "a quarter and one changed", changed: 26, wantBeside: true, besideAt: 26},
		{name: "new keys count as changed", changed: 20, added: 6, wantBeside: true, besideAt: n + 6},
		{name: "a quarter deleted", deleted: 25},
		{name: "a quarter changed and one deleted", changed: 25, deleted: 1, wantBeside: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewIndexer(toolscache.MetaNamespaceKeyFunc, baseIndexers())
			objs := fill(t, c, n)
			live := c.live
			c.StartReplace()
			var list []*pom
			for i, o := range objs[tc.deleted:] {
				next := o.DeepCopy()
				if i < tc.changed {
					next.ResourceVersion = "2"
					next.Labels = labels("color", "blue")
				}
				list = append(list, next)
			}
			for i := range tc.added {
				list = append(list, obj("a", "new-"+strconv.Itoa(i), "uid-new-"+strconv.Itoa(i), "2", labels("color", "blue")))
			}
			builtAt := 0
			for i, o := range list {
				mustAddToReplace(t, c, o, nil)
				if builtAt == 0 && c.buffer.gen != nil {
					builtAt = i + 1
				}
			}
			d, err := c.FinishReplace("3")
			if err != nil {
				t.Fatal(err)
			}
			if beside := c.live != live; beside != tc.wantBeside {
				t.Errorf("built beside the live generation: %t, want %t", beside, tc.wantBeside)
			}
			if builtAt != tc.besideAt {
				t.Errorf("built beside after add %d, want %d (0: not while adding)", builtAt, tc.besideAt)
			}
			if got, want := d.Reused, n-tc.deleted-tc.changed; got != want {
				t.Errorf("Diff.Reused = %d, want %d", got, want)
			}
			if len(d.Deleted) != tc.deleted || len(d.Changes) != len(list) {
				t.Errorf("Diff has %d deleted, %d changes; want %d, %d", len(d.Deleted), len(d.Changes), tc.deleted, len(list))
			}
			if got := len(c.List()); got != len(list) {
				t.Errorf("the store holds %d objects, want %d", got, len(list))
			}
			blue, _ := c.ByIndex("color", "blue")
			red, _ := c.ByIndex("color", "red")
			if len(blue) != tc.changed+tc.added || len(red) != len(list)-tc.changed-tc.added {
				t.Errorf("index color: %d blue, %d red; want %d, %d", len(blue), len(red), tc.changed+tc.added, len(list)-tc.changed-tc.added)
			}
		})
	}
}

// An unchanged relist written in place holds much less beside the store
// than one built beside it: a key set and the change list instead of a
// second map and second indices. Measured as the live heap after a full GC
// at the end of the replace, both generations (or the record) held, over
// the heap before it started; the relist's copies are allocated before, so
// the figure is the replace's own.
func TestPagedReplaceInPlaceHoldsLess(t *testing.T) {
	const n = 20_000
	held := func(limit func(int) int) uint64 {
		c := NewIndexer(toolscache.MetaNamespaceKeyFunc, baseIndexers())
		c.testInPlaceLimit = limit
		objs := fill(t, c, n)
		copies := make([]*pom, n)
		for i, o := range objs {
			copies[i] = o.DeepCopy()
		}
		base := memstat.HeapAfterGC()
		var atEnd uint64
		c.testHookBeforeWriteLock = func() { atEnd = memstat.HeapAfterGC() }
		c.StartReplace()
		for _, o := range copies {
			mustAddToReplace(t, c, o, nil)
		}
		if _, err := c.FinishReplace("2"); err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(copies)
		return atEnd - base
	}
	inPlace, beside := held(nil), held(func(int) int { return 0 })
	t.Logf("held beside the store, per object: in place %d B, built beside %d B", inPlace/n, beside/n)
	if inPlace*10 > beside*7 {
		t.Errorf("in place holds %d B per object, built beside %d B: want at most 70%%", inPlace/n, beside/n)
	}
}

// TestReplaceStoresUnderTheTransformedKey: a transform that renames (here
// into another namespace) stores the listed object under the new key, as a
// live write of the transformed object does, so that a relist replaces the
// objects it listed instead of adding a second copy of each beside them.
func TestReplaceStoresUnderTheTransformedKey(t *testing.T) {
	rename := func(o any) (any, error) {
		p := o.(*pom).DeepCopy()
		p.Namespace = "renamed"
		return p, nil
	}
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"plain", nil},
		{"plain, no reuse", []Option{WithRelistReuse(false)}},
		{"encoded", []Option{WithCodec(codec.New())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewIndexer(toolscache.MetaNamespaceKeyFunc, baseIndexers(), tc.opts...)
			listed := obj("a", "x", "uid-1", "1", nil)
			live, _ := rename(listed)
			if err := c.Add(live); err != nil { // the live path stores what the transform returned
				t.Fatal(err)
			}
			c.StartReplace()
			mustAddToReplace(t, c, listed.DeepCopy(), rename)
			d, err := c.FinishReplace("2")
			if err != nil {
				t.Fatal(err)
			}
			if keys := c.ListKeys(); !slices.Equal(keys, []string{"renamed/x"}) {
				t.Fatalf("keys after the relist: %v, want [renamed/x]", keys)
			}
			if len(d.Deleted) != 0 || len(d.Changes) != 1 || d.Changes[0].Old == nil {
				t.Fatalf("diff: %d deleted, changes %+v; want renamed/x changed in place", len(d.Deleted), d.Changes)
			}
		})
	}
}

// valueObject is an object that is not a pointer: it has no identity to
// compare, so relist reuse takes whatever the live generation holds under
// its key.
type valueObject struct{ *metav1.ObjectMeta }

func TestRelistReuseOfObjectsThatAreNotPointers(t *testing.T) {
	c := NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
	for i := range 8 {
		if err := c.Add(valueObject{&metav1.ObjectMeta{Namespace: "a", Name: strconv.Itoa(i), UID: "u", ResourceVersion: "1"}}); err != nil {
			t.Fatal(err)
		}
	}
	c.StartReplace()
	added := make(chan error, 1)
	go func() {
		stored, reused, err := c.AddToReplace(valueObject{&metav1.ObjectMeta{Namespace: "a", Name: "3", UID: "u", ResourceVersion: "1"}}, nil)
		if err == nil && !reused {
			err = fmt.Errorf("stored %v, not reused", stored)
		}
		added <- err
	}()
	select {
	case err := <-added:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AddToReplace of an unchanged object that is not a pointer did not return")
	}
	if _, err := c.FinishReplace("2"); err != nil {
		t.Fatal(err)
	}
	if keys := c.ListKeys(); len(keys) != 1 || keys[0] != "a/3" {
		t.Fatalf("after the replace the store holds %v, want [a/3]", keys)
	}
}
