package cache

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/internal/testobjects"
	"github.com/leaninformer/leaninformer/pkg/codec"
)

// This file extends the oracle harness with a third store: an Indexer with
// a codec, given every operation the other two get. Its reads are fresh
// decodes, so they are compared with client-go's by value, not identity:
// after plainForm, which is what the protobuf encoding cannot tell apart
// (see plainForm), they must be reflect.DeepEqual. Its relist reuse
// decisions and Diffs must be those of our plain Indexer.

func newEncodedStore(reuse bool) *Indexer {
	return NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, baseIndexers(),
		WithRelistReuse(reuse), WithCodec(codec.New()))
}

// plainForm returns a copy of o in the form decoding protobuf gives it
// (see testobjects.ProtobufForm): for the harness's objects
// (metav1.PartialObjectMetadata without TypeMeta or times), empty label and
// annotation maps and empty slices are nil. That is the only difference
// between what the plain and the encoded store return.
func plainForm(o any) any {
	p, ok := o.(*pom)
	if !ok || p == nil {
		return o
	}
	c := p.DeepCopy()
	testobjects.ProtobufForm(reflect.ValueOf(c))
	return c
}

// sameValue fails unless got, an object the encoded store handed out, is
// the plain form of want.
func (h *harness) sameValue(what string, got, want any) {
	h.t.Helper()
	if !reflect.DeepEqual(got, plainForm(want)) {
		h.t.Fatalf("%s: encoded store has %#v, want %#v", what, got, plainForm(want))
	}
}

// decoded decodes what the encoded store handed out without decoding.
func (h *harness) decoded(what string, stored any) any {
	h.t.Helper()
	obj, err := h.enc.Decode(stored)
	if err != nil {
		h.t.Fatalf("%s: Decode: %v", what, err)
	}
	return obj
}

// encUpsert checks the encoded store's Upsert against what the oracle held.
func (h *harness) encUpsert(o any, plainErr error, want any, wantExisted bool) {
	h.t.Helper()
	old, existed, err := h.enc.Upsert(o)
	h.sameErr(fmt.Sprintf("encoded Upsert(%v)", o), err, plainErr)
	if existed != wantExisted {
		h.t.Fatalf("encoded Upsert(%v) existed = %v, want %v", o, existed, wantExisted)
	}
	if existed {
		h.sameValue(fmt.Sprintf("encoded Upsert(%v) old", o), h.decoded("Upsert", old), want)
	}
}

func (h *harness) encRemove(o any, plainErr error, want any, wantExisted bool) {
	h.t.Helper()
	old, existed, err := h.enc.Remove(o)
	h.sameErr(fmt.Sprintf("encoded Remove(%v)", o), err, plainErr)
	if existed != wantExisted {
		h.t.Fatalf("encoded Remove(%v) existed = %v, want %v", o, existed, wantExisted)
	}
	if existed {
		h.sameValue(fmt.Sprintf("encoded Remove(%v) old", o), h.decoded("Remove", old), want)
	}
}

// encAddToReplace buffers o in the encoded store and checks its reuse
// decision against the plain store's and the buffered object against the
// one the plain store buffered.
func (h *harness) encAddToReplace(o any, transform toolscache.TransformFunc, plainStored any, plainReused bool, plainErr error) {
	h.t.Helper()
	stored, reused, err := h.enc.AddToReplace(o, transform)
	h.sameErr(fmt.Sprintf("encoded AddToReplace(%v)", o), err, plainErr)
	if err != nil {
		return
	}
	if reused != plainReused {
		h.t.Fatalf("encoded AddToReplace(%v): reused %v, plain store %v", o, reused, plainReused)
	}
	h.sameValue(fmt.Sprintf("encoded AddToReplace(%v)", o), h.decoded("AddToReplace", stored), plainStored)
}

// encFinishReplace finishes the encoded store's paged replace and checks
// its Diff against the plain store's: the same keys in the same order, the
// same objects once decoded, and reuse where the plain store reused.
func (h *harness) encFinishReplace(rv string, plain *Diff, plainErr error) {
	h.t.Helper()
	d, err := h.enc.FinishReplace(rv)
	h.sameErr("encoded FinishReplace", err, plainErr)
	if err != nil {
		return
	}
	if d.ResourceVersion != plain.ResourceVersion || d.Reused != plain.Reused || len(d.Changes) != len(plain.Changes) || len(d.Deleted) != len(plain.Deleted) {
		h.t.Fatalf("encoded Diff: rv %q, %d reused, %d changes, %d deleted; plain %q, %d, %d, %d",
			d.ResourceVersion, d.Reused, len(d.Changes), len(d.Deleted),
			plain.ResourceVersion, plain.Reused, len(plain.Changes), len(plain.Deleted))
	}
	for i, c := range d.Changes {
		p := plain.Changes[i]
		what := fmt.Sprintf("encoded Diff change %d (%s)", i, c.Key)
		if c.Key != p.Key || (c.Old == nil) != (p.Old == nil) || samePointer(c.Old, c.New) != samePointer(p.Old, p.New) {
			h.t.Fatalf("%s: key %s, old %v, reused %v; plain %s, %v, %v", what, c.Key, c.Old != nil,
				samePointer(c.Old, c.New), p.Key, p.Old != nil, samePointer(p.Old, p.New))
		}
		h.sameValue(what+" new", h.decoded(what, c.New), p.New)
		if c.Old != nil {
			h.sameValue(what+" old", h.decoded(what, c.Old), p.Old)
		}
	}
	plainDeleted := map[string]any{}
	for _, tomb := range plain.Deleted {
		plainDeleted[tomb.Key] = tomb.Obj
	}
	for _, tomb := range d.Deleted {
		want, ok := plainDeleted[tomb.Key]
		if !ok {
			h.t.Fatalf("encoded Diff deletes %s, the plain store's does not", tomb.Key)
		}
		h.sameValue("encoded Diff deleted "+tomb.Key, h.decoded("Diff", tomb.Obj), want)
	}
}

// checkEncoded compares every read of the encoded store with client-go's.
func (h *harness) checkEncoded(oracleItems map[string]any) {
	h.t.Helper()
	t := h.t
	keys, want := h.enc.ListKeys(), h.oracle.ListKeys()
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("encoded ListKeys = %v, client-go %v", keys, want)
	}
	list := h.enc.List()
	if len(list) != len(oracleItems) {
		t.Fatalf("encoded List has %d objects, client-go %d", len(list), len(oracleItems))
	}
	for _, o := range list {
		k, _ := toolscache.DeletionHandlingMetaNamespaceKeyFunc(o)
		h.sameValue("encoded List "+k, o, oracleItems[k])
	}
	for _, k := range keyspace {
		got, gotOK, gotErr := h.enc.GetByKey(k)
		o, ok, _ := h.oracle.GetByKey(k)
		if gotOK != ok || gotErr != nil {
			t.Fatalf("encoded GetByKey(%s) = %v %v, client-go %v", k, gotOK, gotErr, ok)
		}
		if ok {
			h.sameValue("encoded GetByKey "+k, got, o)
		}
	}
	for _, p := range probes {
		got, gotOK, gotErr := h.enc.Get(p)
		o, ok, err := h.oracle.Get(p)
		h.sameErr(fmt.Sprintf("encoded Get(%v)", p), gotErr, err)
		if gotOK != ok {
			t.Fatalf("encoded Get(%v) exists %v, client-go %v", p, gotOK, ok)
		}
		if ok {
			h.sameValue(fmt.Sprintf("encoded Get(%v)", p), got, o)
		}
	}
	if got, want := h.enc.LastStoreSyncResourceVersion(), h.oracle.LastStoreSyncResourceVersion(); got != want {
		t.Fatalf("encoded LastStoreSyncResourceVersion = %q, client-go %q", got, want)
	}
	names := slices.Sorted(maps.Keys(h.enc.GetIndexers()))
	if want := slices.Sorted(maps.Keys(h.oracle.GetIndexers())); !slices.Equal(names, want) {
		t.Fatalf("encoded GetIndexers names = %v, client-go %v", names, want)
	}
	for _, name := range append(names, "no-such-index") {
		h.checkEncodedIndex(name)
	}
	stats := h.enc.CodecStats()
	if stats.Encoded != len(oracleItems) || stats.Unencoded != 0 || stats.DecodeFailures != 0 || (stats.Encoded > 0) != (stats.EncodedBytes > 0) {
		t.Fatalf("CodecStats = %+v with %d objects stored, all encodable", stats, len(oracleItems))
	}
}

func (h *harness) checkEncodedIndex(name string) {
	h.t.Helper()
	t := h.t
	values, want := h.enc.ListIndexFuncValues(name), h.oracle.ListIndexFuncValues(name)
	slices.Sort(values)
	slices.Sort(want)
	if !slices.Equal(values, want) || (values == nil) != (want == nil) {
		t.Fatalf("encoded ListIndexFuncValues(%s) = %#v, client-go %#v", name, values, want)
	}
	for _, v := range append(values, "no-such-value") {
		keys, err := h.enc.IndexKeys(name, v)
		wantKeys, wantErr := h.oracle.IndexKeys(name, v)
		h.sameErr(fmt.Sprintf("encoded IndexKeys(%s, %s)", name, v), err, wantErr)
		if !slices.Equal(keys, wantKeys) || (keys == nil) != (wantKeys == nil) {
			t.Fatalf("encoded IndexKeys(%s, %s) = %#v, client-go %#v", name, v, keys, wantKeys)
		}
		objs, err := h.enc.ByIndex(name, v)
		wantObjs, wantErr := h.oracle.ByIndex(name, v)
		h.sameErr(fmt.Sprintf("encoded ByIndex(%s, %s)", name, v), err, wantErr)
		h.sameValues(fmt.Sprintf("encoded ByIndex(%s, %s)", name, v), objs, wantObjs)
	}
	for _, p := range probes {
		objs, err := h.enc.Index(name, p)
		wantObjs, wantErr := h.oracle.Index(name, p)
		h.sameErr(fmt.Sprintf("encoded Index(%s, %v)", name, p), err, wantErr)
		h.sameValues(fmt.Sprintf("encoded Index(%s, %v)", name, p), objs, wantObjs)
	}
}

// sameValues fails unless got holds the plain forms of want's objects, in
// any order, and both are nil or both not.
func (h *harness) sameValues(what string, got, want []any) {
	h.t.Helper()
	if (got == nil) != (want == nil) || len(got) != len(want) {
		h.t.Fatalf("%s = %v, client-go %v", what, got, want)
	}
	byKey := map[string]any{}
	for _, o := range want {
		k, _ := toolscache.DeletionHandlingMetaNamespaceKeyFunc(o)
		byKey[k] = o
	}
	for _, o := range got {
		k, _ := toolscache.DeletionHandlingMetaNamespaceKeyFunc(o)
		w, ok := byKey[k]
		if !ok {
			h.t.Fatalf("%s has %s, client-go's does not", what, k)
		}
		h.sameValue(what, o, w)
	}
}
