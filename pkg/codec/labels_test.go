package codec

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leaninformer/leaninformer/internal/testobjects"
)

// walkLabels yields the label entries of ObjectMeta bytes that findLabels
// checked, as Lookup reads them.
func walkLabels(b []byte) func(yield func(key, value string) bool) {
	return func(yield func(key, value string) bool) {
		for len(b) > 0 {
			field, wireType, value, rest, err := nextField(b)
			if err != nil {
				return // findLabels checked the bytes: not reached
			}
			b = rest
			if field != labelsField || wireType != wireBytes {
				continue
			}
			key, val, err := mapEntry(value)
			if err != nil {
				return
			}
			if !yield(key, val) {
				return
			}
		}
	}
}

// allLabels returns every label l holds, as decoding would give them.
func allLabels(l Labels) map[string]string {
	if l.entries == nil {
		return maps.Clone(l.set)
	}
	out := map[string]string{}
	for k, v := range walkLabels(l.entries) {
		out[k] = v
	}
	return out
}

// checkLabels checks that the labels read from data are those of the
// object it decodes to, through Has, Get and Lookup as well, and reports
// whether they were read from the bytes.
func checkLabels(t *testing.T, c *Codec, name string, data []byte) (fromBytes bool) {
	t.Helper()
	obj, err := c.Decode(data)
	if err != nil {
		t.Fatalf("%s: Decode: %v", name, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := m.GetLabels()
	l, err := c.Labels(data)
	if err != nil {
		t.Fatalf("%s: Labels: %v", name, err)
	}
	got := allLabels(l)
	if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
		t.Fatalf("%s: labels read from the bytes %v, decoded %v", name, got, want)
	}
	for k, v := range want {
		if gv, ok := l.Lookup(k); !ok || gv != v || !l.Has(k) || l.Get(k) != v {
			t.Fatalf("%s: label %q: Lookup %q %v, Get %q, Has %v; decoded %q", name, k, gv, ok, l.Get(k), l.Has(k), v)
		}
		if _, ok := want[k+"x"]; !ok && l.Has(k+"x") {
			t.Fatalf("%s: Has(%q) for a label the object does not have", name, k+"x")
		}
	}
	if _, ok := want["absent.example.com/label"]; !ok && (l.Has("absent.example.com/label") || l.Get("absent.example.com/label") != "") {
		t.Fatalf("%s: an absent label is present", name)
	}
	return l.entries != nil
}

// TestLabelsAPIFixtures reads the labels of every k8s.io/api fixture from
// its encoding: typed and PartialObjectMetadata from the protobuf bytes,
// unstructured by decoding.
func TestLabelsAPIFixtures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		decode    func([]byte) (runtime.Object, error)
		fromBytes bool
	}{
		{"typed", testobjects.DecodeTyped, true},
		{"PartialObjectMetadata", testobjects.DecodePartial, true},
		{"unstructured", testobjects.DecodeUnstructured, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			n, labelled := 0, 0
			for _, f := range testobjects.APIFixtures(t) {
				obj, err := tc.decode(f.JSON)
				if err != nil {
					continue // a kind client-go's scheme does not know
				}
				m, err := meta.Accessor(obj)
				if err != nil {
					continue // a fixture without ObjectMeta (a list, an options type)
				}
				if len(m.GetLabels()) > 0 {
					labelled++
				}
				data, err := c.Encode(obj)
				if err != nil {
					t.Fatalf("%s: Encode: %v", f.Name, err)
				}
				if got := checkLabels(t, c, f.Name, data); got != tc.fromBytes {
					t.Errorf("%s: labels read from the bytes: %v, want %v", f.Name, got, tc.fromBytes)
				}
				n++
			}
			if n < 150 || labelled < 150 {
				t.Fatalf("read the labels of %d fixtures (%d with labels), want at least 150", n, labelled)
			}
		})
	}
}

// randomLabels returns a random label map: nil, empty, or up to 12 labels
// whose keys and values may be empty, long, or non-ASCII.
func randomLabels(r *rand.Rand) map[string]string {
	switch r.Intn(8) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	alphabet := []string{"", "a", "b", "app", "example.com/", "é", "-", ".", "0", "x"}
	word := func() string {
		s := ""
		for range r.Intn(5) {
			s += alphabet[r.Intn(len(alphabet))]
		}
		if r.Intn(20) == 0 {
			s += string(make([]byte, 200)) // long, and NUL bytes
		}
		return s
	}
	m := map[string]string{}
	for range r.Intn(13) {
		m[word()] = word()
	}
	return m
}

// TestLabelsRandom reads random label maps of ConfigMaps,
// PartialObjectMetadata and unstructured objects, with and without compression (enough objects for
// the codec to train its dictionary and compress), and checks that
// selectors match the labels read as they match the decoded ones.
func TestLabelsRandom(t *testing.T) {
	forEachCodec(t, func(t *testing.T, c *Codec) {
		r := rand.New(rand.NewSource(1))
		compressed := 0
		selectors := []labels.Selector{
			labels.Everything(),
			labels.SelectorFromSet(labels.Set{"a": "b"}),
			mustParse(t, "app"),
			mustParse(t, "!app"),
			mustParse(t, "a in (b, app), x notin (a)"),
			mustParse(t, "example.com/a!=b"),
		}
		// One matcher per selector for every object: it sees the kinds in turn.
		matchers := make([]func([]byte) (bool, any, error), len(selectors))
		for i, sel := range selectors {
			matchers[i] = c.MatchLabels(sel)
		}
		for i := range 6 * TrainingSamples {
			var obj runtime.Object
			om := metav1.ObjectMeta{Name: fmt.Sprintf("o-%d", i), Namespace: "ns", Labels: randomLabels(r),
				Annotations: map[string]string{"note": "after the labels"}, Finalizers: []string{"f"}}
			switch i % 3 {
			case 0:
				obj = &corev1.ConfigMap{ObjectMeta: om, Data: map[string]string{"k": fmt.Sprint(i)}}
			case 1:
				obj = &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: om}
			case 2:
				u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
				u.SetName(om.Name)
				if om.Labels != nil {
					u.SetLabels(om.Labels)
				}
				obj = u
			}
			_, isUnstructured := obj.(*unstructured.Unstructured)
			data, err := c.Encode(obj)
			if err != nil {
				t.Fatal(err)
			}
			if isCompressed(data) {
				compressed++
			}
			if got := checkLabels(t, c, om.Name, data); got == isUnstructured {
				t.Fatalf("%s (%T): labels read from the bytes: %v", om.Name, obj, got)
			}
			for j, sel := range selectors {
				got, decoded, err := matchers[j](data)
				if err != nil || (decoded != nil) != (got && (isUnstructured || isCompressed(data))) {
					t.Fatalf("%s: MatchLabels(%s): decoded %v, %v", om.Name, sel, decoded, err)
				}
				if decoded != nil {
					if want, _ := c.Decode(data); !reflect.DeepEqual(decoded, want) {
						t.Fatalf("%s: MatchLabels(%s) handed out %#v, Decode gives %#v", om.Name, sel, decoded, want)
					}
				}
				if want := sel.Matches(labels.Set(om.Labels)); got != want {
					t.Fatalf("%s: %s matches %v: %v, want %v", om.Name, sel, om.Labels, got, want)
				}
			}
		}
		if c.kinds.compress && compressed < TrainingSamples/2 {
			t.Fatalf("%d encodings compressed, want the objects after the first %d of each kind", compressed, TrainingSamples)
		}
	})
}

func isCompressed(data []byte) bool {
	v, _ := binary.Uvarint(data)
	return v&1 == 1
}

func mustParse(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// appendField appends a length-delimited protobuf field.
func appendField(b []byte, field int, value []byte) []byte {
	b = binary.AppendUvarint(b, uint64(field)<<3|wireBytes)
	b = binary.AppendUvarint(b, uint64(len(value)))
	return append(b, value...)
}

func labelEntry(key, value string) []byte {
	return appendField(appendField(nil, entryKeyField, []byte(key)), entryValueField, []byte(value))
}

// TestLabelsUnusualEncodings feeds encodings Encode does not write but the
// generated decoder accepts (or refuses), and checks that the labels read
// are the decoder's: read from the bytes where the walk knows the decoder's
// answer, else by decoding (or the decoder's error).
func TestLabelsUnusualEncodings(t *testing.T) {
	c := New()
	data, err := c.Encode(&corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	prefix := data[:1] // the kind number of an empty ConfigMap
	name := appendField(nil, 1, []byte("n"))
	for _, tc := range []struct {
		name      string
		payload   []byte
		fromBytes bool
		wantErr   bool
	}{
		{"a repeated key: the last wins", appendField(nil, objectMetaField, append(append(name,
			appendField(nil, labelsField, labelEntry("a", "1"))...), appendField(nil, labelsField, labelEntry("a", "2"))...)), true, false},
		{"an entry without a key or value", appendField(nil, objectMetaField, appendField(name, labelsField, nil)), true, false},
		{"an entry with an unknown field", appendField(nil, objectMetaField, appendField(name, labelsField,
			appendField(labelEntry("a", "1"), 7, []byte("x")))), true, false},
		{"labels split by another field", appendField(nil, objectMetaField, appendField(appendField(
			appendField(nil, labelsField, labelEntry("a", "1")), 12, labelEntry("note", "x")), labelsField, labelEntry("b", "2"))), true, false},
		{"ObjectMeta twice: merged by the decoder", append(appendField(nil, objectMetaField, appendField(name, labelsField, labelEntry("a", "1"))),
			appendField(nil, objectMetaField, appendField(nil, labelsField, labelEntry("b", "2")))...), false, false},
		{"labels with a varint wire type", appendField(nil, objectMetaField, append(name, byte(labelsField<<3|wireVarint), 1)), false, true},
		{"a truncated ObjectMeta", appendField(nil, objectMetaField, name)[:3], false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := append(append([]byte{}, prefix...), tc.payload...)
			if tc.wantErr {
				if _, err := c.Labels(data); err == nil {
					t.Fatal("Labels of an encoding the decoder refuses: no error")
				}
				if _, _, err := c.MatchLabels(labels.Everything())(data); err == nil {
					t.Fatal("MatchLabels of an encoding the decoder refuses: no error")
				}
				return
			}
			if got := checkLabels(t, c, tc.name, data); got != tc.fromBytes {
				t.Fatalf("labels read from the bytes: %v, want %v", got, tc.fromBytes)
			}
		})
	}
}

// TestLabelsFallBackToDecoding covers what the walk does not read:
// unstructured objects are decoded (and MatchLabels hands out the object),
// a type without ObjectMeta is an error, and so are bytes of another codec.
func TestLabelsFallBackToDecoding(t *testing.T) {
	c := New()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "u", "labels": map[string]any{"app": "web"}}}}
	data, err := c.Encode(u)
	if err != nil {
		t.Fatal(err)
	}
	matches, decoded, err := c.MatchLabels(labels.SelectorFromSet(labels.Set{"app": "web"}))(data)
	if err != nil || !matches || !reflect.DeepEqual(decoded, u) {
		t.Fatalf("MatchLabels of an unstructured object: %v, %v, %v", matches, decoded, err)
	}
	status, err := c.Encode(&metav1.Status{Message: "no ObjectMeta"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Labels(status); err == nil {
		t.Fatal("Labels of a type without ObjectMeta: no error")
	}
	if _, err := New().Labels(data); err == nil {
		t.Fatal("Labels of another codec's encoding: no error")
	}
	if _, err := c.Labels(nil); err == nil {
		t.Fatal("Labels of no bytes: no error")
	}
}

// TestMatchLabelsAllocations pins what the README promises of label reads
// that do not match (a match is decoded, to be handed out): nothing
// allocated for a plain protobuf encoding, whatever the selector's
// operators, and one buffer (the decompressed bytes) for a compressed one,
// on hack/bench's objects of every kind.
func TestMatchLabelsAllocations(t *testing.T) {
	var selectors []labels.Selector
	for _, s := range []string{"app=absent", "app!=x,absent", "app in (a,b)", "tier notin (x),absent", "absent"} {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		selectors = append(selectors, sel)
	}
	for _, kind := range testobjects.Kinds {
		pop := testobjects.NewPopulation(t, kind)
		for _, c := range []struct {
			name  string
			codec *Codec
			want  float64
		}{{"protobuf", New(), 0}, {"protobuf-s2", New(WithCompression()), 1}} {
			// The first TrainingSamples objects train the compressed
			// codec's dictionary; the ones after it are read.
			data := make([][]byte, 0, 16)
			for i := range TrainingSamples + 16 {
				b, err := c.codec.Encode(pop.Object(i))
				if err != nil {
					t.Fatal(err)
				}
				if i >= TrainingSamples {
					data = append(data, b)
				}
			}
			for _, sel := range selectors {
				match := c.codec.MatchLabels(sel)
				i := 0
				got := testing.AllocsPerRun(200, func() {
					if _, decoded, err := match(data[i%len(data)]); decoded != nil || err != nil {
						t.Fatalf("%s, %s, %q: decoded %T, error %v; want the labels read from the encoding", kind, c.name, sel, decoded, err)
					}
					i++
				})
				if got > c.want {
					t.Errorf("%s, %s, %q: %.1f allocations a read, want at most %.0f", kind, c.name, sel, got, c.want)
				}
			}
		}
	}
}
