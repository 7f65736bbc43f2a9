package informer

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/leaninformer/leaninformer/internal/testobjects"
	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/codec"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// TestEncodedStoreReadsAndNotifications runs an informer with the encoded
// store and checks what its readers and handlers get: fresh objects on
// every read, which the caller may change without changing the store; a
// live update's objects decoded once and shared by all handlers; a relist's
// decoded for each handler as it is called.
func TestEncodedStoreReadsAndNotifications(t *testing.T) {
	for _, opts := range [][]codec.Option{nil, {codec.WithCompression()}} {
		t.Run(fmt.Sprintf("codec options %d", len(opts)), func(t *testing.T) {
			s := newServer(t, 20)
			inf := newInformer(s, 0, WithEncodedStore(opts...))
			a, b := newRecorder(), newRecorder()
			for _, r := range []*recorder{a, b} {
				if _, err := inf.AddEventHandler(r); err != nil {
					t.Fatal(err)
				}
			}
			run(t, inf)
			waitSynced(t, inf)
			if st := inf.indexer.CodecStats(); st.Encoded != 20 || st.Unencoded != 0 {
				t.Fatalf("CodecStats = %+v, want 20 objects encoded", st)
			}

			// Reads are fresh objects that the caller owns.
			first, _, _ := inf.GetStore().GetByKey(key("cm-0001"))
			second, _, _ := inf.GetStore().GetByKey(key("cm-0001"))
			if first == second || !reflect.DeepEqual(first, second) {
				t.Fatalf("two reads returned %p and %p: want two equal, distinct objects", first, second)
			}
			testobjects.Poison(reflect.ValueOf(first))
			if third, _, _ := inf.GetStore().GetByKey(key("cm-0001")); !reflect.DeepEqual(third, second) {
				t.Fatal("writing into a read object changed the store")
			}

			// A live update: one decode of each object for both handlers.
			eventually(t, "initial adds", func() bool { return a.len() == 20 && b.len() == 20 })
			a.reset()
			b.reset()
			mustUpdate(t, s, configMap("cm-0002", "i", "changed"))
			eventually(t, "the update", func() bool { return a.len() == 1 && b.len() == 1 })
			ua, ub := a.snapshot()[0], b.snapshot()[0]
			if ua.op != "update" || ua.obj != ub.obj || ua.old != ub.old {
				t.Fatalf("handlers got %v %p/%p and %v %p/%p: want one update sharing its objects", ua.op, ua.old, ua.obj, ub.op, ub.old, ub.obj)
			}
			if got := ua.obj.(*corev1.ConfigMap).Data["i"]; got != "changed" || ua.old.(*corev1.ConfigMap).Data["i"] != "2" {
				t.Fatalf("update from %v to %v", ua.old, ua.obj)
			}

			// A relist (the informer does not resync: handlers hear of
			// unchanged objects too): each handler decodes its own objects;
			// an object kept by relist reuse comes as OnUpdate(obj, obj).
			a.reset()
			b.reset()
			forceRelist(t, s, func() { mustUpdate(t, s, configMap("cm-0003", "i", "relisted")) })
			eventually(t, "the relist", func() bool { return a.len() == 20 && b.len() == 20 })
			byKey := func(r *recorder) map[string]call {
				m := map[string]call{}
				for _, c := range r.snapshot() {
					m[c.key] = c
				}
				return m
			}
			ca, cb := byKey(a), byKey(b)
			for k, c := range ca {
				if c.op != "update" || c.obj == cb[k].obj || !reflect.DeepEqual(c.obj, cb[k].obj) {
					t.Fatalf("relist: %s: %v %p and %p: want updates with equal objects, each handler its own", k, c.op, c.obj, cb[k].obj)
				}
				if changed := k == key("cm-0003"); changed == (c.old == c.obj) {
					t.Fatalf("relist: %s: OnUpdate(%p, %p); want the same object unless it changed", k, c.old, c.obj)
				}
			}
		})
	}
}

// TestEncodedStoreQueuesEntries checks that a relist's notifications hold
// the store's encoded entries, not decoded objects, while a handler is
// busy.
func TestEncodedStoreQueuesEntries(t *testing.T) {
	s := newServer(t, 10)
	inf := newInformer(s, 0, WithEncodedStore())
	release, entered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	blocked := newRecorder()
	blocked.onCall = func(c call) {
		if c.op == "update" {
			once.Do(func() { close(entered) })
			<-release
		}
	}
	reg, err := inf.AddEventHandler(blocked)
	if err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	defer close(release)
	mustUpdate(t, s, configMap("cm-0000", "i", "busy"))
	select { // the live update holds the handler: the relist must queue
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler never got the live update")
	}
	forceRelist(t, s, func() { mustUpdate(t, s, configMap("cm-0001", "i", "relisted")) })
	l := reg.(*listener)
	eventually(t, "the relist queued", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.queue.Len() > 0
	})
	l.mu.Lock()
	n, _ := l.queue.ReadOne()
	l.mu.Unlock()
	if n.kind != notifyReplace {
		t.Fatalf("queued %v, want the relist", n.kind)
	}
	for _, c := range n.diff.Changes {
		if !cache.IsEncoded(c.New) {
			t.Fatalf("the queued relist holds %T for %s, want an encoded entry", c.New, c.Key)
		}
	}
}

// TestNewCacheWithEncodedStoreSkipsDeepCopy checks the cache options
// NewCacheWith derives: the encoded store turns controller-runtime's
// DeepCopy off unless the options say otherwise.
func TestNewCacheWithEncodedStoreSkipsDeepCopy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []Option
		given *bool
		want  *bool
	}{
		{"plain store: untouched", nil, nil, nil},
		{"encoded store: off", []Option{WithEncodedStore()}, nil, ptr.To(true)},
		{"encoded store, the user wants copies", []Option{WithEncodedStore()}, ptr.To(false), ptr.To(false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newConfig(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			byObject := map[client.Object]crcache.ByObject{&corev1.Secret{}: {UnsafeDisableDeepCopy: ptr.To(false)}}
			got := c.cacheOptions(crcache.Options{DefaultUnsafeDisableDeepCopy: tc.given, ByObject: byObject})
			if !reflect.DeepEqual(got.DefaultUnsafeDisableDeepCopy, tc.want) {
				t.Fatalf("DefaultUnsafeDisableDeepCopy = %v, want %v", ptr.Deref(got.DefaultUnsafeDisableDeepCopy, false), ptr.Deref(tc.want, false))
			}
			for _, bo := range got.ByObject {
				if bo.UnsafeDisableDeepCopy == nil || *bo.UnsafeDisableDeepCopy {
					t.Fatal("a ByObject entry's setting changed")
				}
			}
		})
	}
}

// TestReadKindFillsAnEmptyTypeMeta checks the decoding NewCacheWith sets up
// for an encoded store: typed objects stored without TypeMeta read with the
// informer's kind, those with one keep theirs.
func TestReadKindFillsAnEmptyTypeMeta(t *testing.T) {
	c, err := newConfig([]Option{WithEncodedStore(), withReadKind(corev1.SchemeGroupVersion.WithKind("Secret"))})
	if err != nil {
		t.Fatal(err)
	}
	store := cache.NewIndexer(toolscache.MetaNamespaceKeyFunc, nil, c.indexerOptions()...)
	bare := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "bare"}}
	kinded := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v9", Kind: "Other"}, ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "kinded"}}
	for _, o := range []*corev1.Secret{bare, kinded} {
		if err := store.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]metav1.TypeMeta{"n/bare": {APIVersion: "v1", Kind: "Secret"}, "n/kinded": kinded.TypeMeta} {
		got, _, err := store.GetByKey(name)
		if err != nil || got.(*corev1.Secret).TypeMeta != want {
			t.Errorf("%s reads with TypeMeta %+v (%v), want %+v", name, got.(*corev1.Secret).TypeMeta, err, want)
		}
	}
}

// widget is a typed custom resource as kubebuilder writes them: no
// protobuf, so the codec refuses it and the store keeps it decoded.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := &widget{TypeMeta: w.TypeMeta}
	w.DeepCopyInto(&out.ObjectMeta)
	return out
}

// Objects the codec refuses are read as copies: with NewCacheWith's read
// kind, those copies need the kind as much as decodes do, since
// controller-runtime, its DeepCopy off, sets none. It read them without.
// (The store now also gives the stored object its kind when it takes it,
// for handlers: TestReadKindReachesHandlersOfRefusedObjects.)
func TestReadKindFillsCopiesOfRefusedObjects(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	c, err := newConfig([]Option{WithEncodedStore(), withReadKind(gvk)})
	if err != nil {
		t.Fatal(err)
	}
	store := cache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}, c.indexerOptions()...)
	w := &widget{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "w", Labels: map[string]string{"app": "a"}}}
	if err := store.Add(w); err != nil {
		t.Fatal(err)
	}
	if stats := store.CodecStats(); stats.Unencoded == 0 {
		t.Fatalf("CodecStats %+v: the widget was not refused, the test tests nothing", stats)
	}
	got, _, err := store.GetByKey("n/w")
	if err != nil {
		t.Fatal(err)
	}
	byIndex, err := store.ByIndex(toolscache.NamespaceIndex, "n")
	if err != nil || len(byIndex) != 1 {
		t.Fatalf("ByIndex: %v, %v", byIndex, err)
	}
	byLabels, err := store.ListByLabels(cache.LabelQuery{Selector: labels.SelectorFromSet(labels.Set{"app": "a"})})
	if err != nil || len(byLabels) != 1 {
		t.Fatalf("ListByLabels: %v, %v", byLabels, err)
	}
	reads := map[string]any{"GetByKey": got, "List": store.List()[0], "ByIndex": byIndex[0], "ListByLabels": byLabels[0]}
	for what, o := range reads {
		if k := o.(*widget).GroupVersionKind(); k != gvk {
			t.Errorf("%s reads with kind %v, want %v", what, k, gvk)
		}
		if o == any(w) {
			t.Errorf("%s handed out the stored object, not a copy", what)
		}
	}
	for what, o := range reads {
		o.(*widget).Labels["app"] = "written into the read of " + what
	}
	if w.Labels["app"] != "a" {
		t.Errorf("a write into a read reached the stored object: labels %v", w.Labels)
	}
}

// Under NewCacheWith, an encoded store decodes its objects with their kind
// (withReadKind), so its handlers get them with TypeMeta set, the initial
// list's and live changes' alike, where client-go's typed objects come
// without: a deliberate difference (docs/compatibility.md). Without the read
// kind, handlers get what client-go's do.
func TestReadKindReachesHandlers(t *testing.T) {
	cmKind := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"NewCacheWith's read kind", []Option{WithEncodedStore(), withReadKind(cmKind)}, "ConfigMap"},
		{"no read kind", []Option{WithEncodedStore()}, ""},
		{"plain store", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, 3)
			inf := newInformer(s, 0, tc.opts...)
			rec := newRecorder()
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
			run(t, inf)
			waitSynced(t, inf)
			eventually(t, "the initial adds", func() bool { return rec.len() == 3 })
			mustUpdate(t, s, configMap("cm-0001", "i", "changed"))
			mustCreate(t, s, configMap("cm-new"))
			mustDelete(t, s, "cm-0002")
			eventually(t, "the live changes", func() bool { return rec.len() == 6 })
			for _, c := range rec.snapshot() {
				for what, o := range map[string]any{"object": c.obj, "old object": c.old} {
					if o == nil {
						continue
					}
					if k := o.(*corev1.ConfigMap).Kind; k != tc.want {
						t.Errorf("%s %s: the %s has kind %q, want %q", c.op, c.key, what, k, tc.want)
					}
				}
			}
		})
	}
}

// widgetList is the list of widgets a fake API server serves.
type widgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []widget `json:"items"`
}

func (l *widgetList) DeepCopyObject() runtime.Object {
	out := &widgetList{TypeMeta: l.TypeMeta}
	l.DeepCopyInto(&out.ListMeta)
	for _, w := range l.Items {
		out.Items = append(out.Items, *w.DeepCopyObject().(*widget))
	}
	return out
}

// Typed custom resources (no protobuf: the codec refuses them, the store
// keeps them decoded) reach handlers with their kind under NewCacheWith,
// as reads give them and as every other typed object reaches handlers:
// initial list, late handler, live change (old and new) and relist alike.
// Handlers got them without a kind but for a live change's new object (a
// read's copy) and a live delete.
func TestReadKindReachesHandlersOfRefusedObjects(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	s := fake.NewServer(&widgetList{})
	t.Cleanup(s.Close)
	newWidget := func(name, app string) *widget {
		return &widget{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name, Labels: map[string]string{"app": app}}}
	}
	for _, name := range []string{"w-1", "w-2", "w-3"} {
		mustCreate(t, s, newWidget(name, "a"))
	}
	inf := NewSharedIndexInformerWithOptions(s.ListerWatcher(), &widget{},
		toolscache.SharedIndexInformerOptions{Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}},
		WithBackoff(fastBackoff), WithRelistReuse(false), WithEncodedStore(), withReadKind(gvk))
	early := newRecorder()
	if _, err := inf.AddEventHandler(early); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	if stats := inf.indexer.CodecStats(); stats.Unencoded != 3 {
		t.Fatalf("CodecStats %+v: the widgets were not refused, the test tests nothing", stats)
	}
	late := newRecorder()
	if _, err := inf.AddEventHandler(late); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the initial adds", func() bool { return early.len() == 3 && late.len() == 3 })
	mustUpdate(t, s, newWidget("w-1", "b"))
	mustCreate(t, s, newWidget("w-4", "a"))
	mustDelete(t, s, "w-2")
	eventually(t, "the live changes", func() bool { return early.len() == 6 && late.len() == 6 })
	forceRelist(t, s, func() {
		mustUpdate(t, s, newWidget("w-3", "b"))
		mustDelete(t, s, "w-4")
	})
	// The relist: w-1 and w-3 updated (reuse off), w-4 deleted.
	eventually(t, "the relist", func() bool { return early.len() == 9 && late.len() == 9 })
	for name, rec := range map[string]*recorder{"early": early, "late": late} {
		for _, c := range rec.snapshot() {
			for what, o := range map[string]any{"object": c.obj, "old object": c.old} {
				if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
					o = tomb.Obj
				}
				if o == nil {
					continue
				}
				if k := o.(runtime.Object).GetObjectKind().GroupVersionKind(); k != gvk {
					t.Errorf("%s handler: %s %s (initial %v, tombstone %v): the %s has kind %v, want %v", name, c.op, c.key, c.initial, c.tombstone, what, k, gvk)
				}
			}
		}
	}
}

// A handler is handed an object the codec refused as the store holds it
// (as client-go's handlers are handed its stored objects), not a copy:
// a handler writing into it changes what later reads copy. Reads of such
// objects are copies (TestReadKindFillsCopiesOfRefusedObjects). The cache
// mutation detector is not fed for them either.
func TestHandlersShareRefusedObjectsWithTheStore(t *testing.T) {
	s := fake.NewServer(&widgetList{})
	t.Cleanup(s.Close)
	mustCreate(t, s, &widget{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "w", Labels: map[string]string{"app": "a"}}})
	inf := NewSharedIndexInformerWithOptions(s.ListerWatcher(), &widget{},
		toolscache.SharedIndexInformerOptions{}, WithBackoff(fastBackoff), WithEncodedStore())
	written := make(chan struct{})
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		obj.(*widget).Labels["app"] = "written by the handler"
		close(written)
	}}); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	<-written
	if stats := inf.indexer.CodecStats(); stats.Unencoded != 1 {
		t.Fatalf("CodecStats %+v: the widget was not refused, the test tests nothing", stats)
	}
	got, _, err := inf.GetStore().GetByKey(key("w"))
	if err != nil {
		t.Fatal(err)
	}
	if app := got.(*widget).Labels["app"]; app != "written by the handler" {
		t.Fatalf("a read after the handler wrote into its object has app=%q: handlers get copies of refused objects", app)
	}
}

// An object handed to the store's own Add, Update, Replace or Transaction
// stays the caller's: client-go's store leaves it as it is. The encoded
// store keeps an object its codec refuses (a typed custom resource) as it
// is, after giving it NewCacheWith's kind and interning its strings; for a
// caller's object it must do that on a copy, or not at all.
func TestDirectWritesLeaveTheCallersRefusedObjectAlone(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	newWidget := func(name string) *widget {
		return &widget{ObjectMeta: metav1.ObjectMeta{Namespace: strings.Clone(testNamespace), Name: name, Labels: map[string]string{"app": strings.Clone("a")}}}
	}
	writes := map[string]func(s toolscache.Store, w *widget) error{
		"Add":     func(s toolscache.Store, w *widget) error { return s.Add(w) },
		"Update":  func(s toolscache.Store, w *widget) error { return s.Update(w) },
		"Replace": func(s toolscache.Store, w *widget) error { return s.Replace([]any{newWidget("first"), w}, "1") },
		"Transaction": func(s toolscache.Store, w *widget) error {
			if err := s.(toolscache.TransactionStore).Transaction(toolscache.Transaction{Type: toolscache.TransactionTypeAdd, Object: w}); err != nil {
				return err
			}
			return nil
		},
	}
	for name, write := range writes {
		inf := NewSharedIndexInformerWithOptions(&toolscache.ListWatch{}, &widget{}, toolscache.SharedIndexInformerOptions{},
			WithEncodedStore(), withReadKind(gvk), WithInterning())
		store := inf.GetStore()
		if err := store.Add(newWidget("first")); err != nil { // the table now holds the namespace and the label
			t.Fatal(err)
		}
		w := newWidget("w")
		ns, app := unsafe.StringData(w.Namespace), unsafe.StringData(w.Labels["app"])
		if err := write(store, w); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if stats := inf.indexer.CodecStats(); stats.Unencoded == 0 {
			t.Fatalf("%s: CodecStats %+v: the widget was not refused, the test tests nothing", name, stats)
		}
		if !w.GroupVersionKind().Empty() {
			t.Errorf("%s: the caller's object was given the kind %v", name, w.GroupVersionKind())
		}
		if unsafe.StringData(w.Namespace) != ns || unsafe.StringData(w.Labels["app"]) != app {
			t.Errorf("%s: the caller's object had its strings interned", name)
		}
		got, _, err := store.GetByKey(key("w"))
		if err != nil {
			t.Fatal(err)
		}
		if gvkGot := got.(*widget).GroupVersionKind(); gvkGot != gvk {
			t.Errorf("%s: a read returned kind %v, want %v", name, gvkGot, gvk)
		}
	}
}

// Under NewCacheWith's read kind, index functions see every object with
// its kind, as reads and handlers do: an encoded object when it is stored
// and when AddIndexers indexes it later, and an object the codec refuses
// (kept with the kind). Before, an encoded object was indexed as it came,
// without the kind, and with it by AddIndexers, so one index function gave
// different values for objects of the same kind.
func TestIndexFunctionsSeeTheReadKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		gvk  schema.GroupVersionKind
		obj  func(name string) runtime.Object
	}{
		{"encoded", corev1.SchemeGroupVersion.WithKind("Secret"), func(name string) runtime.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: name}}
		}},
		{"refused", schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, func(name string) runtime.Object {
			return &widget{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: name}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newConfig([]Option{WithEncodedStore(), withReadKind(tc.gvk)})
			if err != nil {
				t.Fatal(err)
			}
			byKind := func(obj any) ([]string, error) {
				return []string{"kind " + obj.(runtime.Object).GetObjectKind().GroupVersionKind().Kind}, nil
			}
			store := cache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{"stored": byKind}, c.indexerOptions()...)
			added := tc.obj("added")
			if err := store.Add(added); err != nil {
				t.Fatal(err)
			}
			if gvk := added.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
				t.Errorf("Add gave the caller's object the kind %v; it must stay as the caller gave it", gvk)
			}
			if _, _, err := store.Upsert(tc.obj("upserted")); err != nil {
				t.Fatal(err)
			}
			store.StartReplace()
			if _, _, err := store.AddToReplace(tc.obj("relisted"), nil); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"n/added", "n/upserted"} {
				o, _, _ := store.GetByKey(k)
				if _, _, err := store.AddToReplace(o, nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := store.FinishReplace("2"); err != nil {
				t.Fatal(err)
			}
			if err := store.AddIndexers(toolscache.Indexers{"added later": byKind}); err != nil {
				t.Fatal(err)
			}
			want := []string{"kind " + tc.gvk.Kind}
			for _, index := range []string{"stored", "added later"} {
				if got := store.ListIndexFuncValues(index); !slices.Equal(got, want) {
					t.Errorf("index %q has values %q, want %q", index, got, want)
				}
			}
		})
	}
}
