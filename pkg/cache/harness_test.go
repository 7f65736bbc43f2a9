package cache

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// This file holds the oracle harness: the same operations applied to our
// Indexer and to client-go's, with every read compared after each step.

// pom is the test object type.
type pom = metav1.PartialObjectMetadata

// obj returns a test object; key is "ns/name", or "name" if ns is empty.
func obj(ns, name, uid, rv string, labels map[string]string) *pom {
	return &pom{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, UID: types.UID(uid), ResourceVersion: rv, Labels: labels,
	}}
}

// colorIndex indexes the "color" label; objects without it are not indexed.
func colorIndex(o any) ([]string, error) {
	m, err := meta.Accessor(o)
	if err != nil {
		return nil, err
	}
	if c, ok := m.GetLabels()["color"]; ok {
		return []string{c}, nil
	}
	return nil, nil
}

// tagsIndex indexes the comma-separated "tags" label: zero or more values,
// possibly repeated.
func tagsIndex(o any) ([]string, error) {
	m, err := meta.Accessor(o)
	if err != nil {
		return nil, err
	}
	tags, ok := m.GetLabels()["tags"]
	if !ok {
		return nil, nil
	}
	return strings.Split(tags, ","), nil
}

// nameIndex and uidIndex are for AddIndexers.
func nameIndex(o any) ([]string, error) {
	m, err := meta.Accessor(o)
	if err != nil {
		return nil, err
	}
	return []string{m.GetName()}, nil
}

func uidIndex(o any) ([]string, error) {
	m, err := meta.Accessor(o)
	if err != nil {
		return nil, err
	}
	return []string{string(m.GetUID())}, nil
}

func baseIndexers() toolscache.Indexers {
	return toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		"color":                   colorIndex,
		"tags":                    tagsIndex,
	}
}

// extraIndexers is the pool AddIndexers ops draw from; "color" conflicts
// with baseIndexers.
var extraIndexers = []struct {
	name string
	fn   toolscache.IndexFunc
}{{"name", nameIndex}, {"uid", uidIndex}, {"color", colorIndex}}

// keyspace is every key the harness ops can produce, plus one never used.
var keyspace = func() []string {
	var keys []string
	for _, ns := range []string{"", "a", "b"} {
		for i := range 8 {
			keys = append(keys, key(ns, fmt.Sprint(i)))
		}
	}
	return append(keys, "missing/key")
}()

func key(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// harness drives our Indexer and client-go's side by side.
type harness struct {
	t      testing.TB
	ours   *Indexer
	oracle toolscache.Indexer
	// enc is our Indexer with a codec (see encoded_harness_test.go).
	enc   *Indexer
	reuse bool

	// The restart as the oracle will see it: every object AddToReplace
	// buffered, in order. nil when no paged replace is in progress.
	paged []any
}

func newHarness(t testing.TB, reuse bool) *harness {
	kf := toolscache.DeletionHandlingMetaNamespaceKeyFunc
	return &harness{
		t:      t,
		ours:   NewIndexer(kf, baseIndexers(), WithRelistReuse(reuse)),
		oracle: toolscache.NewIndexer(kf, baseIndexers()),
		enc:    newEncodedStore(reuse),
		reuse:  reuse,
	}
}

// setInPlaceLimit sets both of our Indexers' bound on the writes a paged
// replace does in place (nil: their own).
func (h *harness) setInPlaceLimit(limit func(size int) int) {
	h.ours.testInPlaceLimit = limit
	h.enc.testInPlaceLimit = limit
}

// sameErr fails unless both errors are nil or both have the same text.
func (h *harness) sameErr(what string, ours, theirs error) {
	h.t.Helper()
	if (ours == nil) != (theirs == nil) || (ours != nil && ours.Error() != theirs.Error()) {
		h.t.Fatalf("%s: error %v, client-go %v", what, ours, theirs)
	}
}

func (h *harness) add(o any) {
	h.t.Helper()
	err := h.ours.Add(o)
	h.sameErr(fmt.Sprintf("Add(%v)", o), err, h.oracle.Add(o))
	h.sameErr(fmt.Sprintf("encoded Add(%v)", o), h.enc.Add(o), err)
}

func (h *harness) update(o any) {
	h.t.Helper()
	err := h.ours.Update(o)
	h.sameErr(fmt.Sprintf("Update(%v)", o), err, h.oracle.Update(o))
	h.sameErr(fmt.Sprintf("encoded Update(%v)", o), h.enc.Update(o), err)
}

func (h *harness) delete(o any) {
	h.t.Helper()
	err := h.ours.Delete(o)
	h.sameErr(fmt.Sprintf("Delete(%v)", o), err, h.oracle.Delete(o))
	h.sameErr(fmt.Sprintf("encoded Delete(%v)", o), h.enc.Delete(o), err)
}

// upsert checks that Upsert returns what the store held.
func (h *harness) upsert(o any) {
	h.t.Helper()
	want, wantExisted := h.current(o)
	old, existed, err := h.ours.Upsert(o)
	h.sameErr(fmt.Sprintf("Upsert(%v)", o), err, h.oracle.Add(o))
	if old != want || existed != wantExisted {
		h.t.Fatalf("Upsert(%v) = %v, %v; want %v, %v", o, old, existed, want, wantExisted)
	}
	h.encUpsert(o, err, want, wantExisted)
}

// remove checks that Remove returns what the store held.
func (h *harness) remove(o any) {
	h.t.Helper()
	want, wantExisted := h.current(o)
	old, existed, err := h.ours.Remove(o)
	h.sameErr(fmt.Sprintf("Remove(%v)", o), err, h.oracle.Delete(o))
	if old != want || existed != wantExisted {
		h.t.Fatalf("Remove(%v) = %v, %v; want %v, %v", o, old, existed, want, wantExisted)
	}
	h.encRemove(o, err, want, wantExisted)
}

// transaction applies txns as one Transaction to every store and checks
// that they report the same failures.
func (h *harness) transaction(txns []toolscache.Transaction) {
	h.t.Helper()
	errText := func(e *toolscache.TransactionError) string {
		if e == nil {
			return "<nil>"
		}
		return fmt.Sprintf("%v applied, %s", e.SuccessfulIndices, e.Error())
	}
	got := errText(h.ours.Transaction(txns...))
	if want := errText(h.oracle.(toolscache.TransactionStore).Transaction(txns...)); got != want {
		h.t.Fatalf("Transaction(%v): %s, client-go %s", txns, got, want)
	}
	if enc := errText(h.enc.Transaction(txns...)); enc != got {
		h.t.Fatalf("encoded Transaction(%v): %s, plain %s", txns, enc, got)
	}
}

// current returns the oracle's object under o's key.
func (h *harness) current(o any) (any, bool) {
	item, exists, _ := h.oracle.Get(o)
	return item, exists
}

func (h *harness) replace(list []any, rv string) {
	h.t.Helper()
	err := h.ours.Replace(slices.Clone(list), rv)
	h.sameErr("Replace", err, h.oracle.Replace(slices.Clone(list), rv))
	h.sameErr("encoded Replace", h.enc.Replace(slices.Clone(list), rv), err)
}

func (h *harness) bookmark(rv string) {
	h.ours.Bookmark(rv)
	h.oracle.Bookmark(rv)
	h.enc.Bookmark(rv)
}

func (h *harness) addIndexers(idx toolscache.Indexers) {
	h.t.Helper()
	// Each store gets its own map: client-go's keeps and extends it.
	err := h.ours.AddIndexers(maps.Clone(idx))
	h.sameErr("AddIndexers", err, h.oracle.AddIndexers(maps.Clone(idx)))
	h.sameErr("encoded AddIndexers", h.enc.AddIndexers(maps.Clone(idx)), err)
}

func (h *harness) startReplace() {
	h.ours.StartReplace()
	h.enc.StartReplace()
	h.paged = []any{}
}

func (h *harness) abortReplace() {
	h.ours.AbortReplace()
	h.enc.AbortReplace()
	h.paged = nil
}

// addToReplace buffers o and checks the reuse decision and the transform
// calls against what the live store holds.
func (h *harness) addToReplace(o any, transform toolscache.TransformFunc) {
	h.t.Helper()
	live, inLive := h.current(o)
	calls := 0
	counted := transform
	if transform != nil {
		counted = func(o any) (any, error) {
			calls++
			return transform(o)
		}
	}
	stored, reused, err := h.ours.AddToReplace(o, counted)
	h.encAddToReplace(o, transform, stored, reused, err)
	if h.ours.Replacing() != (h.paged != nil) {
		h.t.Fatalf("Replacing() = %v, harness replace %v", h.ours.Replacing(), h.paged != nil)
	}
	if _, kerr := toolscache.DeletionHandlingMetaNamespaceKeyFunc(o); kerr != nil {
		if !errors.As(err, &toolscache.KeyError{}) {
			h.t.Fatalf("AddToReplace(%v) error %v, want a KeyError", o, err)
		}
		return
	}
	if h.paged == nil {
		if !errors.Is(err, ErrNoReplace) {
			h.t.Fatalf("AddToReplace without a paged replace: error %v, want ErrNoReplace", err)
		}
		return
	}
	wantReuse := h.reuse && inLive && sameVersion(live, o)
	if reused != wantReuse {
		h.t.Fatalf("AddToReplace(%v): reused %v, want %v (live %v)", o, reused, wantReuse, live)
	}
	if reused {
		if stored != live || calls != 0 {
			h.t.Fatalf("reuse: stored %p (live %p), transform called %d times", stored, live, calls)
		}
	} else if transform != nil && calls != 1 {
		h.t.Fatalf("transform called %d times, want 1", calls)
	}
	if err != nil {
		if transform == nil || !strings.HasPrefix(err.Error(), "transforming: ") {
			h.t.Fatalf("AddToReplace(%v): unexpected error %v", o, err)
		}
		return
	}
	if !reused && transform == nil && stored != o {
		h.t.Fatalf("AddToReplace stored %p, want the given %p", stored, o)
	}
	h.paged = append(h.paged, stored)
}

func sameVersion(a, b any) bool {
	ma, err := meta.Accessor(a)
	if err != nil {
		return false
	}
	mb, err := meta.Accessor(b)
	if err != nil {
		return false
	}
	return mb.GetResourceVersion() != "" && ma.GetUID() == mb.GetUID() && ma.GetResourceVersion() == mb.GetResourceVersion()
}

// finishReplace finishes our paged replace, hands the oracle the equivalent
// Replace and checks the Diff against the oracle's generations.
func (h *harness) finishReplace(rv string) {
	h.t.Helper()
	d, err := h.ours.FinishReplace(rv)
	h.encFinishReplace(rv, d, err)
	if h.paged == nil {
		if !errors.Is(err, ErrNoReplace) || d != nil {
			h.t.Fatalf("FinishReplace without a paged replace = %v, %v; want ErrNoReplace", d, err)
		}
		return
	}
	if err != nil {
		h.t.Fatalf("FinishReplace: %v", err)
	}
	old := h.oracleItems()
	h.sameErr("Replace (oracle of FinishReplace)", nil, h.oracle.Replace(slices.Clone(h.paged), rv))
	checkDiff(h.t, d, rv, old, h.paged)
	h.paged = nil
}

// checkDiff checks d against the old items and the objects added to the
// paged replace, in order.
func checkDiff(t testing.TB, d *Diff, rv string, old map[string]any, added []any) {
	t.Helper()
	if d.ResourceVersion != rv {
		t.Fatalf("Diff.ResourceVersion = %q, want %q", d.ResourceVersion, rv)
	}
	last := map[string]any{}
	var order []string
	for _, o := range added {
		k, _ := toolscache.DeletionHandlingMetaNamespaceKeyFunc(o)
		if _, dup := last[k]; !dup {
			order = append(order, k)
		}
		last[k] = o
	}
	if len(d.Changes) != len(order) {
		t.Fatalf("Diff has %d changes, want %d", len(d.Changes), len(order))
	}
	reused := 0
	for i, c := range d.Changes {
		k := order[i]
		if c.Key != k || c.New != last[k] || c.Old != old[k] {
			t.Fatalf("change %d = {%s %p %p}, want {%s %p %p}", i, c.Key, c.Old, c.New, k, old[k], last[k])
		}
		if c.Old != nil && c.Old == c.New {
			reused++
		}
	}
	if d.Reused != reused {
		t.Fatalf("Diff.Reused = %d, want %d", d.Reused, reused)
	}
	deleted := map[string]any{}
	for _, tomb := range d.Deleted {
		if _, dup := deleted[tomb.Key]; dup {
			t.Fatalf("key %s deleted twice", tomb.Key)
		}
		deleted[tomb.Key] = tomb.Obj
	}
	for k, o := range old {
		if _, kept := last[k]; kept {
			continue
		}
		if got, ok := deleted[k]; !ok || got != o {
			t.Fatalf("deleted %s: got %v (present %v), want %p", k, got, ok, o)
		}
		delete(deleted, k)
	}
	if len(deleted) > 0 {
		t.Fatalf("Diff deletes keys that were not removed: %v", slices.Collect(maps.Keys(deleted)))
	}
}

func (h *harness) oracleItems() map[string]any {
	items := map[string]any{}
	for _, k := range h.oracle.ListKeys() {
		items[k], _, _ = h.oracle.GetByKey(k)
	}
	return items
}

// probes are objects used with Index and Get: keyed, unkeyable, and some
// whose index values are multiple or absent.
var probes = []any{
	obj("a", "0", "", "", map[string]string{"color": "red", "tags": "x,y"}),
	obj("", "1", "", "", map[string]string{"tags": "y,y"}),
	obj("b", "9", "", "", nil),
	"not an object",
}

// check compares every read of the two stores.
func (h *harness) check() {
	h.t.Helper()
	t := h.t
	keys, want := h.ours.ListKeys(), h.oracle.ListKeys()
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("ListKeys = %v, client-go %v", keys, want)
	}
	oracleItems := h.oracleItems()
	list := h.ours.List()
	if len(list) != len(oracleItems) {
		t.Fatalf("List has %d objects, client-go %d", len(list), len(oracleItems))
	}
	for _, o := range list {
		k, _ := toolscache.DeletionHandlingMetaNamespaceKeyFunc(o)
		if oracleItems[k] != o {
			t.Fatalf("List has %p under %s, client-go %p", o, k, oracleItems[k])
		}
	}
	for _, k := range keyspace {
		got, gotOK, gotErr := h.ours.GetByKey(k)
		o, ok, err := h.oracle.GetByKey(k)
		if got != o || gotOK != ok || gotErr != nil || err != nil {
			t.Fatalf("GetByKey(%s) = %p %v %v, client-go %p %v %v", k, got, gotOK, gotErr, o, ok, err)
		}
	}
	for _, p := range probes {
		got, gotOK, gotErr := h.ours.Get(p)
		o, ok, err := h.oracle.Get(p)
		h.sameErr(fmt.Sprintf("Get(%v)", p), gotErr, err)
		if got != o || gotOK != ok {
			t.Fatalf("Get(%v) = %p %v, client-go %p %v", p, got, gotOK, o, ok)
		}
	}
	if got, want := h.ours.LastStoreSyncResourceVersion(), h.oracle.LastStoreSyncResourceVersion(); got != want {
		t.Fatalf("LastStoreSyncResourceVersion = %q, client-go %q", got, want)
	}
	names := slices.Sorted(maps.Keys(h.ours.GetIndexers()))
	if want := slices.Sorted(maps.Keys(h.oracle.GetIndexers())); !slices.Equal(names, want) {
		t.Fatalf("GetIndexers names = %v, client-go %v", names, want)
	}
	for _, name := range append(names, "no-such-index") {
		h.checkIndex(name)
	}
	h.checkEncoded(oracleItems)
}

func (h *harness) checkIndex(name string) {
	h.t.Helper()
	t := h.t
	values, want := h.ours.ListIndexFuncValues(name), h.oracle.ListIndexFuncValues(name)
	slices.Sort(values)
	slices.Sort(want)
	if !slices.Equal(values, want) || (values == nil) != (want == nil) {
		t.Fatalf("ListIndexFuncValues(%s) = %#v, client-go %#v", name, values, want)
	}
	for _, v := range append(values, "no-such-value") {
		keys, err := h.ours.IndexKeys(name, v)
		wantKeys, wantErr := h.oracle.IndexKeys(name, v)
		h.sameErr(fmt.Sprintf("IndexKeys(%s, %s)", name, v), err, wantErr)
		if !slices.Equal(keys, wantKeys) || (keys == nil) != (wantKeys == nil) {
			t.Fatalf("IndexKeys(%s, %s) = %#v, client-go %#v", name, v, keys, wantKeys)
		}
		objs, err := h.ours.ByIndex(name, v)
		wantObjs, wantErr := h.oracle.ByIndex(name, v)
		h.sameErr(fmt.Sprintf("ByIndex(%s, %s)", name, v), err, wantErr)
		sameObjects(t, fmt.Sprintf("ByIndex(%s, %s)", name, v), objs, wantObjs)
	}
	for _, p := range probes {
		objs, err := h.ours.Index(name, p)
		wantObjs, wantErr := h.oracle.Index(name, p)
		h.sameErr(fmt.Sprintf("Index(%s, %v)", name, p), err, wantErr)
		sameObjects(t, fmt.Sprintf("Index(%s, %v)", name, p), objs, wantObjs)
	}
}

// sameObjects fails unless got and want hold the same pointers, in any
// order, and are both nil or both not.
func sameObjects(t testing.TB, what string, got, want []any) {
	t.Helper()
	if (got == nil) != (want == nil) || len(got) != len(want) {
		t.Fatalf("%s = %v, client-go %v", what, got, want)
	}
	count := map[any]int{}
	for _, o := range want {
		count[o]++
	}
	for _, o := range got {
		if count[o] == 0 {
			t.Fatalf("%s = %v, client-go %v", what, got, want)
		}
		count[o]--
	}
}
