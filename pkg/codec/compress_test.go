package codec

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

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
	pop := testobjects.NewPopulation(t, "configmaps")
	_, last := firstCompressed(t, pop)
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

// TestDamagedCompressedEncodings checks that damaged compressed bytes are
// decoding errors, never a panic or an allocation of the length they claim:
// a decompressed length over the bound, a truncated payload, and every
// single-byte change of one encoding.
func TestDamagedCompressedEncodings(t *testing.T) {
	zc, data := firstCompressed(t, testobjects.NewPopulation(t, "configmaps"))
	v, n := binary.Uvarint(data)
	if v&1 != 1 {
		t.Fatal("not compressed")
	}
	prefix, payload := data[:n], data[n:]

	// The payload starts with its decompressed length: claim 1 GiB.
	huge := binary.AppendUvarint(append([]byte(nil), prefix...), 1<<30)
	_, m := binary.Uvarint(payload)
	huge = append(huge, payload[m:]...)
	if _, err := zc.Decode(huge); err == nil || !strings.Contains(err.Error(), "over the bound") {
		t.Fatalf("Decode of a payload claiming 1 GiB: %v, want an error naming the bound", err)
	}
	if _, err := zc.Decode(data[:len(data)-3]); err == nil {
		t.Fatal("Decode of a truncated payload succeeded")
	}
	for i := n; i < len(data); i++ {
		damaged := append([]byte(nil), data...)
		damaged[i] ^= 0x55
		_, _ = zc.Decode(damaged) // an error or a different object; must not panic
	}
}

// TestCompressionOfLargeObjects checks that a kind whose objects are each
// larger than a dictionary may be still gets one (from the end of the last
// samples) and compresses.
func TestCompressionOfLargeObjects(t *testing.T) {
	zc := New(WithCompression())
	filler := strings.Repeat("a line of a large ConfigMap value, much like the next one\n", 1500) // ~90 KB
	var last []byte
	for i := range TrainingSamples + 1 {
		cm := withFields(fmt.Sprint("large-", i))
		cm.Data = map[string]string{"config": fmt.Sprint(i) + filler}
		var err error
		if last, err = zc.Encode(cm); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := binary.Uvarint(last); v&1 != 1 {
		t.Fatalf("an object after %d samples of about 90 KB was not compressed", TrainingSamples)
	}
	if len(last) > 10_000 {
		t.Fatalf("compressed to %d bytes, want far less than the 90 KB it holds", len(last))
	}
	got, err := zc.Decode(last)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(TrainingSamples) + filler; got.(*corev1.ConfigMap).Data["config"] != want {
		t.Fatal("the round trip changed the value")
	}

	// Decode refuses to decompress more than maxDecompressed (a damaged
	// length must not allocate without bound): an object larger than that
	// is stored uncompressed, or it could never be read back.
	huge := withFields("huge")
	huge.Data = map[string]string{"config": strings.Repeat("x", maxDecompressed+1)}
	data, err := zc.Encode(huge)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := binary.Uvarint(data); v&1 == 1 {
		t.Errorf("an object of %d bytes was compressed, over what Decode decompresses", len(huge.Data["config"]))
	}
	got, err = zc.Decode(data)
	if err != nil {
		t.Fatalf("Decode of an object over %d bytes: %v", maxDecompressed, err)
	}
	if got.(*corev1.ConfigMap).Data["config"] != huge.Data["config"] {
		t.Fatal("the round trip changed the huge value")
	}
}

// TestCompressionKeepsOnlyTheSamplesItUses: until a kind's dictionary is
// made, its samples are the latest encodings the dictionary can use (its
// last maxDictSize bytes); older ones are let go, so that a kind that never
// reaches TrainingSamples does not keep stale encodings for ever.
func TestCompressionKeepsOnlyTheSamplesItUses(t *testing.T) {
	zc := New(WithCompression())
	filler := strings.Repeat("a line of a ConfigMap value\n", 350) // ~10 KB
	for i := range TrainingSamples - 1 {
		cm := withFields(fmt.Sprint("cm-", i))
		cm.Data = map[string]string{"config": fmt.Sprint(i) + filler}
		if _, err := zc.Encode(cm); err != nil {
			t.Fatal(err)
		}
	}
	z := zc.kinds.snapshot.Load().kinds[0].compression
	z.mu.Lock()
	defer z.mu.Unlock()
	held := 0
	for _, s := range z.samples {
		held += len(s)
	}
	if last := len(z.samples[len(z.samples)-1]); held-len(z.samples[0]) >= maxDictSize || held > maxDictSize+last {
		t.Errorf("%d samples of %d encodings keep %d bytes, want no more than the dictionary's %d and one sample", len(z.samples), TrainingSamples-1, held, maxDictSize)
	}
}

// firstCompressed returns a compressing Codec that has encoded the first
// TrainingSamples + 1 objects of pop, and the last of those encodings, the
// first one it compressed.
func firstCompressed(t *testing.T, pop *testobjects.Population) (*Codec, []byte) {
	t.Helper()
	zc := New(WithCompression())
	var last []byte
	for i := range TrainingSamples + 1 {
		var err error
		if last, err = zc.Encode(pop.Object(i)); err != nil {
			t.Fatal(err)
		}
	}
	return zc, last
}
