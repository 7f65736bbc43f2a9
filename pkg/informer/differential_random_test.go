package informer

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	klabels "k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/dump"

	"github.com/leaninformer/leaninformer/internal/testobjects"
	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/codec"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// randomKind is one kind testobjects.Random makes (its i-th, modulo
// testobjects.RandomKinds), with what a fake server and an informer of it
// need.
type randomKind struct {
	list    kruntime.Object
	example kruntime.Object
	gvk     schema.GroupVersionKind
	// object, if set, makes the kind's i-th object in place of
	// testobjects.Random's Object.
	object func(g *testobjects.Random, i int) kruntime.Object
	// exact: the encoded store hands out objects of the kind as they came
	// (a typed custom resource, which the codec refuses and the store
	// keeps; an unstructured object, which CBOR keeps exactly), not in
	// their protobuf form.
	exact bool
	// refused: the codec refuses the kind, so the encoded store keeps its
	// objects decoded and hands handlers the stored object.
	refused bool
}

var randomKinds = [testobjects.RandomKinds]randomKind{
	{list: &rbacv1.RoleBindingList{}, example: &rbacv1.RoleBinding{}, gvk: rbacv1.SchemeGroupVersion.WithKind("RoleBinding")},
	{list: &corev1.ConfigMapList{}, example: &corev1.ConfigMap{}, gvk: corev1.SchemeGroupVersion.WithKind("ConfigMap")},
	{list: &corev1.SecretList{}, example: &corev1.Secret{}, gvk: corev1.SchemeGroupVersion.WithKind("Secret")},
	// A metadata informer's read kind is its resource's (controller-runtime
	// asks for Deployments' metadata with that kind).
	{list: &metav1.PartialObjectMetadataList{}, example: &metav1.PartialObjectMetadata{}, gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}},
	{list: &coordinationv1.LeaseList{}, example: &coordinationv1.Lease{}, gvk: coordinationv1.SchemeGroupVersion.WithKind("Lease")},
	{list: &corev1.PodList{}, example: &corev1.Pod{}, gvk: corev1.SchemeGroupVersion.WithKind("Pod")},
	{list: &corev1.EventList{}, example: &corev1.Event{}, gvk: corev1.SchemeGroupVersion.WithKind("Event")},
}

// randomVariant is one informer of the differential: how it is built and
// what it must hand out for an object the plain informer hands out.
type randomVariant struct {
	name     string
	opts     func(gvk schema.GroupVersionKind) []Option
	encoded  bool // decoded objects are in their protobuf form
	readKind bool // typed objects carry the kind
}

var randomVariants = []randomVariant{
	{name: "plain, interned", opts: func(schema.GroupVersionKind) []Option { return []Option{WithInterning()} }},
	{name: "encoded", encoded: true, opts: func(schema.GroupVersionKind) []Option { return []Option{WithEncodedStore()} }},
	{name: "encoded, read kind", encoded: true, readKind: true, opts: func(gvk schema.GroupVersionKind) []Option {
		return []Option{WithEncodedStore(), withReadKind(gvk)}
	}},
	{name: "encoded compressed, read kind, interned", encoded: true, readKind: true, opts: func(gvk schema.GroupVersionKind) []Option {
		return []Option{WithEncodedStore(codec.WithCompression()), withReadKind(gvk), WithInterning()}
	}},
}

// TestDifferentialEncodedStoreRandomObjects runs a plain informer and, on
// the same fake API server, informers with interning, the encoded store,
// and the encoded store with NewCacheWith's read kind, for every kind
// testobjects.Random makes (pointer times set, times with nanoseconds and
// zones), through a seeded history of creates, updates (of everything, of
// pointer times only, of labels only, of nothing but the resourceVersion),
// deletes, deletes and creates under the same name (another UID; also while
// the watches are down, which a relist tells as an update), creates under
// deleted objects' names, relists and back-to-back relists (the second 410
// as soon as every informer listed). After every step each handler must
// have received what the plain informer's received, and every read (List,
// GetByKey, ByIndex, ListByLabels) must return what the plain informer's returns: equal objects,
// in the protobuf form for the encoded store and with the kind under the
// read kind (docs/compatibility.md, "Encoded store"), but for a live
// delete's object, which is the one the watch delivered.
func TestDifferentialEncodedStoreRandomObjects(t *testing.T) {
	steps := 40
	if testing.Short() {
		steps = 15
	}
	covered := map[string]int{}
	t.Cleanup(func() {
		t.Logf("covered: %v", covered)
		for _, what := range []string{"relist delete", "relist reuse", "update the encoded store sees as none", "update of labels", "update of a pointer time",
			"update to another UID", "add of a deleted key", "back-to-back relists"} {
			if covered[what] == 0 && !t.Failed() {
				t.Errorf("the histories had no %s", what)
			}
		}
	})
	for k, kind := range randomKinds {
		name := reflect.TypeOf(kind.example).Elem().Name()
		t.Run(name, func(t *testing.T) {
			// Alternated per kind: the strategy, relist reuse.
			common := []Option{WithStrategy(strategies[k%len(strategies)]), WithRelistReuse(k%3 != 2), WithPageSize(4)}
			h := newRandomHistory(t, k, kind, int64(k+1)*7919, common)
			h.run(steps)
			for what, n := range h.covered {
				covered[what] += n
			}
		})
	}
}

type randomHistory struct {
	t     *testing.T
	kind  randomKind
	index int // the kind's index among testobjects.RandomKinds
	s     *fake.Server
	g     *testobjects.Random
	rng   *rand.Rand

	plain    *SharedIndexInformer
	plainRec *recorder
	infs     []*SharedIndexInformer
	recs     []*recorder

	live     map[string]kruntime.Object // the server's objects by key, as it returned them
	gone     []string                   // the keys of deleted objects, for creates to take again
	next     int                        // the next object's number
	expected int                        // the handler calls every informer must have received
	checked  int                        // the calls compared so far
	// The handler calls every informer had received when the second of
	// back-to-back relists began, since the last check: a check compares
	// each relist's calls apart (each comes in no fixed order, tombstones
	// first).
	marks   []int
	deleted map[string]bool // keys the calls compared so far deleted (see count)
	covered map[string]int  // what the history covered (see count)
}

// newRandomServer returns a history on a fake server of kind holding 10
// random objects, with no informer yet.
func newRandomServer(t *testing.T, k int, kind randomKind, seed int64) *randomHistory {
	h := &randomHistory{
		t: t, kind: kind, index: k,
		s:    fake.NewServer(kind.list),
		g:    testobjects.NewRandom(seed),
		rng:  rand.New(rand.NewPCG(uint64(seed), 1)),
		live: map[string]kruntime.Object{}, deleted: map[string]bool{}, covered: map[string]int{},
	}
	t.Cleanup(h.s.Close)
	for range 10 {
		h.create("")
	}
	return h
}

func newRandomHistory(t *testing.T, k int, kind randomKind, seed int64, common []Option) *randomHistory {
	h := newRandomServer(t, k, kind, seed)
	build := func(opts ...Option) (*SharedIndexInformer, *recorder) {
		opts = append([]Option{WithBackoff(fastBackoff)}, append(slices.Clone(common), opts...)...)
		inf := NewSharedIndexInformerWithOptions(h.s.ListerWatcher(), kind.example,
			toolscache.SharedIndexInformerOptions{Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}},
			opts...)
		rec := newRecorder()
		if _, err := inf.AddEventHandler(rec); err != nil {
			t.Fatal(err)
		}
		run(t, inf)
		return inf, rec
	}
	h.plain, h.plainRec = build()
	for _, v := range randomVariants {
		inf, rec := build(v.opts(kind.gvk)...)
		h.infs, h.recs = append(h.infs, inf), append(h.recs, rec)
	}
	return h
}

func (h *randomHistory) run(steps int) {
	h.expected = len(h.live) // the initial list's adds
	h.check("the initial list")
	for step := range steps {
		var what string
		if r := h.rng.IntN(100); r < 88 || len(h.live) < 4 {
			what = h.write(r)
		} else {
			what = "relist"
			h.relist(forceRelist)
			if h.rng.IntN(3) == 0 {
				what = "back-to-back relists"
				h.relistAgain(forceRelist, h.listed)
			}
		}
		h.check(fmt.Sprintf("step %d (%s)", step, what))
	}
}

// write makes the r-th (0 to 87) kind of write: a create (under a new
// name or, one in three, a deleted object's), an update (of everything, of
// pointer times, of labels, of nothing), a delete, or a delete and a create
// under the same name (delete then add events for one key), and returns
// what it did.
func (h *randomHistory) write(r int) string {
	switch {
	case r < 15 || len(h.live) < 4:
		if len(h.gone) > 0 && h.rng.IntN(3) == 0 {
			return "create again " + h.create(h.gone[h.rng.IntN(len(h.gone))])
		}
		return "create " + h.create("")
	case r < 33:
		return "update of everything " + h.update(h.replaceAll)
	case r < 48:
		return "update of pointer times " + h.update(h.changeTimes)
	case r < 61:
		return "update of labels " + h.update(h.changeLabels)
	case r < 73:
		return "update of nothing " + h.update(func(kruntime.Object) {})
	case r < 82:
		return "delete " + h.delete()
	default:
		return "delete and create again " + h.recreate()
	}
}

// relist makes the informers relist with force (forceRelist or
// forceRelistHeld), creating, updating, deleting and deleting and
// creating again (under the same name, with another UID) objects while
// their watches are down.
func (h *randomHistory) relist(force func(*testing.T, *fake.Server, func())) {
	expected, before := h.expected, h.keys()
	force(h.t, h.s, func() {
		for range h.rng.IntN(3) {
			h.create("")
		}
		// Found under a known key, a new object is an update of the old
		// one (client-go's Replace tells no delete for a listed key), and
		// relist reuse must not keep the old one.
		for range h.rng.IntN(3) {
			h.recreate()
		}
		// At least one write: a relist at the watch's own
		// resourceVersion is no relist (the watch resumes).
		for range 1 + h.rng.IntN(2) {
			h.update(h.replaceAll)
			h.update(h.changeTimes)
		}
		for range h.rng.IntN(3) {
			if len(h.live) > 1 {
				h.delete()
			}
		}
	})
	// Every listed object is an add or an update, every one gone a
	// delete (in place of the calls the writes counted).
	// A delete of an object created since is none, nor is that of one
	// created again.
	h.expected = expected + len(h.live)
	for _, k := range before {
		if _, ok := h.live[k]; !ok {
			h.expected++
		}
	}
}

// relistAgain makes a relist (relist) as soon as every informer has
// listed for the one before (listed waits for that): the watch each opens
// after its list gets the next 410, while handlers may still be receiving
// the first relist's calls.
func (h *randomHistory) relistAgain(force func(*testing.T, *fake.Server, func()), listed func(when string)) {
	listed("the first of back-to-back relists")
	h.marks = append(h.marks, h.expected)
	h.relist(force)
	h.covered["back-to-back relists"]++
}

// listed waits until every informer has listed at the server's
// resourceVersion.
func (h *randomHistory) listed(when string) {
	waitListed(h.t, when, h.s.ResourceVersion(), append([]toolscache.SharedIndexInformer{h.plain}, toSharedIndexInformers(h.infs)...))
}

func toSharedIndexInformers(infs []*SharedIndexInformer) []toolscache.SharedIndexInformer {
	out := make([]toolscache.SharedIndexInformer, len(infs))
	for i, inf := range infs {
		out[i] = inf
	}
	return out
}

// waitListed waits until every one of infs is at resourceVersion rv.
func waitListed(t *testing.T, when, rv string, infs []toolscache.SharedIndexInformer) {
	t.Helper()
	for i, inf := range infs {
		deadline := time.Now().Add(20 * time.Second)
		for inf.LastSyncResourceVersion() != rv {
			if time.Now().After(deadline) {
				t.Fatalf("%s: informer %d is at %q, want %q", when, i, inf.LastSyncResourceVersion(), rv)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// segments splits calls, the calls since the check before, which came
// from calls number from on, at marks (see randomHistory.marks).
func segments(calls []call, from int, marks []int) [][]call {
	var out [][]call
	for _, m := range marks {
		out = append(out, calls[:m-from])
		calls, from = calls[m-from:], m
	}
	return append(out, calls)
}

// object returns the kind's i-th random object.
func (h *randomHistory) object(i int) kruntime.Object {
	if h.kind.object != nil {
		return h.kind.object(h.g, i)
	}
	return h.g.Object(i)
}

func (h *randomHistory) keys() []string { return slices.Sorted(maps.Keys(h.live)) }

func (h *randomHistory) pick() string {
	keys := h.keys()
	return keys[h.rng.IntN(len(keys))]
}

// create creates a new random object of the kind, with its own UID, under
// key k (a deleted object's) or, if k is empty, a new one, and returns its
// key.
func (h *randomHistory) create(k string) string {
	obj := h.object(h.index + testobjects.RandomKinds*h.next)
	h.next++
	m := accessor(obj)
	m.SetResourceVersion("")
	if k != "" {
		ns, name, err := toolscache.SplitMetaNamespaceKey(k)
		if err != nil {
			h.t.Fatal(err)
		}
		m.SetNamespace(ns)
		m.SetName(name)
	}
	out := mustCreate(h.t, h.s, obj)
	k = objKey(out)
	h.live[k] = out
	h.gone = slices.DeleteFunc(h.gone, func(g string) bool { return g == k })
	h.expected++
	return k
}

// recreate deletes a live object and creates another under its name.
func (h *randomHistory) recreate() string {
	return h.create(h.delete())
}

// update changes a copy of a live object with change and stores it.
func (h *randomHistory) update(change func(kruntime.Object)) string {
	k := h.pick()
	obj := h.live[k].DeepCopyObject()
	change(obj)
	accessor(obj).SetResourceVersion("")
	h.live[k] = mustUpdate(h.t, h.s, obj)
	h.expected++
	return k
}

func (h *randomHistory) delete() string {
	k := h.pick()
	m := accessor(h.live[k])
	if _, err := h.s.Delete(m.GetNamespace(), m.GetName()); err != nil {
		h.t.Fatal(err)
	}
	delete(h.live, k)
	h.gone = append(h.gone, k)
	h.expected++
	return k
}

// replaceAll gives obj another random object's contents, keeping its
// identity.
func (h *randomHistory) replaceAll(obj kruntime.Object) {
	m := accessor(obj)
	ns, name := m.GetNamespace(), m.GetName()
	fresh := h.object(h.index)
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(fresh).Elem())
	m = accessor(obj)
	m.SetNamespace(ns)
	m.SetName(name)
}

// changeTimes changes every *metav1.Time and *metav1.MicroTime of obj: to
// another time, to nil, to a time where it was nil, or by nanoseconds only
// (which the protobuf form does not keep).
func (h *randomHistory) changeTimes(obj kruntime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// Its deletionTimestamp and one free-form time, as strings.
		for _, path := range [][]string{{"metadata", "deletionTimestamp"}, {"data", "when"}} {
			if _, found, _ := unstructured.NestedString(u.Object, path...); found && h.rng.IntN(3) == 0 {
				unstructured.RemoveNestedField(u.Object, path...)
				continue
			}
			var fresh metav1.Time
			h.g.Fill(&fresh)
			if err := unstructured.SetNestedField(u.Object, fresh.UTC().Format(time.RFC3339), path...); err != nil {
				panic(err)
			}
		}
		return
	}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.Type() == reflect.TypeFor[*metav1.Time]() || v.Type() == reflect.TypeFor[*metav1.MicroTime]() {
				h.changeTime(v)
				return
			}
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(obj))
}

func (h *randomHistory) changeTime(p reflect.Value) {
	var t time.Time
	switch {
	case !p.IsNil() && h.rng.IntN(2) == 0: // nanoseconds only
		old := p.Elem().Field(0).Interface().(time.Time)
		t = old.Add(time.Duration(h.rng.IntN(999)+1) - time.Duration(old.Nanosecond()%1000)) // same microsecond
	case !p.IsNil() && h.rng.IntN(3) == 0:
		p.Set(reflect.Zero(p.Type()))
		return
	default:
		var fresh metav1.Time
		h.g.Fill(&fresh)
		t = fresh.Time
	}
	nt := reflect.New(p.Type().Elem())
	nt.Elem().Field(0).Set(reflect.ValueOf(t))
	p.Set(nt)
}

// changeLabels gives obj other labels: one more, one fewer, none (nil or
// empty), or random ones.
func (h *randomHistory) changeLabels(obj kruntime.Object) {
	m := accessor(obj)
	labels := maps.Clone(m.GetLabels())
	switch h.rng.IntN(4) {
	case 0:
		if labels == nil {
			labels = map[string]string{}
		}
		labels[fmt.Sprintf("added-%d", h.rng.IntN(1000))] = fmt.Sprint(h.rng.IntN(3))
	case 1:
		for k := range labels {
			delete(labels, k)
			break
		}
	case 2:
		if labels == nil {
			labels = map[string]string{}
		} else {
			labels = nil
		}
	default:
		h.g.Fill(&labels)
	}
	m.SetLabels(labels)
}

// check waits until every informer reached the server's resourceVersion
// and its handler received the calls the history caused, compares them
// and the informers' reads with the plain informer's, and checks who owns
// what each handed out (checkOwnership).
func (h *randomHistory) check(when string) {
	t := h.t
	t.Helper()
	rv := h.s.ResourceVersion()
	all := append([]*recorder{h.plainRec}, h.recs...)
	for i, inf := range append([]*SharedIndexInformer{h.plain}, h.infs...) {
		deadline := time.Now().Add(20 * time.Second)
		for !inf.HasSynced() || inf.LastSyncResourceVersion() != rv || all[i].len() < h.expected {
			if time.Now().After(deadline) {
				t.Fatalf("%s: informer %d is at %q (synced %v) with %d handler calls, want %q and %d calls", when, i,
					inf.LastSyncResourceVersion(), inf.HasSynced(), all[i].len(), rv, h.expected)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	// No call more than the history caused, in any informer.
	time.Sleep(time.Millisecond)
	want := h.plainRec.snapshot()
	if len(want) != h.expected {
		t.Fatalf("%s: the plain informer's handler received %d calls, want %d", when, len(want), h.expected)
	}
	for i, v := range randomVariants {
		got := h.recs[i].snapshot()
		if len(got) != len(want) {
			t.Fatalf("%s: %s: the handler received %d calls, the plain informer's %d", when, v.name, len(got), len(want))
		}
		// A relist's calls come in no fixed order: compare the calls of
		// each relist (one per key) and of a write (one per key, or a
		// delete and an add) by key.
		ws, gs := segments(want[h.checked:], h.checked, h.marks), segments(got[h.checked:], h.checked, h.marks)
		for s := range ws {
			w, g := sortedCalls(ws[s]), sortedCalls(gs[s])
			for j := range w {
				compareCall(t, when, v.name, w[j], g[j], func(obj any, decoded bool) any { return h.form(v, obj, decoded) })
			}
		}
		form := func(obj any) any { return h.form(v, obj, true) }
		compareReads(t, when, v.name, h.plain.GetIndexer(), h.infs[i].GetIndexer(), want[h.checked:], form)
		compareLabelReads(t, when, v.name, h.plain.indexer, h.infs[i].indexer, want[h.checked:], form)
		h.checkOwnership(when, v, h.infs[i], want[h.checked:], got[h.checked:])
	}
	for _, c := range want[h.checked:] {
		h.count(c)
	}
	h.checked, h.marks = len(want), nil
}

// count counts what the history covered.
func (h *randomHistory) count(c call) {
	if recreated(c, h.deleted) {
		h.covered["add of a deleted key"]++
	}
	switch {
	case c.tombstone:
		h.covered["relist delete"]++
	case c.op == "update" && accessor(c.old.(kruntime.Object)).GetUID() != accessor(c.obj.(kruntime.Object)).GetUID():
		h.covered["update to another UID"]++
	case c.op == "update" && c.old == c.obj:
		h.covered["relist reuse"]++
	case c.op == "update" && c.rv != c.oldRV:
		old, obj := c.old.(kruntime.Object).DeepCopyObject(), c.obj.(kruntime.Object).DeepCopyObject()
		accessor(old).SetResourceVersion("")
		accessor(obj).SetResourceVersion("")
		testobjects.ProtobufForm(reflect.ValueOf(old))
		testobjects.ProtobufForm(reflect.ValueOf(obj))
		if reflect.DeepEqual(old, obj) {
			// Nothing but the resourceVersion changed, or only what the
			// encoded store does not keep (a time's nanoseconds).
			h.covered["update the encoded store sees as none"]++
		}
		if !reflect.DeepEqual(accessor(old).GetLabels(), accessor(obj).GetLabels()) {
			h.covered["update of labels"]++
		}
		if !reflect.DeepEqual(accessor(old).GetDeletionTimestamp(), accessor(obj).GetDeletionTimestamp()) {
			h.covered["update of a pointer time"]++
		}
	}
}

// recreated reports whether c is the add of a key that deleted holds,
// and records c's key in deleted if c deletes it.
func recreated(c call, deleted map[string]bool) bool {
	switch c.op {
	case "delete":
		deleted[c.key] = true
	case "add":
		return deleted[c.key]
	}
	return false
}

func sortedCalls(calls []call) []call {
	return slices.SortedStableFunc(slices.Values(calls), func(a, b call) int { return cmp.Compare(a.key, b.key) })
}

// form is what variant v must hand out for obj, which the plain informer
// handed out: its protobuf form from an encoded store (decoded is set),
// with the kind under a read kind.
func (h *randomHistory) form(v randomVariant, obj any, decoded bool) any {
	if obj == nil {
		return nil
	}
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		tomb.Obj = h.form(v, tomb.Obj, decoded)
		return tomb
	}
	o := obj.(kruntime.Object).DeepCopyObject()
	if v.encoded && decoded && !h.kind.exact {
		testobjects.ProtobufForm(reflect.ValueOf(o))
	}
	if v.readKind {
		o.GetObjectKind().SetGroupVersionKind(h.kind.gvk)
	}
	return o
}

// compareCall compares g, a call the handler of informer name received,
// with w, the reference informer's: op, key, resourceVersions, initial
// list and tombstone, and its objects with form's of w's (decoded: the
// object is a decode, not the one a live delete's watch event carried).
func compareCall(t *testing.T, when, name string, w, g call, form func(obj any, decoded bool) any) {
	t.Helper()
	if w.op != g.op || w.key != g.key || w.rv != g.rv || w.oldRV != g.oldRV || w.initial != g.initial || w.tombstone != g.tombstone {
		t.Fatalf("%s: %s: the handler received %s %s at %s from %s (initial %v, tombstone %v), the reference informer's %s %s at %s from %s (initial %v, tombstone %v)",
			when, name, g.op, g.key, g.rv, g.oldRV, g.initial, g.tombstone, w.op, w.key, w.rv, w.oldRV, w.initial, w.tombstone)
	}
	// A live delete's object is the one the watch delivered, not a decode.
	decoded := w.op != "delete" || w.tombstone
	if want := form(w.obj, decoded); !reflect.DeepEqual(g.obj, want) {
		t.Fatalf("%s: %s: the %s of %s handed the handler another object than the reference informer's:\n%s", when, name, g.op, g.key, objectDiff(want, g.obj))
	}
	if want := form(w.old, true); !reflect.DeepEqual(g.old, want) {
		t.Fatalf("%s: %s: the %s of %s handed the handler another old object than the reference informer's:\n%s", when, name, g.op, g.key, objectDiff(want, g.old))
	}
}

// compareReads compares List, ListKeys, GetByKey (of the keys of calls)
// and ByIndex (of every namespace) of the indexer of informer name with
// ref's, the reference informer's, whose objects it must hold in form's.
func compareReads(t *testing.T, when, name string, ref, inf toolscache.Indexer, calls []call, form func(obj any) any) {
	t.Helper()
	compare := func(what string, want, got []any) {
		t.Helper()
		compareObjects(t, when, name, what, want, got, form)
	}
	compare("List", ref.List(), inf.List())
	if w, g := slices.Sorted(slices.Values(ref.ListKeys())), slices.Sorted(slices.Values(inf.ListKeys())); !slices.Equal(w, g) {
		t.Fatalf("%s: %s: ListKeys returned %v, the reference informer's %v", when, name, g, w)
	}
	// Get the step's keys (List returned every object).
	keys := []string{"ns-0/missing"}
	for _, c := range calls {
		keys = append(keys, c.key)
	}
	for _, k := range keys {
		w, wok, werr := ref.GetByKey(k)
		g, gok, gerr := inf.GetByKey(k)
		if wok != gok || (werr == nil) != (gerr == nil) {
			t.Fatalf("%s: %s: GetByKey(%s) found %v (%v), the reference informer's %v (%v)", when, name, k, gok, gerr, wok, werr)
		}
		if wok {
			compare("GetByKey("+k+")", []any{w}, []any{g})
		}
	}
	for i := range 3 {
		ns := fmt.Sprintf("ns-%d", i)
		w, werr := ref.ByIndex(toolscache.NamespaceIndex, ns)
		g, gerr := inf.ByIndex(toolscache.NamespaceIndex, ns)
		if werr != nil || gerr != nil {
			t.Fatalf("%s: %s: ByIndex(%s): %v, the reference informer's %v", when, name, ns, gerr, werr)
		}
		compare("ByIndex("+ns+")", w, g)
	}
}

// compareObjects compares got, what read what of informer name returned,
// with want, the reference informer's, whose objects it must hold in
// form's, by key.
func compareObjects(t *testing.T, when, name, what string, want, got []any, form func(obj any) any) {
	t.Helper()
	byKey := func(objs []any) map[string]any {
		m := map[string]any{}
		for _, o := range objs {
			m[objKey(o)] = o
		}
		return m
	}
	w, g := byKey(want), byKey(got)
	if len(want) != len(got) || !slices.Equal(slices.Sorted(maps.Keys(w)), slices.Sorted(maps.Keys(g))) {
		t.Fatalf("%s: %s: %s returned keys %v, the reference informer's %v", when, name, what, slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w)))
	}
	for k, o := range w {
		if want := form(o); !reflect.DeepEqual(g[k], want) {
			t.Fatalf("%s: %s: %s returned another %s than the reference informer's:\n%s", when, name, what, k, objectDiff(want, g[k]))
		}
	}
}

// compareLabelReads compares what NewCacheWith's label Lists read,
// ListByLabels of our indexer inf (of informer name), with ref's, a
// reference indexer of ours, whose objects it must hold in form's: a
// label of the first of calls' objects (the step's), in its namespace and
// everywhere.
func compareLabelReads(t *testing.T, when, name string, ref, inf *cache.Indexer, calls []call, form func(obj any) any) {
	t.Helper()
	sel := klabels.Everything()
	if len(calls) > 0 {
		obj := calls[0].obj
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		for _, k := range slices.Sorted(maps.Keys(accessor(obj.(kruntime.Object)).GetLabels())) {
			if req, err := klabels.NewRequirement(k, selection.Exists, nil); err == nil {
				sel = klabels.NewSelector().Add(*req)
				break
			}
		}
	}
	for _, ns := range []string{"", "ns-1"} {
		q := cache.LabelQuery{Selector: sel}
		if ns != "" {
			q.IndexName, q.IndexedValue = toolscache.NamespaceIndex, ns
		}
		w, werr := ref.ListByLabels(q)
		g, gerr := inf.ListByLabels(q)
		if werr != nil || gerr != nil {
			t.Fatalf("%s: %s: ListByLabels(%s in %q): %v, the reference informer's %v", when, name, sel, ns, gerr, werr)
		}
		compareObjects(t, when, name, fmt.Sprintf("ListByLabels(%s in %q)", sel, ns), w, g, form)
	}
}

// checkOwnership checks who owns what variant v's informer inf handed out
// in calls (the handler calls it received since the last check, in their
// order; want are the plain informer's) and its reads. A handler given an
// object the store keeps decoded (a plain store's; one the codec refuses,
// in an encoded store) gets the stored object itself, as client-go's
// handlers do (docs/compatibility.md, "Encoded store"). Everything else an
// encoded store hands out (every read, a handler's decoded objects) is the
// caller's: written into, everywhere (testobjects.Poison), it must leave
// the store as it was, which the reads, compared again, show.
func (h *randomHistory) checkOwnership(when string, v randomVariant, inf *SharedIndexInformer, want, calls []call) {
	t := h.t
	t.Helper()
	if !v.encoded || h.kind.refused {
		keys, stored := inf.indexer.ListStored()
		byKey := make(map[string]any, len(keys))
		for j, k := range keys {
			byKey[k] = stored[j]
		}
		last := map[string]call{}
		for _, c := range calls {
			last[c.key] = c
		}
		for k, c := range last {
			if c.op != "delete" && byKey[k] != c.obj {
				t.Fatalf("%s: %s: the handler's object of the %s of %s is not the stored object", when, v.name, c.op, k)
			}
		}
	}
	if !v.encoded {
		return
	}
	poison := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if obj != nil {
			testobjects.Poison(reflect.ValueOf(obj))
		}
	}
	if !h.kind.refused {
		for _, c := range calls {
			poison(c.obj)
			poison(c.old)
		}
	}
	for _, o := range inf.GetStore().List() {
		poison(o)
	}
	for _, c := range calls {
		if o, ok, _ := inf.GetStore().GetByKey(c.key); ok {
			poison(o)
		}
	}
	for ns := range 3 {
		objs, err := inf.GetIndexer().ByIndex(toolscache.NamespaceIndex, fmt.Sprintf("ns-%d", ns))
		if err != nil {
			t.Fatal(err)
		}
		labelled, err := inf.indexer.ListByLabels(cache.LabelQuery{Selector: klabels.Everything(), IndexName: toolscache.NamespaceIndex, IndexedValue: fmt.Sprintf("ns-%d", ns)})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range append(objs, labelled...) {
			poison(o)
		}
	}
	when += ", after writes into what the informer handed out"
	form := func(obj any) any { return h.form(v, obj, true) }
	compareReads(t, when, v.name, h.plain.GetIndexer(), inf.GetIndexer(), want, form)
	compareLabelReads(t, when, v.name, h.plain.indexer, inf.indexer, want, form)
}

// objectDiff shows where two objects differ, line by line of their dumps
// (times with their nanoseconds and zones).
func objectDiff(want, got any) string {
	w, g := strings.Split(dump.Pretty(want), "\n"), strings.Split(dump.Pretty(got), "\n")
	var out []string
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			out = append(out, fmt.Sprintf("line %d:\n  want %s\n   got %s", i+1, wl, gl))
			if len(out) == 5 {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

func accessor(obj kruntime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	return m
}
