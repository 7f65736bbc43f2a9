package codec

import (
	"encoding/binary"
	"reflect"
	"sync"
	"testing"

	"github.com/leaninformer/leaninformer/internal/testobjects"
)

// TestCompression encodes 1,000 server objects of each kind with a
// compressing Codec: the first TrainingSamples stay uncompressed, every
// later one is compressed and smaller, and all of them decode to their
// protobuf form.
func TestCompression(t *testing.T) {
	for _, kind := range testobjects.Kinds {
		t.Run(kind, func(t *testing.T) {
			plain, zc := New(), New(WithCompression())
			pop := testobjects.NewPopulation(t, kind)
			var plainBytes, zBytes int
			for i := range 1000 {
				o := pop.Object(i)
				p, err := plain.Encode(o)
				if err != nil {
					t.Fatal(err)
				}
				z, err := zc.Encode(o)
				if err != nil {
					t.Fatal(err)
				}
				v, _ := binary.Uvarint(z)
				if compressed := v&1 == 1; compressed != (i >= TrainingSamples) {
					t.Fatalf("object %d: compressed %v", i, compressed)
				}
				if i >= TrainingSamples {
					plainBytes += len(p)
					zBytes += len(z)
				}
				got, err := zc.Decode(z)
				if err != nil {
					t.Fatalf("object %d: %v", i, err)
				}
				if want := protobufForm(o); !reflect.DeepEqual(got, want) {
					t.Fatalf("object %d: the round trip changed the object", i)
				}
			}
			ratio := float64(zBytes) / float64(plainBytes)
			t.Logf("%s: compressed to %.2f of the protobuf encoding", kind, ratio)
			if ratio > 0.7 {
				t.Errorf("compressed to %.2f of the protobuf encoding, want at least 30%% smaller", ratio)
			}
		})
	}
}

// TestCompressedBytesNeedTheirCodec checks that a compressed encoding
// handed to another Codec, which has no dictionary, is an error.
func TestCompressedBytesNeedTheirCodec(t *testing.T) {
	zc := New(WithCompression())
	pop := testobjects.NewPopulation(t, "configmaps")
	var last []byte
	for i := range TrainingSamples + 1 {
		var err error
		if last, err = zc.Encode(pop.Object(i)); err != nil {
			t.Fatal(err)
		}
	}
	other := New(WithCompression())
	if _, err := other.Encode(pop.Object(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Decode(last); err == nil {
		t.Fatal("another Codec decoded a compressed encoding without its dictionary")
	}
}

// TestCompressionConcurrently encodes and decodes from several goroutines
// while the dictionary is trained (run with -race).
func TestCompressionConcurrently(t *testing.T) {
	zc := New(WithCompression())
	pop := testobjects.NewPopulation(t, "rolebindings")
	objs := pop.Objects(2 * TrainingSamples)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(objs); i += 4 {
				data, err := zc.Encode(objs[i])
				if err == nil {
					_, err = zc.Decode(data)
				}
				if err != nil {
					errs <- err
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
