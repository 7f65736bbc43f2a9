package cache

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgofeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/codec"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// step is one operation of a table case, applied to both stores.
type step func(h *harness)

func add(o any) step                   { return func(h *harness) { h.add(o) } }
func update(o any) step                { return func(h *harness) { h.update(o) } }
func del(o any) step                   { return func(h *harness) { h.delete(o) } }
func upsert(o any) step                { return func(h *harness) { h.upsert(o) } }
func remove(o any) step                { return func(h *harness) { h.remove(o) } }
func replace(rv string, l ...any) step { return func(h *harness) { h.replace(l, rv) } }
func bookmark(rv string) step          { return func(h *harness) { h.bookmark(rv) } }
func start() step                      { return func(h *harness) { h.startReplace() } }
func abort() step                      { return func(h *harness) { h.abortReplace() } }
func finish(rv string) step            { return func(h *harness) { h.finishReplace(rv) } }
func buffer(o any) step                { return func(h *harness) { h.addToReplace(o, nil) } }
func bufferT(o any, tf toolscache.TransformFunc) step {
	return func(h *harness) { h.addToReplace(o, tf) }
}
func addIndexers(names ...string) step {
	return func(h *harness) {
		idx := toolscache.Indexers{}
		for _, n := range names {
			for _, e := range extraIndexers {
				if e.name == n {
					idx[n] = e.fn
				}
			}
		}
		h.addIndexers(idx)
	}
}

func txn(ops ...toolscache.Transaction) step {
	return func(h *harness) { h.transaction(ops) }
}
func tAdd(o any) toolscache.Transaction {
	return toolscache.Transaction{Type: toolscache.TransactionTypeAdd, Object: o}
}
func tUpdate(o any) toolscache.Transaction {
	return toolscache.Transaction{Type: toolscache.TransactionTypeUpdate, Object: o}
}
func tDelete(o any) toolscache.Transaction {
	return toolscache.Transaction{Type: toolscache.TransactionTypeDelete, Object: o}
}

// copyOf is a decoded copy of o, as a relist would return it.
func copyOf(o *pom) *pom { return o.DeepCopy() }

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

var annotate toolscache.TransformFunc = func(o any) (any, error) {
	c := o.(*pom).DeepCopy()
	c.Annotations = map[string]string{"transformed": "yes"}
	return c, nil
}

var failTransform toolscache.TransformFunc = func(any) (any, error) { return nil, errors.New("boom") }

// TestIndexerAgainstClientGo runs hand-written operation sequences on our
// Indexer and client-go's and compares every read after each step.
func TestIndexerAgainstClientGo(t *testing.T) {
	a0 := obj("a", "0", "u-a0", "1", labels("color", "red"))
	a0blue := obj("a", "0", "u-a0", "2", labels("color", "blue", "tags", "x,y"))
	a0tags := obj("a", "0", "u-a0", "3", labels("color", "blue", "tags", "y,z"))
	a0bare := obj("a", "0", "u-a0", "4", nil)
	a0x := obj("a", "0", "u-a0", "8", labels("tags", "x"))
	a1 := obj("a", "1", "u-a1", "5", labels("color", "red", "tags", "x"))
	a1new := obj("a", "1", "u-a1", "9", labels("color", "green"))
	b1 := obj("b", "1", "u-b1", "6", labels("tags", "y,y"))
	c2 := obj("", "2", "u-2", "7", labels("color", "red"))
	norv := obj("b", "3", "u-b3", "", labels("color", "red"))

	many := func(n int) []step {
		var steps []step
		for i := range n {
			steps = append(steps, add(obj("a", fmt.Sprint("m", i), "", fmt.Sprint(100+i), labels("color", "teal"))))
		}
		for i := range n {
			steps = append(steps, del(obj("a", fmt.Sprint("m", i), "", fmt.Sprint(200+i), nil)))
		}
		return steps
	}

	cases := []struct {
		name  string
		reuse bool
		steps []step
	}{
		{name: "empty store"},
		{name: "add and update move index values", steps: []step{
			add(a0), add(a1), add(b1), add(c2),
			update(a0blue), update(a0tags), update(a0bare), update(a0), update(a0blue), update(a0x),
			add(a0), // the same object again
		}},
		{name: "upsert and remove return the replaced object", steps: []step{
			upsert(a0), upsert(a0blue), upsert(a1), remove(a0), remove(a0), remove(a1new),
		}},
		{name: "delete by object, tombstone and explicit key", steps: []step{
			add(a0), add(a1), add(b1),
			del(a1new), // another object with the same key: deleted, its rv recorded
			del(toolscache.DeletedFinalStateUnknown{Key: "a/0", Obj: a0}),
			del(toolscache.DeletedFinalStateUnknown{Key: "a/0", Obj: a0}), // absent
			del(toolscache.ExplicitKey("b/1")),                            // no metadata: rv kept
			del(obj("z", "9", "", "77", nil)),                             // absent key, rv still recorded
		}},
		{name: "objects without a key are rejected", steps: []step{
			add(a0), add("not an object"), update(42), del(struct{}{}), upsert(3.5), remove(nil),
			replace("10", a1, "not an object", b1), // unchanged, rv kept
		}},
		{name: "transactions", steps: []step{
			txn(), // nothing: the resourceVersion stays
			add(c2),
			txn(tAdd(a0), tAdd(a1), tUpdate(a0blue), tDelete(a1), tAdd(b1)),
			txn(tUpdate(a0tags), tDelete(toolscache.DeletedFinalStateUnknown{Key: "b/1", Obj: b1}), tDelete(a1new)),
			// Keyless objects are reported and skipped; the rest is applied
			// and the last applied object's resourceVersion is recorded.
			txn(tAdd("not an object"), tAdd(a0x), tUpdate(42), tAdd(a1)),
			txn(tAdd(a1new), tDelete(toolscache.ExplicitKey("a/0"))), // no metadata last: rv kept
			txn(toolscache.Transaction{Type: "Replace", Object: c2}, tAdd(norv)),
			txn(tAdd(struct{}{})), // nothing applied
		}},
		{name: "empty resourceVersion is recorded", steps: []step{add(a0), add(norv)}},
		{name: "replace", steps: []step{
			add(a0), add(a1), bookmark("3"),
			replace("50", a1new, b1, c2, b1, a0blue),
			replace("", a1),
			replace("60"),
		}},
		{name: "bookmark", steps: []step{add(a0), bookmark("100"), add(b1), bookmark("")}},
		{name: "a set grows past the small-set size and empties", steps: many(3 * maxFewKeys)},
		{name: "add indexers to a non-empty store", steps: []step{
			add(a0), add(a1), add(b1),
			addIndexers("name", "uid"),
			addIndexers("color"),          // conflict
			addIndexers(),                 // nothing
			add(a0blue), del(b1), add(c2), // the new indices follow writes
		}},
		{name: "conflicting names add nothing", steps: []step{
			add(a0), addIndexers("color", "name"), addIndexers("name"), addIndexers("name"),
		}},
		{name: "paged replace replaces the live generation", steps: []step{
			add(a0), add(a1), add(b1),
			start(), buffer(a1new), buffer(c2), buffer(norv),
			finish("10"),
		}},
		{name: "paged replace of an empty store and to an empty store", steps: []step{
			start(), finish("1"), add(a0), add(a1), start(), finish("2"),
		}},
		{name: "paged replace reuses unchanged objects", reuse: true, steps: []step{
			add(a0), add(a1), add(b1), add(norv),
			start(),
			buffer(copyOf(a0)),    // reused
			buffer(copyOf(a1new)), // newer rv: not reused
			buffer(obj("b", "1", "other-uid", "6", nil)), // same rv, other UID: not reused
			buffer(copyOf(norv)),                         // no rv: not reused
			finish("11"),
		}},
		{name: "paged replace without reuse keeps the new copies", steps: []step{
			add(a0), add(a1), start(), buffer(copyOf(a0)), buffer(copyOf(a1)), finish("12"),
		}},
		{name: "same key twice in a paged replace: the later wins", reuse: true, steps: []step{
			add(a0), add(a1),
			start(), buffer(copyOf(a0)), buffer(b1), buffer(a0blue), buffer(copyOf(a1)), buffer(a0tags),
			finish("13"),
		}},
		{name: "transform", reuse: true, steps: []step{
			add(a0), start(),
			bufferT(copyOf(a0), annotate),      // reused: not transformed
			bufferT(a1, annotate),              // transformed
			bufferT(b1, failTransform),         // dropped
			bufferT("not an object", annotate), // KeyError
			finish("14"),
		}},
		{name: "abort and the paged replace ops without a paged replace", steps: []step{
			add(a0), buffer(a1), finish("1"),
			start(), buffer(a1), abort(),
			buffer(b1), finish("2"), abort(),
		}},
		{name: "start discards a paged replace in progress", steps: []step{
			add(a0), start(), buffer(a1), start(), buffer(b1), finish("15"),
		}},
		{name: "live writes during a paged replace are replaced by the swap", reuse: true, steps: []step{
			add(a0), add(a1),
			start(), buffer(copyOf(a0)), add(b1), update(a1new), del(a0), bookmark("20"), buffer(c2),
			finish("16"),
		}},
		{name: "add indexers during a paged replace", reuse: true, steps: []step{
			add(a0), add(b1),
			start(), buffer(copyOf(a0)), buffer(a1),
			addIndexers("name"),
			buffer(c2), finish("17"),
		}},
		{name: "replace during a paged replace", steps: []step{
			add(a0), start(), buffer(a1), replace("30", b1, c2), finish("18"),
		}},
	}
	// Each case with paged replaces recorded in place as the Indexer
	// decides, never, and always (see inPlaceLimits).
	limits := []string{"own-limit", "built-beside", "in-place"}
	for _, tc := range cases {
		for l, limit := range inPlaceLimits {
			t.Run(tc.name+"/"+limits[l], func(t *testing.T) {
				h := newHarness(t, tc.reuse)
				h.setInPlaceLimit(limit)
				h.check()
				for i, s := range tc.steps {
					s(h)
					func() {
						defer func() {
							if t.Failed() {
								t.Logf("after step %d", i)
							}
						}()
						h.check()
					}()
				}
			})
		}
	}
}

// panicMessage runs f and returns what it panicked with, or "" if it did not.
func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

func failingIndex(o any) ([]string, error) {
	if m, err := meta.Accessor(o); err == nil && m.GetLabels()["bad"] == "true" {
		return nil, errors.New("cannot index")
	}
	return []string{"ok"}, nil
}

// TestIndexFuncErrorPanics: an index function that fails on a stored object
// panics, as in client-go, and with the same message.
func TestIndexFuncErrorPanics(t *testing.T) {
	bad := obj("a", "bad", "", "1", labels("bad", "true"))
	good := obj("a", "good", "", "2", nil)
	kf := toolscache.MetaNamespaceKeyFunc

	t.Run("Add", func(t *testing.T) {
		ours := NewIndexer(kf, toolscache.Indexers{"f": failingIndex})
		theirs := toolscache.NewIndexer(kf, toolscache.Indexers{"f": failingIndex})
		got := panicMessage(func() { _ = ours.Add(bad) })
		want := panicMessage(func() { _ = theirs.Add(bad) })
		if got == "" || got != want {
			t.Fatalf("Add panicked with %q, client-go with %q", got, want)
		}
	})

	// client-go's stores the object and indexes it in the indices before
	// the failing one; ours computes every value first.
	t.Run("Add and Update leave the store as it was", func(t *testing.T) {
		ours := NewIndexer(kf, toolscache.Indexers{"a": nameIndex, "f": failingIndex, "z": nameIndex})
		if err := ours.Add(good); err != nil {
			t.Fatal(err)
		}
		if msg := panicMessage(func() { _ = ours.Add(bad) }); msg == "" {
			t.Fatal("Add of an object an index function fails on did not panic")
		}
		badGood := obj("a", "good", "", "3", labels("bad", "true"))
		if msg := panicMessage(func() { _ = ours.Update(badGood) }); msg == "" {
			t.Fatal("Update to an object an index function fails on did not panic")
		}
		if keys := ours.ListKeys(); len(keys) != 1 || keys[0] != "a/good" {
			t.Fatalf("after the panics the store holds %v, want [a/good]", keys)
		}
		if got, _, _ := ours.GetByKey("a/good"); got.(metav1.Object).GetResourceVersion() != "2" {
			t.Fatalf("after a panicking Update a/good has resourceVersion %s, want 2", got.(metav1.Object).GetResourceVersion())
		}
		for _, name := range []string{"a", "z"} {
			if vals := ours.ListIndexFuncValues(name); len(vals) != 1 || vals[0] != "good" {
				t.Fatalf("after the panics index %q has values %v, want [good]", name, vals)
			}
		}
	})

	// A replace into an empty store builds a generation beside the live
	// one; a failing object must not be left in it, half indexed.
	t.Run("AddToReplace into a generation", func(t *testing.T) {
		ours := NewIndexer(kf, toolscache.Indexers{"a": nameIndex, "f": failingIndex}, WithRelistReuse(false))
		ours.StartReplace()
		if msg := panicMessage(func() { _, _, _ = ours.AddToReplace(bad, nil) }); msg == "" {
			t.Fatal("AddToReplace of an object an index function fails on did not panic")
		}
		if _, _, err := ours.AddToReplace(good, nil); err != nil {
			t.Fatal(err)
		}
		d, err := ours.FinishReplace("5")
		if err != nil {
			t.Fatal(err)
		}
		if keys := ours.ListKeys(); len(keys) != 1 || keys[0] != "a/good" {
			t.Fatalf("after the replace the store holds %v, want [a/good]", keys)
		}
		if vals := ours.ListIndexFuncValues("a"); len(vals) != 1 || vals[0] != "good" {
			t.Fatalf("after the replace index a has values %v, want [good]", vals)
		}
		if len(d.Changes) != 1 || d.Changes[0].Key != "a/good" {
			t.Fatalf("the replace's changes are %+v, want one for a/good", d.Changes)
		}
	})

	// A replace recorded in place writes into the live generation when it
	// finishes: a failing object must panic when it is added, not halfway
	// through those writes.
	t.Run("AddToReplace in place", func(t *testing.T) {
		ours := NewIndexer(kf, toolscache.Indexers{"a": nameIndex, "f": failingIndex})
		var live []*pom
		for i := range 8 {
			o := obj("a", fmt.Sprintf("good-%d", i), fmt.Sprint(i), "2", nil)
			if err := ours.Add(o); err != nil {
				t.Fatal(err)
			}
			live = append(live, o)
		}
		ours.StartReplace()
		if msg := panicMessage(func() { _, _, _ = ours.AddToReplace(bad, nil) }); msg == "" {
			t.Fatal("AddToReplace of an object an index function fails on did not panic")
		}
		for _, o := range live {
			if _, reused, err := ours.AddToReplace(obj("a", o.Name, string(o.UID), "2", nil), nil); err != nil || !reused {
				t.Fatalf("AddToReplace of unchanged %s: reused %v, %v", o.Name, reused, err)
			}
		}
		if _, err := ours.FinishReplace("5"); err != nil {
			t.Fatal(err)
		}
		if keys := ours.ListKeys(); len(keys) != len(live) || slices.Contains(keys, "a/bad") {
			t.Fatalf("after the replace the store holds %v, want the %d good objects", keys, len(live))
		}
		if vals := ours.ListIndexFuncValues("f"); len(vals) != 1 || vals[0] != "ok" {
			t.Fatalf("after the replace index f has values %v, want [ok]", vals)
		}
	})

	t.Run("AddIndexers leaves the store as it was", func(t *testing.T) {
		ours := NewIndexer(kf, nil)
		theirs := toolscache.NewIndexer(kf, toolscache.Indexers{})
		for _, s := range []toolscache.Indexer{ours, theirs} {
			if err := s.Add(good); err != nil {
				t.Fatal(err)
			}
			if err := s.Add(bad); err != nil {
				t.Fatal(err)
			}
		}
		got := panicMessage(func() { _ = ours.AddIndexers(toolscache.Indexers{"f": failingIndex}) })
		want := panicMessage(func() { _ = theirs.AddIndexers(toolscache.Indexers{"f": failingIndex}) })
		if got == "" || got != want {
			t.Fatalf("AddIndexers panicked with %q, client-go with %q", got, want)
		}
		if n := len(ours.GetIndexers()); n != 0 {
			t.Fatalf("after the panic the store has %d indexers, want 0", n)
		}
		if err := ours.AddIndexers(toolscache.Indexers{"f": nameIndex}); err != nil {
			t.Fatalf("AddIndexers after the panic: %v", err)
		}
	})

	t.Run("AddToReplace and Replace", func(t *testing.T) {
		ours := NewIndexer(kf, toolscache.Indexers{"f": failingIndex})
		if err := ours.Add(good); err != nil {
			t.Fatal(err)
		}
		if msg := panicMessage(func() { _ = ours.Replace([]any{good, bad}, "5") }); !strings.Contains(msg, `key "a/bad" on index "f"`) {
			t.Fatalf("Replace panicked with %q", msg)
		}
		if keys := ours.ListKeys(); len(keys) != 1 || keys[0] != "a/good" {
			t.Fatalf("after a panicking Replace the store holds %v, want [a/good]", keys)
		}
		ours.StartReplace()
		if msg := panicMessage(func() { _, _, _ = ours.AddToReplace(bad, nil) }); !strings.Contains(msg, "cannot index") {
			t.Fatalf("AddToReplace panicked with %q", msg)
		}
	})
}

// gates is a client-go feature gate set with AtomicFIFO turned off.
type gates struct{}

func (gates) Enabled(f clientgofeatures.Feature) bool { return f != clientgofeatures.AtomicFIFO }

func TestLastStoreSyncResourceVersionNeedsAtomicFIFO(t *testing.T) {
	h := newHarness(t, true)
	h.add(obj("a", "0", "", "7", nil))
	if got := h.ours.LastStoreSyncResourceVersion(); got != "7" {
		t.Fatalf("with AtomicFIFO (the default) LastStoreSyncResourceVersion = %q, want 7", got)
	}
	orig := clientgofeatures.FeatureGates()
	clientgofeatures.ReplaceFeatureGates(gates{})
	defer clientgofeatures.ReplaceFeatureGates(orig)
	if got := h.ours.LastStoreSyncResourceVersion(); got != "" {
		t.Fatalf("without AtomicFIFO LastStoreSyncResourceVersion = %q, want empty", got)
	}
	h.check()
}

func TestGetIndexersReturnsACopy(t *testing.T) {
	c := NewIndexer(toolscache.MetaNamespaceKeyFunc, baseIndexers())
	got := c.GetIndexers()
	delete(got, "color")
	got["new"] = nameIndex
	if names := maps.Collect(maps.All(c.GetIndexers())); len(names) != 3 || names["new"] != nil || names["color"] == nil {
		t.Fatalf("changing GetIndexers' result changed the store's indexers: %v", names)
	}

	// Under -race, reading the indexers while they are added must not race.
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 20 {
			if err := c.AddIndexers(toolscache.Indexers{fmt.Sprint("x", i): nameIndex}); err != nil {
				t.Error(err)
			}
		}
	})
	for range 20 {
		for name := range c.GetIndexers() {
			_ = name
		}
	}
	wg.Wait()
	if n := len(c.GetIndexers()); n != 23 {
		t.Fatalf("%d indexers, want 23", n)
	}
}

func TestNewIndexerCopiesIndexers(t *testing.T) {
	idx := baseIndexers()
	c := NewIndexer(toolscache.MetaNamespaceKeyFunc, idx)
	idx["late"] = nameIndex
	if err := c.AddIndexers(toolscache.Indexers{"late": uidIndex}); err != nil {
		t.Fatalf("a name added to the caller's map after NewIndexer conflicts: %v", err)
	}
}

// Large index sets start as slices and turn into maps on the first removal;
// an index function that repeats a value must not list an object twice.
func TestLargeIndexSetsAgainstClientGo(t *testing.T) {
	repeated := func(o any) ([]string, error) {
		cm := o.(*corev1.ConfigMap)
		return []string{cm.Data["group"], cm.Data["group"], "all"}, nil
	}
	indexers := toolscache.Indexers{"group": repeated}
	ours := NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers)
	oracle := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers)
	obj := func(i, group int) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%03d", i), ResourceVersion: fmt.Sprint(i)},
			Data:       map[string]string{"group": fmt.Sprint(group)},
		}
	}
	both := func(op func(toolscache.Indexer) error) {
		t.Helper()
		if err := op(ours); err != nil {
			t.Fatal(err)
		}
		if err := op(oracle); err != nil {
			t.Fatal(err)
		}
	}
	compare := func(when string) {
		t.Helper()
		for _, value := range []string{"0", "1", "all", "missing"} {
			want, _ := oracle.IndexKeys("group", value)
			got, _ := ours.IndexKeys("group", value)
			if fmt.Sprint(want) != fmt.Sprint(got) {
				t.Fatalf("%s: IndexKeys(group, %s) = %v, want %v", when, value, got, want)
			}
			byIndex, _ := ours.ByIndex("group", value)
			if len(byIndex) != len(want) {
				t.Fatalf("%s: ByIndex(group, %s) has %d objects, want %d", when, value, len(byIndex), len(want))
			}
		}
	}
	for i := range 100 {
		both(func(s toolscache.Indexer) error { return s.Add(obj(i, i%2)) })
	}
	compare("after adds")
	for i := 0; i < 100; i += 3 {
		both(func(s toolscache.Indexer) error { return s.Delete(obj(i, i%2)) })
	}
	compare("after deletes")
	for i := 1; i < 100; i += 3 {
		both(func(s toolscache.Indexer) error { return s.Update(obj(i, (i+1)%2)) })
	}
	compare("after moves between groups")

	// The same through a paged replace and a Replace (new resourceVersions: a
	// relist of changed objects, so relist reuse does not apply).
	ours.StartReplace()
	var list []any
	for i := range 60 {
		o := obj(i, i%2)
		o.ResourceVersion = fmt.Sprint(1000 + i)
		if _, _, err := ours.AddToReplace(o, nil); err != nil {
			t.Fatal(err)
		}
		list = append(list, o)
	}
	if _, err := ours.FinishReplace("1000"); err != nil {
		t.Fatal(err)
	}
	if err := oracle.Replace(list, "1000"); err != nil {
		t.Fatal(err)
	}
	compare("after a paged replace")
	for i := 0; i < 60; i += 2 {
		both(func(s toolscache.Indexer) error { return s.Delete(obj(i, i%2)) })
	}
	compare("after deletes from a replaced generation")
}

// An index registered with a nil function is no index in client-go: its
// lookups on an empty store say it does not exist. Ours must say the same
// rather than panic (Index) or answer as if it were empty (ByIndex,
// IndexKeys, label Lists through it).
func TestNilIndexFuncIsNoIndex(t *testing.T) {
	indexers := toolscache.Indexers{"nilfn": nil}
	ours := NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers)
	theirs := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"}}

	errText := func(err error) string {
		if err == nil {
			return "<nil>"
		}
		return err.Error()
	}
	for _, tc := range []struct {
		name   string
		lookup func(toolscache.Indexer) error
	}{
		{"Index", func(s toolscache.Indexer) error { _, err := s.Index("nilfn", obj); return err }},
		{"ByIndex", func(s toolscache.Indexer) error { _, err := s.ByIndex("nilfn", "v"); return err }},
		{"IndexKeys", func(s toolscache.Indexer) error { _, err := s.IndexKeys("nilfn", "v"); return err }},
	} {
		got, want := errText(tc.lookup(ours)), errText(tc.lookup(theirs))
		if got != want || want == "<nil>" {
			t.Errorf("%s on a nil index function: ours %q, client-go %q", tc.name, got, want)
		}
	}
	if _, err := ours.ListByLabels(LabelQuery{IndexName: "nilfn", IndexedValue: "v"}); errText(err) != errText(noIndexError("nilfn")) {
		t.Errorf("ListByLabels through a nil index function: %v, want %v", err, noIndexError("nilfn"))
	}
	if got, want := ours.ListIndexFuncValues("nilfn"), theirs.ListIndexFuncValues("nilfn"); len(got) != 0 || len(want) != 0 {
		t.Errorf("ListIndexFuncValues: ours %v, client-go %v", got, want)
	}
}

// TestCallerWritesIntoAStoredObject: a caller that writes into an object
// the plain store holds (a bug client-go's docs warn of, but a common one)
// changes the values its index functions give for it. client-go's sets
// absorb the mismatch at the object's next update; ours must not then hold
// its key twice under a value (ByIndex returning the object twice, and nil
// once it is deleted).
func TestCallerWritesIntoAStoredObject(t *testing.T) {
	for _, others := range []int{0, maxFewKeys + 4} { // a value's key set as a slice, and a large one
		for name, write := range map[string]func(*pom){
			"changes a value": func(p *pom) { p.Labels["color"] = "blue"; p.Labels["tags"] = "z" },
			"removes a value": func(p *pom) { delete(p.Labels, "color"); delete(p.Labels, "tags") },
		} {
			t.Run(fmt.Sprintf("%s, %d others", name, others), func(t *testing.T) {
				h := newHarness(t, true)
				for i := range others {
					h.add(obj("b", fmt.Sprint(i), "", "1", labels("color", "red", "tags", "x")))
				}
				p := obj("a", "0", "u-a0", "2", labels("color", "red", "tags", "x,y"))
				h.add(p)
				h.check()
				write(p) // into the object the stores hold
				h.update(obj("a", "0", "u-a0", "3", labels("color", "red", "tags", "x,y")))
				h.check()
				h.delete(obj("a", "0", "u-a0", "4", labels("color", "red", "tags", "x,y")))
				h.check()
				h.add(obj("a", "0", "u-a0", "5", labels("color", "red", "tags", "y")))
				h.check()
			})
		}
	}
}

// TestNilIndexFuncPanicNamesTheIndex: a nil IndexFunc (an unset variable in
// an Indexers literal) panics on the first object to index, as client-go's
// does, but with a message naming the index and the key rather than a nil
// pointer dereference; AddIndexers leaves the store as it was.
func TestNilIndexFuncPanicNamesTheIndex(t *testing.T) {
	o := obj("a", "x", "", "1", nil)
	for _, enc := range []bool{false, true} {
		var opts []Option
		if enc {
			opts = append(opts, WithCodec(codec.New()))
		}
		c := NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{"byOwner": nil}, opts...)
		want := `unable to calculate an index entry for key "a/x" on index "byOwner": the index function is nil`
		if got := panicMessage(func() { _ = c.Add(o) }); got != want {
			t.Errorf("encoded %v: Add panicked with %q, want %q", enc, got, want)
		}

		c = NewIndexer(toolscache.MetaNamespaceKeyFunc, nil, opts...)
		if err := c.Add(o); err != nil {
			t.Fatal(err)
		}
		want = `unable to calculate an index entry for key "a/x" on index "late": the index function is nil`
		if got := panicMessage(func() { _ = c.AddIndexers(toolscache.Indexers{"late": nil}) }); got != want {
			t.Errorf("encoded %v: AddIndexers panicked with %q, want %q", enc, got, want)
		}
		if n := len(c.GetIndexers()); n != 0 {
			t.Errorf("encoded %v: after the panic the store has %d indexers, want 0", enc, n)
		}
	}
}
