package codec

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
)

// Compression: S2 (github.com/klauspost/compress/s2, an extension of
// Snappy) with a dictionary per kind. Objects of one kind repeat most of
// their bytes (field tags, label keys, managedFields' field sets, images,
// ...), which a dictionary of earlier encodings holds; a few hundred bytes
// compressed alone would barely shrink. S2 has no entropy stage: with the
// dictionary an object is mostly matches, and zstd (measured before, see
// the README) spent most of its time resetting its tables from the
// dictionary and coding the few literals, for encodings about twice as
// large as S2's.
const (
	// TrainingSamples is how many objects of a kind a compressing Codec
	// encodes uncompressed before it makes the kind's dictionary from
	// them; it compresses every later one.
	TrainingSamples = 256
	// maxDictSize bounds a kind's dictionary: S2's own bound, 64 KiB.
	maxDictSize = s2.MaxDictSize
	// maxDecompressed bounds what a decompression may allocate: the
	// length is read from the stored bytes, and a damaged one must be an
	// error rather than a huge allocation. API objects are at most a few
	// MiB (etcd's request limit).
	maxDecompressed = 64 << 20
)

// kindCompression is the compression state of one kind.
type kindCompression struct {
	mu sync.Mutex // guards the fields up to coder
	// samples are the latest encodings, as many as the dictionary can use
	// (the last maxDictSize bytes): older ones are let go, so that a kind
	// that never reaches TrainingSamples does not keep stale encodings of
	// its objects for ever. nil once the dictionary is made.
	samples     [][]byte
	sampleBytes int   // the bytes of samples
	seen        int   // encodings sampled so far
	failed      error // why no dictionary could be made: the kind stays uncompressed

	coder atomic.Pointer[dictCoder] // nil until the dictionary is made
}

// dictCoder compresses and decompresses with one kind's dictionary. It is
// safe for concurrent use.
type dictCoder struct {
	dict *s2.Dict
}

// sample records an uncompressed encoding of the kind (the caller keeps
// it unchanged) and makes the dictionary once there are enough.
func (z *kindCompression) sample(body []byte) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.coder.Load() != nil || z.failed != nil {
		return
	}
	z.seen++
	z.samples = append(z.samples, body)
	z.sampleBytes += len(body)
	for len(z.samples) > 1 && z.sampleBytes-len(z.samples[0]) >= maxDictSize {
		z.sampleBytes -= len(z.samples[0])
		z.samples[0] = nil
		z.samples = z.samples[1:]
	}
	if z.seen < TrainingSamples {
		return
	}
	coder, err := newDictCoder(z.samples)
	z.samples, z.sampleBytes = nil, 0
	if err != nil {
		z.failed = err
		return
	}
	z.coder.Store(coder)
}

// newDictCoder makes a dictionary of the last maxDictSize bytes of the
// samples, oldest first: S2 finds matches in a dictionary as in data that
// came before the object. A sample larger than that contributes its end.
func newDictCoder(samples [][]byte) (*dictCoder, error) {
	first, size := len(samples), 0
	for first > 0 && size < maxDictSize {
		first--
		size += len(samples[first])
	}
	data := make([]byte, 0, size)
	for _, s := range samples[first:] {
		data = append(data, s...)
	}
	// An encoding's first bytes (its TypeMeta and the start of its
	// metadata) are where a block is most likely to repeat the dictionary.
	start := samples[len(samples)-1]
	d := s2.MakeDict(data, start[:min(len(start), 32)]) // keeps the last maxDictSize bytes
	if d == nil {
		return nil, fmt.Errorf("making an S2 dictionary from %d bytes of %d samples: too small", len(data), len(samples[first:]))
	}
	return &dictCoder{dict: d}, nil
}

// compress appends nothing to dst: it returns src compressed, in dst's
// array if it is large enough.
func (c *dictCoder) compress(dst, src []byte) []byte {
	if n := s2.MaxEncodedLen(len(src)); cap(dst) < n {
		dst = make([]byte, 0, n)
	}
	return c.dict.Encode(dst[:0], src)
}

// decompress returns src decompressed, in dst's array if it is large
// enough.
func (c *dictCoder) decompress(dst, src []byte) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n > maxDecompressed {
		return nil, fmt.Errorf("decompressed length %d over the bound of %d", n, maxDecompressed)
	}
	return c.dict.Decode(dst[:0], src)
}

// decompressBuffers hold decompressed encodings while they are decoded:
// decoding copies what it keeps out of them.
var decompressBuffers = sync.Pool{New: func() any { return new([]byte) }}
