package codec

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/leaninformer/leaninformer/internal/cputime"
	"github.com/leaninformer/leaninformer/internal/testobjects"
)

// BenchmarkMatchLabels matches a selector that no object matches against
// hack/bench's objects, per object: read from the encoding (MatchLabels,
// plain and compressed), against decoding the object first (what a
// label-selector List of the encoded store did before) and against an
// object already decoded (what controller-runtime's reader does on
// client-go's store). Run with:
//
//	go test -run '^$' -bench MatchLabels -benchmem ./pkg/codec/
func BenchmarkMatchLabels(b *testing.B) {
	sel := labels.SelectorFromSet(labels.Set{"app": "absent", "tier": "x"})
	for _, kind := range testobjects.Kinds {
		objs := benchSet(b, kind, false)
		for _, c := range []struct {
			name  string
			codec *Codec
		}{{"enc=protobuf", New()}, {"enc=protobuf-s2", New(WithCompression())}} {
			data := make([][]byte, len(objs))
			for i, o := range objs {
				var err error
				if data[i], err = c.codec.Encode(o); err != nil {
					b.Fatal(err)
				}
			}
			data = data[TrainingSamples:]
			b.Run(fmt.Sprintf("kind=%s/%s/read=labels", kind, c.name), func(b *testing.B) {
				match := c.codec.MatchLabels(sel)
				start := cputime.Process()
				for i := 0; b.Loop(); i++ {
					if ok, _, err := match(data[i%len(data)]); ok || err != nil {
						b.Fatal(ok, err)
					}
				}
				cputime.Report(b, start, b.N, "op")
			})
			b.Run(fmt.Sprintf("kind=%s/%s/read=decode", kind, c.name), func(b *testing.B) {
				start := cputime.Process()
				for i := 0; b.Loop(); i++ {
					obj, err := c.codec.Decode(data[i%len(data)])
					if err != nil {
						b.Fatal(err)
					}
					m, _ := meta.Accessor(obj)
					if sel.Matches(labels.Set(m.GetLabels())) {
						b.Fatal("matched")
					}
				}
				cputime.Report(b, start, b.N, "op")
			})
		}
		b.Run(fmt.Sprintf("kind=%s/enc=none/read=object", kind), func(b *testing.B) {
			start := cputime.Process()
			for i := 0; b.Loop(); i++ {
				m, _ := meta.Accessor(objs[i%len(objs)])
				if sel.Matches(labels.Set(m.GetLabels())) {
					b.Fatal("matched")
				}
			}
			cputime.Report(b, start, b.N, "op")
		})
	}
}
