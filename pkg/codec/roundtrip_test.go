package codec

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leaninformer/leaninformer/internal/testobjects"
)

// roundTrip encodes obj, decodes it twice and checks that both decodes
// are equal: decoding is deterministic.
func roundTrip(t *testing.T, c *Codec, name string, obj any) any {
	t.Helper()
	data, err := c.Encode(obj)
	if err != nil {
		t.Fatalf("%s: Encode: %v", name, err)
	}
	got, err := c.Decode(data)
	if err != nil {
		t.Fatalf("%s: Decode: %v", name, err)
	}
	again, err := c.Decode(data)
	if err != nil || !reflect.DeepEqual(got, again) {
		t.Fatalf("%s: a second decode of the same bytes differs (%v)", name, err)
	}
	if got == obj || (reflect.ValueOf(got).Kind() == reflect.Pointer && reflect.ValueOf(got).Pointer() == reflect.ValueOf(again).Pointer()) {
		t.Fatalf("%s: decodes are not fresh objects", name)
	}
	return got
}

// protobufForm is what decoding the protobuf of obj must give (see
// testobjects.ProtobufForm): empty slices and maps nil, times in whole
// seconds and the local time zone.
func protobufForm(obj runtime.Object) runtime.Object {
	want := obj.DeepCopyObject()
	testobjects.ProtobufForm(reflect.ValueOf(want))
	return want
}

// TestRoundTripAPIFixtures round-trips every fixture of k8s.io/api as a
// typed object, as PartialObjectMetadata and as an unstructured object,
// each with its TypeMeta and without (as list items have it).
func TestRoundTripAPIFixtures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		decode func([]byte) (runtime.Object, error)
		// want is what the round trip must give for obj.
		want func(runtime.Object) runtime.Object
	}{
		{"typed", testobjects.DecodeTyped, protobufForm},
		{"PartialObjectMetadata", testobjects.DecodePartial, protobufForm},
		{"unstructured", testobjects.DecodeUnstructured, func(o runtime.Object) runtime.Object { return o.DeepCopyObject() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			n, emptied := 0, 0
			for _, f := range testobjects.APIFixtures(t) {
				obj, err := tc.decode(f.JSON)
				if err != nil {
					continue // a kind client-go's scheme does not know
				}
				n++
				for _, typeMeta := range []bool{true, false} {
					o := obj.DeepCopyObject()
					if !typeMeta {
						if _, ok := o.(*unstructured.Unstructured); ok {
							continue // an unstructured object is nothing without its kind
						}
						o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
					}
					want := tc.want(o)
					got := roundTrip(t, c, f.Name, o)
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s (TypeMeta %v): the round trip changed the object:\n got %#v\nwant %#v", f.Name, typeMeta, got, want)
					}
					if !reflect.DeepEqual(want, o) {
						emptied++
					}
				}
			}
			if n < 150 {
				t.Fatalf("round-tripped %d fixtures, want at least 150", n)
			}
			t.Logf("%d fixtures; %d round trips changed a representation (see protobufForm)", n, emptied)
		})
	}
}

// TestRoundTripRandomTyped round-trips randomly filled RoleBindings,
// ConfigMaps, Secrets, PartialObjectMetadata, Leases, Pods and Events
// (testobjects.Random: apimachinery's fuzzer with its metadata functions,
// nil, empty and filled slices and maps, and pointer times set, every time
// with nanoseconds and in one of three zones).
func TestRoundTripRandomTyped(t *testing.T) {
	forEachCodec(t, testRoundTripRandomTyped)
}

// forEachCodec runs test with a plain and a compressing Codec.
func forEachCodec(t *testing.T, test func(*testing.T, *Codec)) {
	t.Run("plain", func(t *testing.T) { test(t, New()) })
	t.Run("compressed", func(t *testing.T) { test(t, New(WithCompression())) })
}

func testRoundTripRandomTyped(t *testing.T, c *Codec) {
	g := testobjects.NewRandom(1)
	emptied, pointerTimes := 0, 0
	for i := range 2800 {
		obj := g.Object(i)
		if m, _ := meta.Accessor(obj); m.GetDeletionTimestamp() != nil {
			pointerTimes++
		}
		want := protobufForm(obj)
		if !reflect.DeepEqual(want, obj) {
			emptied++
		}
		if got := roundTrip(t, c, fmt.Sprintf("%T %d", obj, i), obj); !reflect.DeepEqual(got, want) {
			t.Fatalf("%T %d: the round trip changed the object:\n got %#v\nwant %#v", obj, i, got, want)
		}
	}
	if emptied == 0 {
		t.Fatal("no random object had an empty slice or map: the nil/empty case went untested")
	}
	if pointerTimes == 0 {
		t.Fatal("no random object had a deletionTimestamp: pointer times went untested")
	}
}

// TestRoundTripRandomUnstructured round-trips random JSON-like content
// exactly: empty and nested maps and slices, int64s at their limits,
// float64s holding whole numbers, Unicode strings, nils.
func TestRoundTripRandomUnstructured(t *testing.T) {
	forEachCodec(t, testRoundTripRandomUnstructured)
}

func testRoundTripRandomUnstructured(t *testing.T, c *Codec) {
	r := rand.New(rand.NewSource(1))
	for i := range 2 * TrainingSamples {
		content := randomMap(r, 4)
		content["apiVersion"], content["kind"] = "example.com/v1", "Widget"
		content["metadata"] = map[string]any{"name": fmt.Sprint("w-", i), "namespace": "ns", "labels": map[string]any{}}
		obj := &unstructured.Unstructured{Object: content}
		want := obj.DeepCopy()
		if got := roundTrip(t, c, fmt.Sprint("object ", i), obj); !reflect.DeepEqual(got, want) {
			t.Fatalf("object %d: the round trip changed the object:\n got %#v\nwant %#v", i, got, want)
		}
	}
}

func randomValue(r *rand.Rand, depth int) any {
	switch k := r.Intn(10); {
	case k == 0 && depth > 0:
		return randomMap(r, depth-1)
	case k == 1 && depth > 0:
		s := make([]any, r.Intn(4))
		for i := range s {
			s[i] = randomValue(r, depth-1)
		}
		return s
	case k == 2:
		return []int64{0, 1, -1, math.MaxInt64, math.MinInt64, r.Int63()}[r.Intn(6)]
	case k == 3:
		return []float64{1, 0.5, -2, 1e300, 3.25, r.Float64()}[r.Intn(6)]
	case k == 4:
		return r.Intn(2) == 0
	case k == 5:
		return nil
	default:
		return []string{"", "plain", "ünïcødé ✓", "line\nbreak", strings.Repeat("x", 300)}[r.Intn(5)]
	}
}

func randomMap(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for i := range r.Intn(5) {
		m[fmt.Sprint("k", i)] = randomValue(r, depth)
	}
	return m
}

// TestEncodeRefusesWhatItCannotGiveBack checks that objects the codec
// cannot encode faithfully are refused with ErrUnsupported and a reason.
func TestEncodeRefusesWhatItCannotGiveBack(t *testing.T) {
	type custom struct{ metav1.TypeMeta }
	for _, tc := range []struct {
		name string
		obj  any
		want string
	}{
		{"a string", "not an object", "has no generated protobuf methods"},
		{"a type without protobuf", &custom{}, "has no generated protobuf methods"},
		{"a nil pointer", (*corev1.Pod)(nil), "not a non-nil pointer"},
		{"nil", nil, "has no generated protobuf methods"},
		{"unstructured without content", &unstructured.Unstructured{}, "without content"},
		{"a Go int", withField("replicas", 3), "object.replicas: int is not a JSON value"},
		{"NaN", withField("ratio", math.NaN()), "object.ratio: NaN is not a JSON number"},
		{"invalid UTF-8", withField("name", "\xff"), "object.name: string is not valid UTF-8"},
		{"a nested nil map", withField("spec", map[string]any{"list": []any{map[string]any(nil)}}), "object.spec.list[0]: nil map"},
		{"a []string", withField("args", []string{"a"}), "object.args: []string is not a JSON value"},
		{"a map that contains itself", withField("spec", selfMap()), "object.spec.self.self.self.self.self.self.self...(9984 more)....self.self.self.self.self.self.self.self: nested more than 10000"},
		{"a slice that contains itself", withField("list", selfSlice()), "object.list[0][0][0][0][0][0][0]...(9984 more)...[0][0][0][0][0][0][0][0]: nested more than 10000"},
		{"content nested deeper than decoding allows", withField("spec", nested(maxNesting)), "...(9984 more)....a.a.a.a.a.a.a.a: nested more than 10000"},
		{"a map larger than decoding allows", withField("spec", wideMap(maxMapPairs+1)), "object.spec: map of 2097153 entries, more than the 2097152"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New().Encode(tc.obj)
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Encode: %v, want ErrUnsupported saying %q", err, tc.want)
			}
		})
	}
}

// TestDeepestContentRoundTrips: content exactly as deep as decoding
// allows is kept encoded (the bound of Encode's check is decoding's, not
// tighter). A map of maxMapPairs entries round-trips too, and one more
// fails to decode, but that takes seconds, so it is left out.
func TestDeepestContentRoundTrips(t *testing.T) {
	for name, obj := range map[string]*unstructured.Unstructured{
		"deep": withField("spec", nested(maxNesting-1)),
	} {
		c := New()
		data, err := c.Encode(obj)
		if err != nil {
			t.Fatalf("%s: Encode: %v", name, err)
		}
		got, err := c.Decode(data)
		if err != nil {
			t.Fatalf("%s: Decode: %v", name, err)
		}
		if !reflect.DeepEqual(got.(*unstructured.Unstructured).Object, obj.Object) {
			t.Fatalf("%s: decoded content differs", name)
		}
	}
}

// selfMap returns a map holding itself under "self".
func selfMap() map[string]any {
	m := map[string]any{"a": int64(1)}
	m["self"] = m
	return m
}

// selfSlice returns a slice holding itself.
func selfSlice() []any {
	s := []any{nil}
	s[0] = s
	return s
}

// nested returns n maps, each the "a" of the one around it.
func nested(n int) map[string]any {
	m := map[string]any{"leaf": true}
	for range n - 1 {
		m = map[string]any{"a": m}
	}
	return m
}

func wideMap(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[strconv.Itoa(i)] = nil
	}
	return m
}

func withField(name string, v any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "X", name: v}}
}

// TestKindTableIsBounded checks that objects of more than MaxKinds
// distinct TypeMetas are refused rather than grow the table, and that the
// kinds numbered before still decode.
func TestKindTableIsBounded(t *testing.T) {
	c := New()
	first, err := c.Encode(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < MaxKinds; i++ {
		if _, err := c.Encode(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: fmt.Sprint("K", i)}}); err != nil {
			t.Fatalf("kind %d: %v", i, err)
		}
	}
	_, err = c.Encode(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "OneTooMany"}})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("kind %d: %v, want ErrUnsupported", MaxKinds+1, err)
	}
	got, err := c.Decode(first)
	if err != nil || got.(*corev1.ConfigMap).Kind != "ConfigMap" {
		t.Fatalf("Decode of the first kind = %v, %v", got, err)
	}
}

// TestDecodeRejectsForeignBytes checks the errors for bytes this codec did
// not produce.
func TestDecodeRejectsForeignBytes(t *testing.T) {
	c := New()
	for _, data := range [][]byte{nil, {0x80}, {5, 1, 2}} {
		if _, err := c.Decode(data); err == nil {
			t.Errorf("Decode(%v) succeeded", data)
		}
	}
	data, err := c.Encode(&corev1.ConfigMap{Data: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(append(data[:1:1], 0xff, 0xff)); err == nil {
		t.Error("Decode of truncated protobuf succeeded")
	}
}
