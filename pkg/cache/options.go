package cache

// Option configures an Indexer.
type Option func(*config)

type config struct {
	relistReuse bool
	codec       Codec
}

// WithRelistReuse turns relist reuse on or off (it is on by default): with
// it, a replace buffers the live object in place of a new copy whose key, UID
// and resourceVersion are the same. See AddToReplace.
func WithRelistReuse(enabled bool) Option {
	return func(c *config) { c.relistReuse = enabled }
}

// WithCodec makes the Indexer keep objects encoded with codec (see
// codec.New for one that handles built-in types, PartialObjectMetadata and
// unstructured objects): every read decodes a fresh object, which the caller
// owns. Objects the codec refuses are kept as they are and counted (see
// CodecStats); reads return a DeepCopy of those. NewIndexer panics if codec
// is nil.
//
// Values handed out without decoding (the old objects Upsert and Remove
// return, the Diff's objects) may be encoded entries: Decode turns them into
// objects.
func WithCodec(codec Codec) Option {
	return func(c *config) {
		if codec == nil {
			panic("cache.WithCodec: nil codec")
		}
		c.codec = codec
	}
}
