package cache

import (
	"fmt"
	"math/rand"
	"reflect"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	klabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/codec"
)

// randomLabelled returns a ConfigMap, an unstructured object (whose labels
// the codec reads by decoding) or an object the codec refuses (kept
// decoded), with random labels from a small alphabet so that selectors
// match some.
func randomLabelled(r *rand.Rand, i int) runtime.Object {
	om := metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", r.Intn(4)), Name: fmt.Sprintf("o-%d", i),
		UID: "u", ResourceVersion: fmt.Sprint(r.Intn(1000) + 1)}
	if r.Intn(6) > 0 {
		om.Labels = map[string]string{}
		for _, k := range []string{"app", "tier", "env"} {
			if r.Intn(3) > 0 {
				om.Labels[k] = []string{"a", "b", "c", ""}[r.Intn(4)]
			}
		}
	}
	switch r.Intn(5) {
	case 0:
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
		u.SetNamespace(om.Namespace)
		u.SetName(om.Name)
		u.SetResourceVersion(om.ResourceVersion)
		if om.Labels != nil {
			u.SetLabels(om.Labels)
		}
		return u
	case 1:
		return &unencodable{ObjectMeta: om, Spec: map[string]string{"k": "v"}}
	}
	return &corev1.ConfigMap{ObjectMeta: om, Data: map[string]string{"k": fmt.Sprint(i)}}
}

// labelQueries is the table of selectors the tests list with.
func labelQueries(t *testing.T) []klabels.Selector {
	t.Helper()
	var sels []klabels.Selector
	for _, s := range []string{"", "app=a", "app==b,tier=c", "app!=a", "app in (a,b)", "tier notin (a,)",
		"env", "!env", "app,!tier", "app=zzz", "app=", "env in (c),app"} {
		sel, err := klabels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		sels = append(sels, sel)
	}
	return append(sels, nil, klabels.Nothing())
}

// TestListByLabelsAgainstListAndFilter compares ListByLabels with List (or
// ByIndex) filtered by the selector, on random plain, encoded (with and
// without compression), mixed stores and stores whose codec is no
// LabelReader, after random adds, updates and deletes.
func TestListByLabelsAgainstListAndFilter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		codec Codec
	}{
		{"plain", nil},
		{"encoded", codec.New()},
		{"compressed", codec.New(codec.WithCompression())},
		{"codec without LabelReader", &countingCodec{Codec: codec.New()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []Option
			if tc.codec != nil {
				opts = append(opts, WithCodec(tc.codec))
			}
			s := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), opts...)
			r := rand.New(rand.NewSource(7))
			for round := range 3 {
				for range 300 {
					o := randomLabelled(r, r.Intn(600))
					var err error
					if r.Intn(8) == 0 {
						err = s.Delete(o)
					} else {
						err = s.Add(o)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				for _, ns := range []string{"", "ns-1", "absent"} {
					all := s.List()
					if ns != "" {
						var err error
						if all, err = s.ByIndex(toolscache.NamespaceIndex, ns); err != nil {
							t.Fatal(err)
						}
					}
					for _, sel := range labelQueries(t) {
						for _, limit := range []int{0, 1, 7} {
							checkListByLabels(t, fmt.Sprintf("round %d, %v in %q, limit %d", round, sel, ns, limit), s, all, sel, ns, limit)
						}
					}
				}
			}
			if tc.codec != nil && (s.CodecStats().Encoded == 0 || s.CodecStats().Unencoded == 0) {
				t.Fatalf("not a mixed store: %+v", s.CodecStats())
			}
		})
	}
}

// checkListByLabels checks ListByLabels against all, what List (ns "") or
// ByIndex of ns returned, filtered by sel.
func checkListByLabels(t *testing.T, what string, s *Indexer, all []any, sel klabels.Selector, ns string, limit int) {
	t.Helper()
	q := LabelQuery{Selector: sel, Limit: limit}
	if ns != "" {
		q.IndexName, q.IndexedValue = toolscache.NamespaceIndex, ns
	}
	want := map[string]any{}
	for _, o := range all {
		m, _ := meta.Accessor(o)
		if sel == nil || sel.Matches(klabels.Set(m.GetLabels())) {
			want[m.GetNamespace()+"/"+m.GetName()] = o
		}
	}
	got, err := s.ListByLabels(q)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	wantLen := len(want)
	if limit > 0 && wantLen > limit {
		wantLen = limit
	}
	if len(got) != wantLen {
		t.Fatalf("%s: %d objects, want %d of the %d matches", what, len(got), wantLen, len(want))
	}
	seen := map[string]bool{}
	for _, o := range got {
		m, _ := meta.Accessor(o)
		key := m.GetNamespace() + "/" + m.GetName()
		if seen[key] || !reflect.DeepEqual(o, want[key]) {
			t.Fatalf("%s: %s returned twice, or not as List returns it:\n got %#v\nwant %#v", what, key, o, want[key])
		}
		seen[key] = true
	}
}

// labelCountingCodec counts the decodes of a codec that reads labels from
// the bytes.
type labelCountingCodec struct {
	*codec.Codec
	decodes atomic.Int64
}

func (c *labelCountingCodec) Decode(data []byte) (any, error) {
	c.decodes.Add(1)
	return c.Codec.Decode(data)
}

// TestListByLabelsDecodesOnlyMatches checks that, with a LabelReader, a
// selective List decodes only what it returns, and a limit stops it.
func TestListByLabelsDecodesOnlyMatches(t *testing.T) {
	cc := &labelCountingCodec{Codec: codec.New()}
	s := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), WithCodec(cc))
	for i := range 1000 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprint(i),
			Labels: map[string]string{"one": fmt.Sprint(i), "ten": fmt.Sprint(i % 100)}}}
		if err := s.Add(cm); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		q    LabelQuery
		want int
	}{
		{LabelQuery{Selector: klabels.SelectorFromSet(klabels.Set{"one": "17"})}, 1},
		{LabelQuery{Selector: klabels.SelectorFromSet(klabels.Set{"ten": "17"})}, 10},
		{LabelQuery{Selector: klabels.SelectorFromSet(klabels.Set{"ten": "17"}), Limit: 3}, 3},
		{LabelQuery{Selector: klabels.SelectorFromSet(klabels.Set{"ten": "17"}), IndexName: toolscache.NamespaceIndex, IndexedValue: "ns-7"}, 10},
		{LabelQuery{Selector: klabels.SelectorFromSet(klabels.Set{"ten": "17"}), IndexName: toolscache.NamespaceIndex, IndexedValue: "ns-8"}, 0},
	} {
		before := cc.decodes.Load()
		got, err := s.ListByLabels(tc.q)
		if err != nil || len(got) != tc.want {
			t.Fatalf("%+v: %d objects (%v), want %d", tc.q, len(got), err, tc.want)
		}
		if d := cc.decodes.Load() - before; d != int64(tc.want) {
			t.Fatalf("%+v: %d decodes for %d objects returned", tc.q, d, tc.want)
		}
	}
	if _, err := s.ListByLabels(LabelQuery{IndexName: "absent"}); err == nil || err.Error() != noIndexError("absent").Error() {
		t.Fatalf("an unknown index: %v, want ByIndex's error", err)
	}
}

// TestListByLabelsLeavesOutUndecodable checks that an object whose labels
// cannot be read, or which cannot be decoded, is left out and counted.
func TestListByLabelsLeavesOutUndecodable(t *testing.T) {
	for _, c := range []Codec{brokenCodec{codec.New()}, brokenLabelCodec{codec.New()}} {
		s := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), WithCodec(c))
		if err := s.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "c"}}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ListByLabels(LabelQuery{}); err != nil || len(got) != 0 {
			t.Fatalf("%T: ListByLabels = %v, %v; want the object left out", c, got, err)
		}
		if s.CodecStats().DecodeFailures != 1 || len(s.ListKeys()) != 1 {
			t.Fatalf("%T: DecodeFailures = %d with %d keys, want 1 and the object kept", c, s.CodecStats().DecodeFailures, len(s.ListKeys()))
		}
	}
}

// brokenLabelCodec reads no labels.
type brokenLabelCodec struct{ *codec.Codec }

func (brokenLabelCodec) MatchLabels(klabels.Selector) func([]byte) (bool, any, error) {
	return func([]byte) (bool, any, error) { return false, nil, fmt.Errorf("broken") }
}
