// Package cache provides Indexer, a thread-safe indexed store that implements
// client-go's cache.Indexer and its behaviour (README.md lists the few
// differences a caller can observe) and adds a replace buffer for relists.
//
// A store's contents form a generation: the objects by key and their
// indices. A relist is recorded page by page (StartReplace, AddToReplace)
// while readers and live writes keep using the live generation;
// FinishReplace then makes it the store's contents under the write lock and
// returns a Diff (deleted keys with their last objects, added objects,
// updated pairs, in list order), so that an informer can notify its handlers
// without reading the store again. While at most a quarter of the objects
// differ, a relist is written into the live generation in place (only what
// differs); past that a second generation is built beside it, indices
// included, and swapped in. Either way readers see the old contents or the
// new, never a mix, and objects a handler or the Diff holds stay valid.
//
// With relist reuse (the default), an object whose key, UID and
// resourceVersion match the live generation is buffered as the live object
// itself and the new decoded copy is dropped at once, so a relist of an
// unchanged collection costs about one store, a key set and one page, not
// two stores.
//
// With WithCodec, the store keeps each object encoded (package codec), with
// its UID, resourceVersion and index values beside the bytes so that writes
// and relist reuse never decode; every read decodes a fresh object that the
// caller owns. Values handed out without decoding (Upsert's and Remove's old
// objects, the Diff) may be encoded entries: Decode turns them into objects.
//
// Benchmarks against client-go's indexer, with the command that produced
// them, are in README.md next to this file.
package cache
