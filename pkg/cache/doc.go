// Package cache provides a thread-safe indexer that implements client-go's
// cache.Indexer and adds a restart buffer: a relist fills a second generation
// (objects and indices) page by page while readers keep using the live one,
// and finishing the restart swaps the generations atomically and returns the
// difference for event handlers.
//
// With relist reuse, an object whose key, UID and resourceVersion match the
// live generation is buffered as the live object itself, so a relist of an
// unchanged collection costs about one store, not two.
package cache
