package codec

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leaninformer/leaninformer/internal/testobjects"
)

// TestCompactFieldsServerObjects encodes the objects an API server returned
// (internal/testobjects' fixtures, managedFields and all) twice each: every
// decode has the exact FieldsV1 bytes and equals the object's protobuf
// form, the caller's object is not changed, and once the dictionary has
// the kind's keys the encoding is smaller than plain protobuf's.
func TestCompactFieldsServerObjects(t *testing.T) {
	forEachCodec(t, func(t *testing.T, c *Codec) {
		for _, kind := range testobjects.Kinds {
			objs := testobjects.ServerObjects(t, kind)
			var plainSize, compactSize int
			for round := range 2 {
				for i, o := range objs {
					before := o.DeepCopyObject()
					data, err := c.Encode(o)
					if err != nil {
						t.Fatalf("%s %d: %v", kind, i, err)
					}
					if !reflect.DeepEqual(o, before) {
						t.Fatalf("%s %d: Encode changed the caller's object", kind, i)
					}
					got := roundTrip(t, c, fmt.Sprint(kind, i), o)
					if want := protobufForm(o); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s %d: the round trip changed the object:\n got %#v\nwant %#v", kind, i, got, want)
					}
					requireSameFields(t, fmt.Sprint(kind, i), o, got)
					if round == 1 {
						plain, err := o.(interface{ Marshal() ([]byte, error) }).Marshal()
						if err != nil {
							t.Fatal(err)
						}
						plainSize += len(plain)
						compactSize += len(data)
					}
				}
			}
			t.Logf("%s: %d bytes per object, %d as plain protobuf (%.2f)", kind, compactSize/len(objs), plainSize/len(objs), float64(compactSize)/float64(plainSize))
			if compactSize >= plainSize {
				t.Errorf("%s: %d bytes encoded, plain protobuf %d: compacting managedFields saved nothing", kind, compactSize, plainSize)
			}
		}
	})
}

// requireSameFields checks that got's managedFields have want's FieldsV1
// bytes exactly.
func requireSameFields(t *testing.T, name string, want, got any) {
	t.Helper()
	w, g := want.(metav1.Object).GetManagedFields(), got.(metav1.Object).GetManagedFields()
	if len(w) != len(g) {
		t.Fatalf("%s: %d managedFields entries, want %d", name, len(g), len(w))
	}
	for i := range w {
		if (w[i].FieldsV1 == nil) != (g[i].FieldsV1 == nil) {
			t.Fatalf("%s: managedFields[%d].FieldsV1 is %v, want %v", name, i, g[i].FieldsV1, w[i].FieldsV1)
		}
		if w[i].FieldsV1 != nil && !bytes.Equal(w[i].FieldsV1.GetRawBytes(), g[i].FieldsV1.GetRawBytes()) {
			t.Fatalf("%s: managedFields[%d].FieldsV1 is\n%q\nwant\n%q", name, i, g[i].FieldsV1.GetRawBytes(), w[i].FieldsV1.GetRawBytes())
		}
	}
}

// withFields returns a ConfigMap whose managedFields hold raws.
func withFields(name string, raws ...[]byte) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	for i, raw := range raws {
		cm.ManagedFields = append(cm.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: fmt.Sprint("m", i), Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{},
		})
		cm.ManagedFields[i].FieldsV1.SetRawBytes(raw)
	}
	return cm
}

// fieldsRoundTrip encodes an object whose FieldsV1 is raw and checks that
// the decode has raw's exact bytes.
func fieldsRoundTrip(t *testing.T, c *Codec, raw []byte) {
	t.Helper()
	obj := withFields("x", raw)
	data, err := c.Encode(obj)
	if err != nil {
		t.Fatalf("Encode(%q): %v", raw, err)
	}
	got, err := c.Decode(data)
	if err != nil {
		t.Fatalf("Decode of FieldsV1 %q: %v", raw, err)
	}
	if g := got.(*corev1.ConfigMap).ManagedFields[0].FieldsV1.GetRawBytes(); !bytes.Equal(g, raw) {
		t.Fatalf("FieldsV1 %q decoded as %q", raw, g)
	}
	if g := obj.ManagedFields[0].FieldsV1.GetRawBytes(); !bytes.Equal(g, raw) {
		t.Fatalf("Encode changed the caller's FieldsV1 %q to %q", raw, g)
	}
}

// fieldsSeeds are FieldsV1 raws in and out of the API server's form.
func fieldsSeeds(tb testing.TB) [][]byte {
	seeds := [][]byte{
		nil, {}, {0}, {0, 1}, {0, 2, 'x'}, []byte("{}"), []byte(`{"f:a":{}}`),
		[]byte(`{"f:a":{".":{},"f:b":{}},"k:{\"name\":\"app\"}":{}}`),
		[]byte(`{ "f:a":{}}`), []byte(`{"f:a":{},}`), []byte(`{"f:a":{}}x`), []byte(`{"f:a":1}`),
		[]byte(`{"f:a":{},"f:a":{}}`), []byte(`{"f:\"a\\":{}}`), []byte(`{"f:a\`), []byte(`{"f:a":{"f:b":{}}`),
		[]byte(`["f:a"]`), []byte(`null`), []byte("\xff\xfe{}"), []byte(`{"":{}}`), []byte(`{"f:a":{}}{}`),
	}
	for _, kind := range testobjects.Kinds {
		for _, o := range testobjects.ServerObjects(tb, kind) {
			for _, e := range o.(metav1.Object).GetManagedFields() {
				seeds = append(seeds, e.FieldsV1.GetRawBytes())
			}
		}
	}
	return seeds
}

// TestCompactFieldsExact round-trips FieldsV1 raws the compact form cannot
// hold (whitespace, other values, trailing bytes, garbage) and raws it
// can, before and after the dictionary has their keys.
func TestCompactFieldsExact(t *testing.T) {
	c := New()
	raw := []byte(`{"f:a":{".":{},"f:b":{}}}`)
	fieldsRoundTrip(t, c, raw)
	if n := len(c.fieldKeys.snapshot()); n != 0 {
		t.Fatalf("after one object the dictionary has %d keys, want none: keys enter when seen twice", n)
	}
	fieldsRoundTrip(t, c, raw)
	if n := len(c.fieldKeys.snapshot()); n != 3 {
		t.Fatalf("after the same object again the dictionary has %d keys, want its 3", n)
	}
	for range 2 {
		for _, raw := range fieldsSeeds(t) {
			fieldsRoundTrip(t, c, raw)
		}
	}
	numbered := map[string]bool{}
	for _, k := range c.fieldKeys.snapshot() {
		if numbered[k] {
			t.Fatalf("key %q numbered twice", k)
		}
		numbered[k] = true
	}
	// Keys that two entries of one object share are seen once.
	c = New()
	must(c.Encode(withFields("x", raw, raw, raw)))
	if n := len(c.fieldKeys.snapshot()); n != 0 {
		t.Fatalf("after one object with three entries the dictionary has %d keys, want none", n)
	}
}

// FuzzFieldsV1 encodes arbitrary bytes as a FieldsV1: the decode has
// exactly those bytes. It also decodes arbitrary bytes as a compact form,
// which must fail cleanly or give JSON.
func FuzzFieldsV1(f *testing.F) {
	for _, raw := range fieldsSeeds(f) {
		f.Add(raw)
	}
	c := New()
	for range 2 { // the fixtures' keys in the dictionary
		for _, raw := range fieldsSeeds(f) {
			if _, err := c.Encode(withFields("seed", raw)); err != nil {
				f.Fatal(err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fieldsRoundTrip(t, c, raw)
		if out, err := expandFields(nil, raw, c.fieldKeys.snapshot()); err == nil && len(raw) > 1 && raw[0] == compactMark && raw[1] == compactTree {
			if len(out) < 2 || out[0] != '{' || out[len(out)-1] != '}' {
				t.Fatalf("expanding %q gave %q, not an object", raw, out)
			}
		}
	})
}

// TestFieldKeysBounded encodes objects whose keys are all unique to them,
// each twice so that every key qualifies: the dictionary stops at
// MaxFieldKeys, the keys seen once stay under maxCandidates, and every
// encoding, older and newer than the bound, still decodes exactly.
func TestFieldKeysBounded(t *testing.T) {
	c := New()
	type encoding struct {
		raw  []byte
		data []byte
	}
	var kept []encoding
	const perObject = 4
	objects := 2 * MaxFieldKeys / perObject
	for i := range objects {
		raw := fmt.Appendf(nil, `{"f:spec":{".":{},"k:{\"ip\":\"10.%d.0.1\"}":{},"k:{\"ip\":\"10.%d.0.2\"}":{},"k:{\"ip\":\"10.%d.0.3\"}":{}}}`, i, i, i)
		for range 2 {
			data, err := c.Encode(withFields("x", raw))
			if err != nil {
				t.Fatal(err)
			}
			kept = append(kept, encoding{raw, data})
		}
		if n := len(c.fieldKeys.snapshot()); n > MaxFieldKeys {
			t.Fatalf("object %d: the dictionary has %d keys, more than MaxFieldKeys %d", i, n, MaxFieldKeys)
		}
		c.fieldKeys.mu.Lock()
		candidates := len(c.fieldKeys.candidates)
		c.fieldKeys.mu.Unlock()
		if candidates > maxCandidates {
			t.Fatalf("object %d: %d candidate keys, more than %d", i, candidates, maxCandidates)
		}
	}
	if n := len(c.fieldKeys.snapshot()); n != MaxFieldKeys {
		t.Fatalf("after %d objects of %d unique keys the dictionary has %d keys, want it full at %d", objects, perObject, n, MaxFieldKeys)
	}
	long := fmt.Appendf(nil, `{"f:%s":{}}`, bytes.Repeat([]byte("x"), maxFieldKeyLen))
	for range 3 {
		kept = append(kept, encoding{long, must(c.Encode(withFields("x", long)))})
	}
	for i, e := range kept {
		got, err := c.Decode(e.data)
		if err != nil {
			t.Fatalf("encoding %d: %v", i, err)
		}
		if g := got.(*corev1.ConfigMap).ManagedFields[0].FieldsV1.GetRawBytes(); !bytes.Equal(g, e.raw) {
			t.Fatalf("encoding %d: FieldsV1 %q, want %q", i, g, e.raw)
		}
	}
	for _, k := range c.fieldKeys.snapshot() {
		if len(k) > len(`"":{`)+maxFieldKeyLen {
			t.Fatalf("the dictionary admitted %s, a key longer than %d bytes", k, maxFieldKeyLen)
		}
	}
	// A full dictionary still compacts with the keys it has.
	fieldsRoundTrip(t, c, []byte(`{"f:spec":{".":{}}}`))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestCompactFieldsConcurrently encodes and decodes Pods from several
// goroutines while the dictionary grows (run with -race).
func TestCompactFieldsConcurrently(t *testing.T) {
	c := New()
	objs := testobjects.ServerObjects(t, "pods")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				o := objs[(w+i)%len(objs)]
				data, err := c.Encode(o)
				if err != nil {
					errs <- err
					return
				}
				got, err := c.Decode(data)
				if err != nil {
					errs <- err
					return
				}
				if !reflect.DeepEqual(got, protobufForm(o)) {
					errs <- fmt.Errorf("%s: the round trip changed the object", o.(metav1.Object).GetName())
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestDecodeRejectsCorruptFields checks that a damaged compact FieldsV1 is
// a decoding error naming the entry, not a wrong object.
func TestDecodeRejectsCorruptFields(t *testing.T) {
	c := New()
	raw := []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`)
	for range 2 {
		must(c.Encode(withFields("x", raw)))
	}
	keys := c.fieldKeys.snapshot()
	c.fieldKeys.mu.Lock()
	compact, ok := c.fieldKeys.compactFields(raw, new([]inlinedKey))
	c.fieldKeys.mu.Unlock()
	if !ok {
		t.Fatal("not compacted")
	}
	if out, err := expandFields(nil, compact, keys); err != nil || !bytes.Equal(out, raw) {
		t.Fatalf("expandFields = %q, %v", out, err)
	}
	for _, bad := range [][]byte{
		compact[:len(compact)-1],                       // the outermost object not ended
		append(compact[:len(compact):len(compact)], 0), // trailing bytes
		{0, 1},             // no length
		{0, 7, 2, 0},       // unknown form
		{0, 1, 9, 0},       // shorter than its length
		{0, 1, 2, 0x7d, 0}, // a key number beyond the dictionary
		{0, 1, 20, 1 + (30<<memberRefShift | memberInline), 'a', 0}, // an inline key past the end
	} {
		if out, err := expandFields(nil, bad, keys); err == nil {
			t.Errorf("expandFields(%v) = %q, want an error", bad, out)
		}
	}
	// The same through Decode, as if the store's bytes were damaged: the
	// kind's number (0, the only kind) and a ConfigMap holding a bad form.
	body, err := withFields("x", compact[:len(compact)-1]).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(append([]byte{0}, body...)); err == nil || !strings.Contains(err.Error(), `managedFields[0] (manager "m0")`) {
		t.Fatalf("Decode of a damaged FieldsV1: %v, want an error naming the entry", err)
	}
}

// TestCompactFieldsMemo checks the memo of compact forms: a FieldsV1 seen
// again once its keys are numbered is served from it, with the bytes a
// fresh compaction gives; a form with keys written inline is not kept
// (those keys may be numbered later); the memo stays within its bound
// however many distinct field sets pass; and what it serves decodes back
// exactly.
func TestCompactFieldsMemo(t *testing.T) {
	c := New()
	d := &c.fieldKeys
	memoLen := func() (int, int) {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.memo), d.memoBytes
	}
	raw := []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:data":{}}`)
	fieldsRoundTrip(t, c, raw)
	if n, _ := memoLen(); n != 0 {
		t.Fatalf("after the first object the memo has %d forms, want none: its keys were inline", n)
	}
	fieldsRoundTrip(t, c, raw) // its keys are numbered after this one
	fieldsRoundTrip(t, c, raw)
	if n, _ := memoLen(); n != 1 {
		t.Fatalf("after the same field set three times the memo has %d forms, want 1", n)
	}
	d.mu.Lock()
	memoised, ok := d.remembered(raw)
	fresh, inlined, freshOK := d.compactTree(raw)
	d.mu.Unlock()
	if !ok || !freshOK || len(inlined) != 0 || !bytes.Equal(memoised, fresh) {
		t.Fatalf("memoised form %v (found %v), fresh compaction %v (ok %v, inline keys %v): want equal", memoised, ok, fresh, freshOK, inlined)
	}

	// Distinct field sets of numbered keys: subsets of 12 numbered keys.
	var keys []string
	for i := range 12 {
		keys = append(keys, fmt.Sprintf(`"f:key-%02d-%s":{}`, i, strings.Repeat("x", 40)))
	}
	all := []byte("{" + strings.Join(keys, ",") + "}")
	fieldsRoundTrip(t, c, all)
	fieldsRoundTrip(t, c, all)
	peak := 0
	for subset := 1; subset < 1<<len(keys); subset++ {
		var members []string
		for i, k := range keys {
			if subset&(1<<i) != 0 {
				members = append(members, k)
			}
		}
		fieldsRoundTrip(t, c, []byte("{"+strings.Join(members, ",")+"}"))
		_, bytes := memoLen()
		if bytes > maxMemoBytes {
			t.Fatalf("after %d field sets the memo holds %d bytes, over its bound %d", subset, bytes, maxMemoBytes)
		}
		peak = max(peak, bytes)
	}
	if peak < maxMemoBytes/2 {
		t.Fatalf("the memo peaked at %d bytes over 4,095 distinct field sets, want it filled towards %d", peak, maxMemoBytes)
	}
	// After the memo was emptied and refilled, every form still decodes.
	fieldsRoundTrip(t, c, raw)
	fieldsRoundTrip(t, c, all)
}
