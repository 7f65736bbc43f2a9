package codec

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/zstd"
)

// Compression: zstd with a dictionary per kind. Objects of one kind repeat
// most of their bytes (field tags, label keys, managedFields' field sets,
// images, ...), which a dictionary holds once; a few hundred bytes
// compressed alone would barely shrink.
const (
	// TrainingSamples is how many objects of a kind a compressing Codec
	// encodes uncompressed before it trains the kind's dictionary on them;
	// it compresses every later one.
	TrainingSamples = 256
	// maxDictSize bounds a kind's dictionary.
	maxDictSize = 16 << 10
	// window is the encoder's window: a dictionary and one object fit, and
	// the default (8 MiB) would cost the encoder about 5 MiB of buffers.
	window = 32 << 10
)

// kindZstd is the compression state of one kind.
type kindZstd struct {
	mu      sync.Mutex // guards samples and training
	samples [][]byte   // encodings kept for training; nil once trained
	failed  error      // why training failed: the kind stays uncompressed

	coder atomic.Pointer[zstdCoder] // nil until trained
}

// zstdCoder compresses and decompresses with one dictionary.
type zstdCoder struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// sample records an uncompressed encoding of the kind (the caller keeps
// it unchanged) and trains the dictionary once there are enough.
func (z *kindZstd) sample(body []byte) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.coder.Load() != nil || z.failed != nil {
		return
	}
	z.samples = append(z.samples, body)
	if len(z.samples) < TrainingSamples {
		return
	}
	coder, err := train(z.samples)
	z.samples = nil
	if err != nil {
		z.failed = err
		return
	}
	z.coder.Store(coder)
}

func train(samples [][]byte) (*zstdCoder, error) {
	d, err := dict.BuildZstdDict(samples, dict.Options{MaxDictSize: maxDictSize, HashBytes: 6, ZstdLevel: zstd.SpeedFastest})
	if err != nil {
		return nil, fmt.Errorf("training a zstd dictionary: %w", err)
	}
	// No entropy coding of literals: with the dictionary an object is mostly
	// matches, and Huffman tables for its few literals cost a quarter of an
	// encode for a few percent of size (pkg/codec README).
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderDict(d), zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(window),
		zstd.WithNoEntropyCompression(true))
	if err != nil {
		return nil, fmt.Errorf("making a zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDicts(d), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(window))
	if err != nil {
		return nil, fmt.Errorf("making a zstd decoder: %w", err)
	}
	return &zstdCoder{enc: enc, dec: dec}, nil
}

// decompressBuffers hold decompressed encodings while they are decoded:
// decoding copies what it keeps out of them.
var decompressBuffers = sync.Pool{New: func() any { return new([]byte) }}
