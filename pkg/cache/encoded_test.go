package cache

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/internal/errorcapture"
	"github.com/leaninformer/leaninformer/internal/testobjects"
	"github.com/leaninformer/leaninformer/pkg/codec"
)

// countingCodec counts the calls to a codec.
type countingCodec struct {
	Codec
	encodes, decodes atomic.Int64
}

func (c *countingCodec) Encode(obj any) ([]byte, error) {
	c.encodes.Add(1)
	return c.Codec.Encode(obj)
}

func (c *countingCodec) Decode(data []byte) (any, error) {
	c.decodes.Add(1)
	return c.Codec.Decode(data)
}

func nsIndexers() toolscache.Indexers {
	return toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
}

// wantForm is what the encoded store must return for an object the plain
// store holds: its protobuf form for typed objects, itself for
// unstructured ones (CBOR keeps everything).
func wantForm(o any) any {
	ro, ok := o.(runtime.Object)
	if !ok {
		return o
	}
	c := ro.DeepCopyObject()
	if _, unstructured := c.(runtime.Unstructured); !unstructured {
		testobjects.ProtobufForm(reflect.ValueOf(c))
	}
	return c
}

// TestEncodedStoreReturnsWhatThePlainStoreHolds stores every fixture of
// k8s.io/api, typed, metadata-only and unstructured, and random typed
// objects (testobjects.Random: pointer times set, times with nanoseconds
// in three zones), in a plain and an encoded store, live and through a
// paged replace, and compares every read.
func TestEncodedStoreReturnsWhatThePlainStoreHolds(t *testing.T) {
	fixtures := func(decode func([]byte) (runtime.Object, error)) func(*testing.T) []runtime.Object {
		return func(t *testing.T) []runtime.Object {
			var objs []runtime.Object
			for _, f := range testobjects.APIFixtures(t) {
				if o, err := decode(f.JSON); err == nil {
					objs = append(objs, o)
				}
			}
			return objs
		}
	}
	random := func(*testing.T) []runtime.Object {
		g := testobjects.NewRandom(3)
		objs := make([]runtime.Object, 50*testobjects.RandomKinds)
		for i := range objs {
			objs[i] = g.Object(i)
		}
		return objs
	}
	for _, tc := range []struct {
		name    string
		objects func(*testing.T) []runtime.Object
	}{
		{"typed", fixtures(testobjects.DecodeTyped)},
		{"PartialObjectMetadata", fixtures(testobjects.DecodePartial)},
		{"unstructured", fixtures(testobjects.DecodeUnstructured)},
		{"random typed", random},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers())
			enc := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), WithCodec(codec.New()))
			var objs []runtime.Object
			for _, o := range tc.objects(t) {
				if _, err := toolscache.MetaNamespaceKeyFunc(o); err != nil {
					continue // no metadata: no key in either store
				}
				objs = append(objs, o)
				if err := plain.Add(o); err != nil {
					t.Fatal(err)
				}
				if err := enc.Add(o); err != nil {
					t.Fatal(err)
				}
			}
			if len(objs) < 150 {
				t.Fatalf("stored %d objects, want at least 150", len(objs))
			}
			compareStores(t, "live", plain, enc)
			if s := enc.CodecStats(); s.Encoded != len(plain.ListKeys()) || s.Unencoded != 0 {
				t.Fatalf("CodecStats = %+v; every fixture should be encoded", s)
			}

			// A relist of changed copies through the paged replace.
			plain.StartReplace()
			enc.StartReplace()
			for _, o := range objs {
				c := o.DeepCopyObject()
				m, _ := meta.Accessor(c)
				m.SetResourceVersion(m.GetResourceVersion() + "1")
				if _, _, err := plain.AddToReplace(c, nil); err != nil {
					t.Fatal(err)
				}
				if _, _, err := enc.AddToReplace(c, nil); err != nil {
					t.Fatal(err)
				}
			}
			pd, err := plain.FinishReplace("99")
			if err != nil {
				t.Fatal(err)
			}
			ed, err := enc.FinishReplace("99")
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range ed.Changes {
				for what, pair := range map[string][2]any{"old": {c.Old, pd.Changes[i].Old}, "new": {c.New, pd.Changes[i].New}} {
					got, err := enc.Decode(pair[0])
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, wantForm(pair[1])) {
						t.Fatalf("Diff change %s, %s: %#v, want %#v", c.Key, what, got, wantForm(pair[1]))
					}
				}
			}
			compareStores(t, "after a paged replace", plain, enc)
		})
	}
}

// compareStores checks that every object the encoded store returns is the
// one the plain store returns, in its protobuf form.
func compareStores(t *testing.T, when string, plain, enc *Indexer) {
	t.Helper()
	same := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, wantForm(want)) {
			t.Fatalf("%s: %s:\n got %#v\nwant %#v", when, what, got, wantForm(want))
		}
	}
	for _, key := range plain.ListKeys() {
		want, _, _ := plain.GetByKey(key)
		got, ok, err := enc.GetByKey(key)
		if !ok || err != nil {
			t.Fatalf("%s: GetByKey(%s) = %v, %v", when, key, ok, err)
		}
		same("GetByKey "+key, got, want)
	}
	byKey := func(list []any) map[string]any {
		m := map[string]any{}
		for _, o := range list {
			k, _ := toolscache.MetaNamespaceKeyFunc(o)
			m[k] = o
		}
		return m
	}
	wantAll := byKey(plain.List())
	gotAll := byKey(enc.List())
	if len(gotAll) != len(wantAll) {
		t.Fatalf("%s: List has %d objects, the plain store's %d", when, len(gotAll), len(wantAll))
	}
	for k, o := range wantAll {
		same("List "+k, gotAll[k], o)
	}
	for _, ns := range plain.ListIndexFuncValues(toolscache.NamespaceIndex) {
		want, _ := plain.ByIndex(toolscache.NamespaceIndex, ns)
		got, _ := enc.ByIndex(toolscache.NamespaceIndex, ns)
		if len(got) != len(want) {
			t.Fatalf("%s: ByIndex(%s) has %d objects, the plain store's %d", when, ns, len(got), len(want))
		}
		g := byKey(got)
		for k, o := range byKey(want) {
			same("ByIndex "+k, g[k], o)
		}
	}
}

// TestEncodedReadsCannotChangeTheStore writes into every field of every
// object each read returns and checks that the store's objects stay as
// they were. A plain store (like client-go's) hands out the stored object
// itself, so the same writes change it: that is the bug client-go's cache
// mutation detector exists to find.
func TestEncodedReadsCannotChangeTheStore(t *testing.T) {
	for _, kind := range testobjects.Kinds {
		t.Run(kind, func(t *testing.T) {
			objs := testobjects.ServerObjects(t, kind)
			enc := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), WithCodec(codec.New()))
			plain := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers())
			for _, o := range objs {
				if err := enc.Add(o.DeepCopyObject()); err != nil {
					t.Fatal(err)
				}
				if err := plain.Add(o.DeepCopyObject()); err != nil {
					t.Fatal(err)
				}
			}
			key, _ := toolscache.MetaNamespaceKeyFunc(objs[0])
			ns := objs[0].(metav1.Object).GetNamespace()
			reads := map[string]func(s *Indexer) []any{
				"Get": func(s *Indexer) []any {
					o, _, _ := s.Get(objs[0])
					return []any{o}
				},
				"GetByKey": func(s *Indexer) []any {
					o, _, _ := s.GetByKey(key)
					return []any{o}
				},
				"List": func(s *Indexer) []any { return s.List() },
				"ByIndex": func(s *Indexer) []any {
					l, _ := s.ByIndex(toolscache.NamespaceIndex, ns)
					return l
				},
				"Index": func(s *Indexer) []any {
					l, _ := s.Index(toolscache.NamespaceIndex, objs[0])
					return l
				},
			}
			for name, read := range reads {
				before := enc.List()
				for _, o := range read(enc) {
					testobjects.Poison(reflect.ValueOf(o))
				}
				if after := enc.List(); !sameByKey(before, after) {
					t.Errorf("%s: writing into what it returned changed the encoded store", name)
				}
				plainBefore := deepCopies(plain.List())
				for _, o := range read(plain) {
					testobjects.Poison(reflect.ValueOf(o))
				}
				if sameByKey(plainBefore, plain.List()) {
					t.Errorf("%s: writing into what the plain store returned left it unchanged: the test shows nothing", name)
				}
				plain = refill(t, objs)
			}
		})
	}
}

// TestRefusedUnstructuredReads: the codec refuses unstructured content
// that JSON decoding never produces (built in the process: a Go int, labels
// as a map[string]string), and unstructured's DeepCopyObject panics on
// exactly that content. Reads must still hand out copies that share
// nothing with the store.
func TestRefusedUnstructuredReads(t *testing.T) {
	s := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), WithCodec(codec.New()))
	stored := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "a", "name": "w", "labels": map[string]string{"app": "x"}},
		"spec":     map[string]any{"replicas": 3, "ports": []int{80, 443}, "tags": []any{"t"}},
	}}
	if err := s.Add(stored); err != nil {
		t.Fatal(err)
	}
	if st := s.CodecStats(); st.Unencoded != 1 {
		t.Fatalf("CodecStats = %+v, want the object kept unencoded", st)
	}
	want := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "a", "name": "w", "labels": map[string]string{"app": "x"}},
		"spec":     map[string]any{"replicas": 3, "ports": []int{80, 443}, "tags": []any{"t"}},
	}
	reads := map[string]func() ([]any, error){
		"GetByKey": func() ([]any, error) {
			o, _, err := s.GetByKey("a/w")
			return []any{o}, err
		},
		"List":         func() ([]any, error) { return s.List(), nil },
		"ByIndex":      func() ([]any, error) { return s.ByIndex(toolscache.NamespaceIndex, "a") },
		"ListByLabels": func() ([]any, error) { return s.ListByLabels(LabelQuery{}) },
	}
	for name, read := range reads {
		var got []any
		var err error
		if msg := panicMessage(func() { got, err = read() }); msg != "" {
			t.Fatalf("%s panicked: %s", name, msg)
		}
		if err != nil || len(got) != 1 {
			t.Fatalf("%s = %v, %v; want the one object", name, got, err)
		}
		u := got[0].(*unstructured.Unstructured)
		if !reflect.DeepEqual(u.Object, want) {
			t.Fatalf("%s returned %v, want %v", name, u.Object, want)
		}
		spec := u.Object["spec"].(map[string]any)
		spec["replicas"] = 4
		spec["ports"].([]int)[0] = 8080
		spec["tags"].([]any)[0] = "changed"
		u.Object["metadata"].(map[string]any)["labels"].(map[string]string)["app"] = "y"
		if !reflect.DeepEqual(stored.Object, want) {
			t.Fatalf("writing into what %s returned changed the store: %v", name, stored.Object)
		}
	}
}

func refill(t *testing.T, objs []runtime.Object) *Indexer {
	t.Helper()
	plain := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers())
	for _, o := range objs {
		if err := plain.Add(o.DeepCopyObject()); err != nil {
			t.Fatal(err)
		}
	}
	return plain
}

func deepCopies(list []any) []any {
	out := make([]any, len(list))
	for i, o := range list {
		out[i] = o.(runtime.Object).DeepCopyObject()
	}
	return out
}

// sameByKey reports whether two reads hold equal objects under the same
// keys. Poisoned objects change their names, so keys are the stores'.
func sameByKey(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	index := map[string]any{}
	for _, o := range a {
		index[identity(o)] = o
	}
	for _, o := range b {
		if w, ok := index[identity(o)]; !ok || !reflect.DeepEqual(w, o) {
			return false
		}
	}
	return true
}

func identity(o any) string {
	m, _ := meta.Accessor(o)
	return string(m.GetUID())
}

// unencodable is an API object without protobuf methods: the codec refuses
// it.
type unencodable struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec map[string]string
}

func (u *unencodable) DeepCopyObject() runtime.Object {
	c := &unencodable{TypeMeta: u.TypeMeta, ObjectMeta: *u.DeepCopy(), Spec: map[string]string{}}
	for k, v := range u.Spec {
		c.Spec[k] = v
	}
	return c
}

// TestMixedStore checks that objects the codec refuses are kept as they
// are, counted, indexed, reused on relists and handed out as DeepCopies.
func TestMixedStore(t *testing.T) {
	cc := &countingCodec{Codec: codec.New()}
	s := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), WithCodec(cc))
	odd := &unencodable{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "odd", UID: "u-odd", ResourceVersion: "5"}, Spec: map[string]string{"k": "v"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "pod", UID: testobjects.UID(1), ResourceVersion: "6"}}
	for _, o := range []runtime.Object{odd, pod} {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	want := CodecStats{Encoded: 1, Unencoded: 1, EncodeFailures: 1}
	got := s.CodecStats()
	if got.EncodedBytes == 0 {
		t.Fatalf("CodecStats.EncodedBytes = 0 with a pod stored")
	}
	got.EncodedBytes = 0
	if got != want {
		t.Fatalf("CodecStats = %+v, want %+v", got, want)
	}
	read, _, _ := s.GetByKey("a/odd")
	if read == odd || !reflect.DeepEqual(read, odd) {
		t.Fatalf("GetByKey of an unencoded object = %p %#v; want a DeepCopy of %p", read, read, odd)
	}
	read.(*unencodable).Spec["k"] = "changed"
	if odd.Spec["k"] != "v" {
		t.Fatal("writing into a read changed the stored object")
	}
	objs, _ := s.ByIndex(toolscache.NamespaceIndex, "a")
	if len(objs) != 2 {
		t.Fatalf("ByIndex(a) = %d objects, want 2", len(objs))
	}

	// A relist: the unencoded object is reused as it is, the pod's entry too.
	s.StartReplace()
	for _, o := range []runtime.Object{odd.DeepCopyObject(), pod.DeepCopy()} {
		if _, reused, err := s.AddToReplace(o, nil); err != nil || !reused {
			t.Fatalf("AddToReplace(%T) = reused %v, %v; want reused", o, reused, err)
		}
	}
	d, err := s.FinishReplace("7")
	if err != nil || d.Reused != 2 {
		t.Fatalf("FinishReplace = %+v, %v; want 2 reused", d, err)
	}
	for _, c := range d.Changes {
		if IsEncoded(c.New) != (c.Key == "a/pod") {
			t.Fatalf("Diff change %s: IsEncoded %v", c.Key, IsEncoded(c.New))
		}
		if obj, err := s.Decode(c.New); err != nil || (c.Key == "a/odd" && obj != odd) {
			t.Fatalf("Decode(%s) = %p, %v; an unencoded object passes through as it is", c.Key, obj, err)
		}
	}
}

// TestEncodedWritesNeverDecode checks that updates, deletes, relists and
// their Diff work on the encoded form alone: only reads and Decode decode.
func TestEncodedWritesNeverDecode(t *testing.T) {
	cc := &countingCodec{Codec: codec.New()}
	s := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), WithCodec(cc))
	pods := testobjects.NewPopulation(t, "pods").Objects(50)
	for _, p := range pods {
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range pods {
		c := p.DeepCopyObject().(*corev1.Pod)
		c.ResourceVersion = fmt.Sprint(200000 + i)
		if i%5 == 0 {
			c.Namespace = "moved" // a key of its own, and a new index value
		}
		if _, _, err := s.Upsert(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods[:10] {
		if _, _, err := s.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	s.StartReplace()
	for _, p := range pods[10:] {
		if _, _, err := s.AddToReplace(p.DeepCopyObject(), nil); err != nil {
			t.Fatal(err)
		}
	}
	d, err := s.FinishReplace("300000")
	if err != nil {
		t.Fatal(err)
	}
	if n := cc.decodes.Load(); n != 0 {
		t.Fatalf("writes decoded %d times, want 0", n)
	}
	// The relisted copies of the 8 pods whose moved update went to a key of
	// its own match their live entries: reused, not encoded.
	if d.Reused != 8 {
		t.Fatalf("relist reused %d entries, want 8", d.Reused)
	}
	if n, want := cc.encodes.Load(), int64(50+50+40-8); n != want {
		t.Fatalf("%d encodes, want %d (one per object written and not reused)", n, want)
	}
	keys, stored := s.ListStored()
	if n := cc.decodes.Load(); n != 0 || len(stored) != len(s.ListKeys()) || len(keys) != len(stored) {
		t.Fatalf("ListStored returned %d keys, %d values and decoded %d times; want %d, none", len(keys), len(stored), n, len(s.ListKeys()))
	}
	for i, v := range stored {
		if !IsEncoded(v) {
			t.Fatalf("ListStored returned %T, want encoded entries", v)
		}
		obj, err := s.Decode(v)
		if err != nil {
			t.Fatal(err)
		}
		if key, _ := toolscache.MetaNamespaceKeyFunc(obj); key != keys[i] {
			t.Fatalf("ListStored paired %q with the object of key %q", keys[i], key)
		}
	}
	cc.decodes.Store(0)
	if got := len(s.List()); cc.decodes.Load() != int64(got) {
		t.Fatalf("List of %d objects decoded %d times", got, cc.decodes.Load())
	}
}

// TestEncodedRelistReuseComparesKeptIdentity checks relist reuse for
// UIDs and resourceVersions in compact form and not.
func TestEncodedRelistReuseComparesKeptIdentity(t *testing.T) {
	for _, tc := range []struct{ uid, rv string }{
		{string(testobjects.UID(7)), "12345"},
		{"not-a-uuid", "12345"},
		{"A0B1C2D3-0000-4000-8000-000000000000", "12345"}, // uppercase: kept as a string
		{"00000000-0000-0000-0000-000000000000", "12345"}, // the nil UUID
		{string(testobjects.UID(7)), "0"},
		{string(testobjects.UID(7)), "0012"},
		{string(testobjects.UID(7)), "18446744073709551616"}, // above uint64
		{string(testobjects.UID(7)), "opaque-rv"},
		{"", "12345"},
	} {
		t.Run(tc.uid+"@"+tc.rv, func(t *testing.T) {
			s := NewIndexer(toolscache.MetaNamespaceKeyFunc, nil, WithCodec(codec.New()))
			live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "c", UID: k8stypes.UID(tc.uid), ResourceVersion: tc.rv}}
			if err := s.Add(live); err != nil {
				t.Fatal(err)
			}
			got, _, _ := s.GetByKey("n/c")
			if m := got.(metav1.Object); string(m.GetUID()) != tc.uid || m.GetResourceVersion() != tc.rv {
				t.Fatalf("stored identity %q@%q, want %q@%q", m.GetUID(), m.GetResourceVersion(), tc.uid, tc.rv)
			}
			old, _, _ := s.Upsert(live)
			if rv, ok := ResourceVersionOf(old); !IsEncoded(old) || !ok || rv != tc.rv {
				t.Fatalf("ResourceVersionOf(the stored entry) = %q, %v; want %q", rv, ok, tc.rv)
			}
			for _, next := range []struct {
				uid, rv string
				reuse   bool
			}{
				{tc.uid, tc.rv, true},
				{tc.uid + "x", tc.rv, false},
				{tc.uid, tc.rv + "1", false},
				{tc.uid, "", false},
			} {
				s.StartReplace()
				c := live.DeepCopy()
				c.UID, c.ResourceVersion = k8stypes.UID(next.uid), next.rv
				if _, reused, err := s.AddToReplace(c, nil); err != nil || reused != next.reuse {
					t.Errorf("relist with %q@%q: reused %v (%v), want %v", next.uid, next.rv, reused, err, next.reuse)
				}
				s.AbortReplace()
			}
		})
	}
}

// brokenCodec decodes nothing.
type brokenCodec struct{ Codec }

func (brokenCodec) Decode([]byte) (any, error) { return nil, errors.New("broken") }

// TestDecodeFailuresAreReported checks what reads do when a codec cannot
// decode what it encoded: Get returns the error, lists leave the object out,
// and both count it.
func TestDecodeFailuresAreReported(t *testing.T) {
	s := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), WithCodec(brokenCodec{codec.New()}))
	if err := s.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "c"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.GetByKey("n/c"); !ok || err == nil {
		t.Fatalf("GetByKey = %v, %v; want the object's decode error", ok, err)
	}
	if l := s.List(); len(l) != 0 {
		t.Fatalf("List = %v, want the undecodable object left out", l)
	}
	if s.CodecStats().DecodeFailures != 2 {
		t.Fatalf("DecodeFailures = %d, want 2", s.CodecStats().DecodeFailures)
	}
	if len(s.ListKeys()) != 1 {
		t.Fatal("the store lost the object")
	}
}

// TestDecodeFailuresNameTheKey checks that every read that cannot decode an
// object says which: Get's error, and the report of each list read that
// leaves it out.
func TestDecodeFailuresNameTheKey(t *testing.T) {
	var mu sync.Mutex
	var reported []string
	t.Cleanup(errorcapture.Install(func(err error, _ string) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err.Error())
	}))

	s := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), WithCodec(brokenCodec{codec.New()}))
	for _, name := range []string{"a", "b"} {
		if err := s.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.GetByKey("n/a"); err == nil || !strings.Contains(err.Error(), `"n/a"`) {
		t.Errorf("GetByKey: %v, want an error naming \"n/a\"", err)
	}
	for read, call := range map[string]func(){
		"List":    func() { s.List() },
		"ByIndex": func() { _, _ = s.ByIndex(toolscache.NamespaceIndex, "n") },
		"Index": func() {
			_, _ = s.Index(toolscache.NamespaceIndex, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "n"}})
		},
		"ListByLabels": func() { _, _ = s.ListByLabels(LabelQuery{}) },
	} {
		mu.Lock()
		reported = nil
		mu.Unlock()
		call()
		mu.Lock()
		got := slices.Clone(reported)
		mu.Unlock()
		slices.Sort(got)
		if len(got) != 2 || !strings.Contains(got[0], `"n/a"`) || !strings.Contains(got[1], `"n/b"`) {
			t.Errorf("%s reported %q, want one error naming \"n/a\" and one \"n/b\"", read, got)
		}
	}

	// A codec that cannot read the labels from the encoding.
	s = NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), WithCodec(brokenLabelCodec{codec.New()}))
	if err := s.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "c"}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	reported = nil
	mu.Unlock()
	_, _ = s.ListByLabels(LabelQuery{})
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || !strings.Contains(reported[0], `"n/c"`) || !strings.Contains(reported[0], "reading its labels") {
		t.Errorf("ListByLabels with labels it cannot read reported %q, want one error naming \"n/c\"", reported)
	}
}

// TestResourceVersionOfObjects checks ResourceVersionOf on what a plain
// store hands out, and on an entry whose object has no metadata.
func TestResourceVersionOfObjects(t *testing.T) {
	if rv, ok := ResourceVersionOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42"}}); rv != "42" || !ok {
		t.Errorf("ResourceVersionOf(a pod) = %q, %v", rv, ok)
	}
	if _, ok := ResourceVersionOf("not an object"); ok {
		t.Error("ResourceVersionOf(a string) has a resourceVersion")
	}
	noMeta := newEncoded(&metav1.Status{}, nil)
	if _, ok := ResourceVersionOf(noMeta); ok || noMeta.sameVersion("", "1") {
		t.Error("an entry without metadata has a resourceVersion")
	}
}

// OlderThanStored compares a change's resourceVersion with the stored
// object's without decoding it, plain or encoded, the version kept as a
// number or (not decimal in canonical form) as a string.
func TestOlderThanStored(t *testing.T) {
	for _, withCodec := range []bool{false, true} {
		t.Run(fmt.Sprint("codec=", withCodec), func(t *testing.T) {
			var opts []Option
			if withCodec {
				opts = append(opts, WithCodec(codec.New()))
			}
			c := NewIndexer(toolscache.MetaNamespaceKeyFunc, nil, opts...)
			for name, rv := range map[string]string{"compact": "50", "padded": "050", "opaque": "abc", "empty": ""} {
				if err := c.Add(obj("a", name, canonicalUID(0), rv, nil)); err != nil {
					t.Fatal(err)
				}
			}
			for _, tc := range []struct {
				name, rv, stored string
				older            bool
			}{
				{"compact", "49", "50", true},
				{"compact", "50", "", false},
				{"compact", "51", "", false},
				{"padded", "49", "050", true}, // 50, kept as the string it was
				{"padded", "50", "", false},
				{"opaque", "1", "", false},
				{"empty", "1", "", false},
				{"absent", "1", "", false},
				{"compact", "x", "", false},
			} {
				stored, older := c.OlderThanStored(obj("a", tc.name, "", tc.rv, nil), tc.rv)
				if stored != tc.stored || older != tc.older {
					t.Errorf("%s at %q: (%q, %v), want (%q, %v)", tc.name, tc.rv, stored, older, tc.stored, tc.older)
				}
			}
		})
	}
}

// An index function that reads state outside the object (here a team per
// namespace that changes) gives an object other values later than when it
// was stored. The plain store, like client-go's, unindexes an object with
// the values the function gives at that moment, so the entry made under
// the first value stays, pointing at a key that is gone: ByIndex hands
// out nil for it. The encoded store unindexes with the values computed
// when the object was stored and leaves nothing behind. A relist that
// reuses an unchanged object keeps its values in either store, where
// client-go's Replace computes every object's values again.
func TestIndexFuncOfOutsideState(t *testing.T) {
	var team atomic.Value
	indexers := toolscache.Indexers{"team": func(any) ([]string, error) { return []string{team.Load().(string)}, nil }}
	kf := toolscache.MetaNamespaceKeyFunc
	stores := []struct {
		name  string
		store func() toolscache.Indexer
		stale bool // a deleted object's first value keeps its key
	}{
		{"client-go", func() toolscache.Indexer { return toolscache.NewIndexer(kf, indexers) }, true},
		{"plain", func() toolscache.Indexer { return NewIndexer(kf, indexers) }, true},
		{"encoded", func() toolscache.Indexer { return NewIndexer(kf, indexers, WithCodec(codec.New())) }, false},
	}
	// addThenDeleteAsBlue stores an object indexed under "red", then deletes
	// it while the index function answers "blue".
	addThenDeleteAsBlue := func(t *testing.T, c toolscache.Indexer) *pom {
		t.Helper()
		team.Store("red")
		o := obj("a", "x", canonicalUID(0), "5", nil)
		if err := c.Add(o); err != nil {
			t.Fatal(err)
		}
		team.Store("blue")
		if err := c.Delete(o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, s := range stores {
		t.Run(s.name+"/delete", func(t *testing.T) {
			c := s.store()
			addThenDeleteAsBlue(t, c)
			got, err := c.ByIndex("team", "red")
			if err != nil {
				t.Fatal(err)
			}
			keys, _ := c.IndexKeys("team", "red")
			if stale := len(keys) == 1 && len(got) == 1 && got[0] == nil; stale != s.stale || !stale && (len(got) != 0 || len(keys) != 0) {
				t.Errorf("after the delete ByIndex(team, red) gives %v and IndexKeys %v; want a stale entry: %v", got, keys, s.stale)
			}
		})
	}

	// The stale entry's key added again under that value: client-go's set
	// holds it once, the plain store's slice twice (ByIndex returns the
	// object twice) until the key is deleted with that value or a relist is
	// built beside the live generation.
	for _, s := range stores {
		t.Run(s.name+"/add again", func(t *testing.T) {
			c := s.store()
			o := addThenDeleteAsBlue(t, c)
			team.Store("red")
			if err := c.Add(o); err != nil {
				t.Fatal(err)
			}
			want := []string{"a/x"}
			if s.name == "plain" {
				want = []string{"a/x", "a/x"}
			}
			if keys, _ := c.IndexKeys("team", "red"); !slices.Equal(keys, want) {
				t.Errorf("IndexKeys(team, red) = %v, want %v", keys, want)
			}
			if got, _ := c.ByIndex("team", "red"); len(got) != len(want) {
				t.Errorf("ByIndex(team, red) returns %d objects, want %d", len(got), len(want))
			}
		})
	}

	// Relist reuse: an unchanged object keeps the values it was stored
	// with (in place for the plain store: at most a quarter differ).
	for _, s := range stores {
		t.Run(s.name+"/relist", func(t *testing.T) {
			team.Store("red")
			c := s.store()
			var list []any
			for i := range 8 {
				o := obj("a", strconv.Itoa(i), canonicalUID(i), "5", nil)
				list = append(list, o)
				if err := c.Add(o); err != nil {
					t.Fatal(err)
				}
			}
			team.Store("blue")
			if ours, ok := c.(*Indexer); ok {
				ours.StartReplace()
				for _, o := range list {
					if _, reused, err := ours.AddToReplace(o.(*pom).DeepCopy(), nil); err != nil || !reused {
						t.Fatalf("AddToReplace: reused %v, %v", reused, err)
					}
				}
				if _, err := ours.FinishReplace("6"); err != nil {
					t.Fatal(err)
				}
			} else if err := c.Replace(list, "6"); err != nil {
				t.Fatal(err)
			}
			want := []string{"blue"} // client-go computes the values again
			if s.name != "client-go" {
				want = []string{"red"}
			}
			if got := c.ListIndexFuncValues("team"); !slices.Equal(got, want) {
				t.Errorf("after the relist the index holds %v, want %v", got, want)
			}
		})
	}
}
