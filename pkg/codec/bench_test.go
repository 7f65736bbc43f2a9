package codec

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/leaninformer/leaninformer/internal/cputime"
	"github.com/leaninformer/leaninformer/internal/testobjects"
)

// Benchmarks of the encodings, per object of hack/bench's kinds as an API
// server returns them (internal/testobjects), 1,000 distinct objects each:
// encoded size, encode and decode time. Typed objects: protobuf, plain and
// compressed. Unstructured objects (the same objects converted): CBOR,
// plain and compressed, against JSON, the other candidate. Besides wall
// time, each reports the process's CPU time per operation (cpu-ns/op, GC
// included), steadier on a shared machine. Run with:
//
//	go test -run '^$' -bench . -benchmem ./pkg/codec/

const benchObjects = 1000

// encoding is one way to encode and decode.
type encoding struct {
	name   string
	encode func(any) ([]byte, error)
	decode func([]byte) (any, error)
}

func codecEncoding(name string, c *Codec) encoding {
	return encoding{name, c.Encode, c.Decode}
}

var jsonEncoding = encoding{"enc=json", json.Marshal, func(data []byte) (any, error) {
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(data)
}}

func benchSet(b *testing.B, kind string, asUnstructured bool) []any {
	b.Helper()
	pop := testobjects.NewPopulation(b, kind)
	out := make([]any, benchObjects+TrainingSamples)
	for i := range out {
		o := pop.Object(i)
		if asUnstructured {
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				b.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: content}
			gvks, _, err := scheme.Scheme.ObjectKinds(o)
			if err != nil {
				b.Fatal(err)
			}
			u.GetObjectKind().SetGroupVersionKind(gvks[0])
			data, err := json.Marshal(u) // as decoded from the wire: int64s, float64s
			if err != nil {
				b.Fatal(err)
			}
			u = &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(data); err != nil {
				b.Fatal(err)
			}
			out[i] = u
			continue
		}
		out[i] = o
	}
	return out
}

func BenchmarkEncoding(b *testing.B) {
	for _, kind := range testobjects.Kinds {
		for _, asUnstructured := range []bool{false, true} {
			objs := benchSet(b, kind, asUnstructured)
			encodings := []encoding{codecEncoding("enc=protobuf", New()), codecEncoding("enc=protobuf-s2", New(WithCompression()))}
			form := "typed"
			if asUnstructured {
				form = "unstructured"
				encodings = []encoding{codecEncoding("enc=cbor", New()), codecEncoding("enc=cbor-s2", New(WithCompression())), jsonEncoding}
			}
			for _, e := range encodings {
				// The first TrainingSamples train a compressing codec's
				// dictionary; the benchmark uses the objects after them.
				data := make([][]byte, len(objs))
				for i, o := range objs {
					var err error
					if data[i], err = e.encode(o); err != nil {
						b.Fatal(err)
					}
				}
				data, sample := data[TrainingSamples:], objs[TrainingSamples:]
				size := 0
				for _, d := range data {
					size += len(d)
				}
				name := fmt.Sprintf("kind=%s/form=%s/%s", kind, form, e.name)
				b.Run(name+"/op=decode", func(b *testing.B) {
					start := cputime.Process()
					for i := 0; b.Loop(); i++ {
						if _, err := e.decode(data[i%len(data)]); err != nil {
							b.Fatal(err)
						}
					}
					cputime.Report(b, start, b.N, "op")
					b.ReportMetric(float64(size)/float64(len(data)), "encoded-B/object")
				})
				b.Run(name+"/op=encode", func(b *testing.B) {
					start := cputime.Process()
					for i := 0; b.Loop(); i++ {
						if _, err := e.encode(sample[i%len(sample)]); err != nil {
							b.Fatal(err)
						}
					}
					cputime.Report(b, start, b.N, "op")
				})
			}
			b.Run(fmt.Sprintf("kind=%s/form=%s/enc=none/op=DeepCopy", kind, form), func(b *testing.B) {
				start := cputime.Process()
				for i := 0; b.Loop(); i++ {
					objs[i%len(objs)].(runtime.Object).DeepCopyObject()
				}
				cputime.Report(b, start, b.N, "op")
			})
		}
	}
}
