package cache

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgofeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
)

var (
	_ toolscache.Indexer          = (*Indexer)(nil)
	_ toolscache.TransactionStore = (*Indexer)(nil)
)

// Indexer is a thread-safe store of objects with indices. It implements
// client-go's cache.Indexer with the same observable behaviour, and adds a
// paged replace (see StartReplace) that lets a relist record the store's
// next contents while readers keep using the current ones.
//
// As with client-go's indexer, objects handed in or out are shared: callers
// must treat them as immutable. With WithCodec, objects are kept encoded and
// every read returns a fresh object that the caller owns.
type Indexer struct {
	keyFunc     toolscache.KeyFunc
	relistReuse bool
	codec       Codec // nil: objects are kept as they are
	counters    codecCounters

	// replaceMu guards the replace buffer and serializes the writers that
	// build a whole generation (Replace, AddIndexers, FinishReplace), so that
	// they can do the O(n) work without holding mu for writing.
	// Lock order: replaceMu, then mu.
	replaceMu sync.Mutex
	buffer    *pagedReplace // nil when no paged replace is in progress

	// mu guards the live generation and the store's resourceVersion.
	mu   sync.RWMutex
	live *generation
	rv   string
	// liveWrites counts changes to live items, so that a writer that computed
	// something under the read lock can tell whether it is still current once
	// it holds the write lock.
	liveWrites uint64

	// indexers and byName are written holding both locks and read holding
	// either. Every generation's indices are in the order of indexers.
	indexers []namedIndexer
	byName   map[string]int

	// testInPlaceLimit, if set, replaces the bound on the writes a paged
	// replace does in place (see pagedReplace) for a live generation of
	// size objects.
	testInPlaceLimit func(size int) int
	// testHookBeforeWriteLock, if set, runs where FinishReplace and
	// AddIndexers go from the read lock to the write lock.
	testHookBeforeWriteLock func()
}

// NewIndexer returns an empty indexer that computes keys with keyFunc and
// maintains the given indices. Relist reuse is on unless turned off with
// WithRelistReuse(false); objects are kept as they are unless WithCodec
// gives a codec. The indexers map is copied. Index functions must depend
// on the object alone: an object's values are not computed again when it
// is kept by relist reuse, and the encoded store unindexes an object with
// the values computed when it was stored (see the package README's known
// limits for one that reads outside state).
func NewIndexer(keyFunc toolscache.KeyFunc, indexers toolscache.Indexers, opts ...Option) *Indexer {
	if keyFunc == nil {
		panic("cache.NewIndexer: nil keyFunc")
	}
	cfg := config{relistReuse: true}
	for _, opt := range opts {
		opt(&cfg)
	}
	c := &Indexer{
		keyFunc:     keyFunc,
		relistReuse: cfg.relistReuse,
		codec:       cfg.codec,
		indexers:    sortedIndexers(indexers),
		byName:      make(map[string]int, len(indexers)),
	}
	for i, ix := range c.indexers {
		c.byName[ix.name] = i
	}
	c.live = newGeneration(0, c.indexers, nil)
	return c
}

// key computes obj's key, wrapping a failure in a KeyError as client-go does.
func (c *Indexer) key(obj any) (string, error) {
	key, err := c.keyFunc(obj)
	if err != nil {
		return "", toolscache.KeyError{Obj: obj, Err: err}
	}
	return key, nil
}

// resourceVersionOf returns obj's resourceVersion; ok is false for objects
// without metadata, which leave the store's resourceVersion as it is.
func resourceVersionOf(obj any) (rv string, ok bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return m.GetResourceVersion(), true
}

// Upsert adds or replaces obj in the live generation and returns the object
// it replaced, so that a caller can notify an update without a second lookup.
// Like Add and Update, it sets the store's resourceVersion to obj's. With a
// codec, obj is encoded (outside the store's locks) and old is what the
// store held, possibly an encoded entry: see Decode. obj is handed over to
// the store: an object the codec refuses is kept as it is, and a
// RefusedFinisher may write into it first.
func (c *Indexer) Upsert(obj any) (old any, existed bool, err error) {
	_, old, existed, err = c.upsert(obj, true)
	return old, existed, err
}

// UpsertStored is Upsert that also returns what the store now holds for
// obj, as AddToReplace does: obj itself without a codec; with one, an
// encoded entry, or the object the codec refused as the store keeps it
// (after a RefusedFinisher), which Decode passes through. So an informer
// hands its handlers a decode of the entry, or the very object the store
// keeps, as it does for a relist's objects.
func (c *Indexer) UpsertStored(obj any) (stored, old any, existed bool, err error) {
	return c.upsert(obj, true)
}

// upsert is UpsertStored; owned: obj is the store's to write into (see
// RefusedFinisher).
func (c *Indexer) upsert(obj any, owned bool) (stored, old any, existed bool, err error) {
	key, err := c.key(obj)
	if err != nil {
		return nil, nil, false, err
	}
	rv, hasRV := resourceVersionOf(obj)
	stored = c.encode(obj, owned)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setIndexValues(key, obj, stored, owned)
	old, existed = c.live.put(c.indexers, key, stored)
	c.liveWrites++
	if hasRV {
		c.rv = rv
	}
	return stored, old, existed, nil
}

// Remove deletes obj's key from the live generation and returns the object
// the store held (with a codec, possibly an encoded entry: see Decode). Like Delete, it sets the store's resourceVersion to obj's,
// even if the key was absent. obj may be a DeletedFinalStateUnknown if the
// key function understands it (DeletionHandlingMetaNamespaceKeyFunc).
func (c *Indexer) Remove(obj any) (old any, existed bool, err error) {
	key, err := c.key(obj)
	if err != nil {
		return nil, false, err
	}
	rv, hasRV := resourceVersionOf(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	old, existed = c.live.remove(c.indexers, key)
	if existed {
		c.liveWrites++
	}
	if hasRV {
		c.rv = rv
	}
	return old, existed, nil
}

// Transaction applies txns in order under one write lock, so that readers
// see none of them or all, as client-go's store does: an Add or Update is an
// Upsert, a Delete a Remove, and an unknown type is skipped. A transaction
// whose object has no key is left out and reported in the returned error,
// which lists the indices of those applied. The store's resourceVersion
// becomes that of the last object applied. An index function that panics
// leaves the transactions before it applied, as the same calls one by one
// would.
func (c *Indexer) Transaction(txns ...toolscache.Transaction) *toolscache.TransactionError {
	batch := make([]keyedTransaction, 0, len(txns))
	applied := make([]int, 0, len(txns))
	var errs []error
	for i, txn := range txns {
		key, err := c.key(txn.Object)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		k := keyedTransaction{Transaction: txn, key: key}
		if txn.Type == toolscache.TransactionTypeAdd || txn.Type == toolscache.TransactionTypeUpdate {
			k.stored = c.encode(txn.Object, false) // outside the lock, as Upsert does
		}
		batch = append(batch, k)
		applied = append(applied, i)
	}
	c.apply(batch)
	if len(errs) > 0 {
		return &toolscache.TransactionError{SuccessfulIndices: applied, TotalTransactions: len(txns), Errors: errs}
	}
	return nil
}

// keyedTransaction is a Transaction with its key and what the store keeps
// for its object.
type keyedTransaction struct {
	toolscache.Transaction
	key    string
	stored any
}

// apply runs a Transaction's batch holding mu for writing.
func (c *Indexer) apply(batch []keyedTransaction) {
	if len(batch) == 0 {
		return
	}
	rv, hasRV := resourceVersionOf(batch[len(batch)-1].Object)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range batch {
		switch t.Type {
		case toolscache.TransactionTypeAdd, toolscache.TransactionTypeUpdate:
			c.setIndexValues(t.key, t.Object, t.stored, false)
			c.live.put(c.indexers, t.key, t.stored)
			c.liveWrites++
		case toolscache.TransactionTypeDelete:
			if _, existed := c.live.remove(c.indexers, t.key); existed {
				c.liveWrites++
			}
		}
	}
	if hasRV {
		c.rv = rv
	}
}

// Add adds obj to the store (an Upsert that leaves obj, still the caller's,
// as it is).
func (c *Indexer) Add(obj any) error {
	_, _, _, err := c.upsert(obj, false)
	return err
}

// Update replaces obj in the store (an Upsert that leaves obj, still the
// caller's, as it is).
func (c *Indexer) Update(obj any) error {
	_, _, _, err := c.upsert(obj, false)
	return err
}

// Delete removes obj's key from the store (a Remove).
func (c *Indexer) Delete(obj any) error {
	_, _, err := c.Remove(obj)
	return err
}

// Get returns the object stored under obj's key.
func (c *Indexer) Get(obj any) (item any, exists bool, err error) {
	key, err := c.key(obj)
	if err != nil {
		return nil, false, err
	}
	return c.GetByKey(key)
}

// GetByKey returns the object stored under key. The error is nil unless
// the store has a codec and the object cannot be decoded.
func (c *Indexer) GetByKey(key string) (item any, exists bool, err error) {
	c.mu.RLock()
	item, exists = c.live.items[key]
	c.mu.RUnlock()
	if !exists {
		return nil, false, nil
	}
	item, failed := c.readable(item)
	if failed != nil {
		return nil, true, undecodableUnder(key, failed.err)
	}
	return item, true, nil
}

// OlderThanStored reports whether rv, the resourceVersion of a change of
// obj, is older than the object stored under obj's key, and returns that
// object's resourceVersion if so. It decodes nothing. Only decimal
// resourceVersions (etcd's) compare: with any other, no stored object, or
// obj without a key, nothing is older.
func (c *Indexer) OlderThanStored(obj any, rv string) (stored string, older bool) {
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return "", false
	}
	key, err := c.key(obj)
	if err != nil {
		return "", false
	}
	c.mu.RLock()
	item, exists := c.live.items[key]
	c.mu.RUnlock()
	if !exists {
		return "", false
	}
	var w uint64
	if e, isEncoded := item.(*encoded); isEncoded && e.compactRV() {
		w = e.rv // compared as the number it is kept as: a string only if older
	} else {
		var ok bool
		if stored, ok = ResourceVersionOf(item); !ok {
			return "", false
		}
		if w, err = strconv.ParseUint(stored, 10, 64); err != nil {
			return "", false
		}
	}
	if w <= v {
		return "", false
	}
	if stored == "" {
		stored = strconv.FormatUint(w, 10)
	}
	return stored, true
}

// List returns every object of the live generation, in no particular order.
func (c *Indexer) List() []any {
	c.mu.RLock()
	list := make([]any, 0, len(c.live.items))
	for _, obj := range c.live.items {
		list = append(list, obj)
	}
	c.mu.RUnlock()
	return c.readableList(list)
}

// ListKeys returns every key of the live generation, in no particular order.
func (c *Indexer) ListKeys() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys := make([]string, 0, len(c.live.items))
	for key := range c.live.items {
		keys = append(keys, key)
	}
	return keys
}

// Replace makes list, at resourceVersion, the store's contents. The new
// generation is built and indexed before it is swapped in, so readers keep
// the old one meanwhile; if a key cannot be computed, Replace returns the
// KeyError and leaves the store unchanged. The same key twice: the later
// object wins. A paged replace in progress is not affected.
func (c *Indexer) Replace(list []any, resourceVersion string) error {
	c.replaceMu.Lock() // holds the indexers still while building
	defer c.replaceMu.Unlock()
	gen := newGeneration(len(list), c.indexers, nil)
	for _, obj := range list {
		key, err := c.key(obj)
		if err != nil {
			return err
		}
		stored := c.encode(obj, false)
		c.setIndexValues(key, obj, stored, false)
		gen.put(c.indexers, key, stored)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = gen
	c.rv = resourceVersion
	c.liveWrites++
	return nil
}

// Resync does nothing, as in client-go's indexer.
func (c *Indexer) Resync() error { return nil }

// Bookmark records rv as the store's resourceVersion without changing its
// contents.
func (c *Indexer) Bookmark(rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rv = rv
}

// LastStoreSyncResourceVersion returns the resourceVersion the store's
// contents are consistent with: that of the last write, Replace,
// FinishReplace or Bookmark. Like client-go's, it returns "" unless the
// AtomicFIFO feature gate is enabled.
func (c *Indexer) LastStoreSyncResourceVersion() string {
	if !clientgofeatures.FeatureGates().Enabled(clientgofeatures.AtomicFIFO) {
		return ""
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rv
}

// noIndexError reports an unknown index name in client-go's words, which
// callers may match.
func noIndexError(name string) error {
	return fmt.Errorf("Index with name %s does not exist", name)
}

// indexNamed returns the position of the named index; the caller holds mu
// or addMu. An index registered with a nil function is no index, as in
// client-go: its lookups say it does not exist rather than panic.
func (c *Indexer) indexNamed(name string) (int, error) {
	i, ok := c.byName[name]
	if !ok || c.indexers[i].fn == nil {
		return 0, noIndexError(name)
	}
	return i, nil
}

// Index returns the objects that share at least one indexed value with obj
// in the named index.
func (c *Indexer) Index(indexName string, obj any) ([]any, error) {
	list, err := c.indexLocked(indexName, obj)
	if err != nil {
		return nil, err
	}
	return c.readableList(list), nil
}

func (c *Indexer) indexLocked(indexName string, obj any) ([]any, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, err := c.indexNamed(indexName)
	if err != nil {
		return nil, err
	}
	values, err := c.indexers[i].fn(obj)
	if err != nil {
		return nil, err
	}
	idx := c.live.indices[i]
	if len(values) == 1 {
		return c.objectsLocked(idx[values[0]]), nil
	}
	// Several values may share keys: collect each key once.
	seen := make(map[string]struct{})
	for _, v := range values {
		for key := range idx[v].all() {
			seen[key] = struct{}{}
		}
	}
	list := make([]any, 0, len(seen))
	for key := range seen {
		list = append(list, c.live.items[key])
	}
	return list, nil
}

// objectsLocked returns the live objects of keys; the caller holds mu.
func (c *Indexer) objectsLocked(keys keySet) []any {
	list := make([]any, 0, keys.len())
	// Plain loops rather than keys.all(): this is the hot path of listers.
	for _, key := range keys.keys {
		list = append(list, c.live.items[key])
	}
	for key := range keys.many {
		list = append(list, c.live.items[key])
	}
	return list
}

// ByIndex returns the objects whose indexed values in the named index
// include indexedValue.
func (c *Indexer) ByIndex(indexName, indexedValue string) ([]any, error) {
	c.mu.RLock()
	i, err := c.indexNamed(indexName)
	if err != nil {
		c.mu.RUnlock()
		return nil, err
	}
	list := c.objectsLocked(c.live.indices[i][indexedValue])
	c.mu.RUnlock()
	return c.readableList(list), nil
}

// IndexKeys returns, sorted, the keys of the objects whose indexed values in
// the named index include indexedValue.
func (c *Indexer) IndexKeys(indexName, indexedValue string) ([]string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, err := c.indexNamed(indexName)
	if err != nil {
		return nil, err
	}
	set := c.live.indices[i][indexedValue]
	keys := make([]string, 0, set.len())
	for key := range set.all() {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys, nil
}

// ListIndexFuncValues returns the values of the named index that at least
// one object produces, in no particular order; none for an unknown index.
func (c *Indexer) ListIndexFuncValues(indexName string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, ok := c.byName[indexName]
	if !ok {
		return []string{}
	}
	idx := c.live.indices[i]
	values := make([]string, 0, len(idx))
	for v := range idx {
		values = append(values, v)
	}
	return values
}

// GetIndexers returns a copy of the index functions by name.
func (c *Indexer) GetIndexers() toolscache.Indexers {
	c.mu.RLock()
	defer c.mu.RUnlock()
	indexers := make(toolscache.Indexers, len(c.indexers))
	for _, ix := range c.indexers {
		indexers[ix.name] = ix.fn
	}
	return indexers
}

// AddIndexers adds indices and indexes the objects already stored, in the
// live generation and in a paged replace in progress. A name that already exists
// is an error ("indexer conflict"), and then nothing is added. The live
// index is built under the read lock, so readers do not wait for it.
func (c *Indexer) AddIndexers(newIndexers toolscache.Indexers) error {
	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()

	var conflicts []string
	for name := range newIndexers {
		if _, ok := c.byName[name]; ok {
			conflicts = append(conflicts, name)
		}
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("indexer conflict: %v", sets.New(conflicts...))
	}
	added := sortedIndexers(newIndexers)
	if len(added) == 0 {
		return nil
	}

	// Build every new index before attaching any: an index function that
	// fails panics and leaves the store as it was.
	b := &indexBuild{codec: c.codec, added: added}
	var bufferIndices []index
	switch {
	case c.buffer != nil && c.buffer.gen != nil:
		bufferIndices = b.build(c.buffer.gen.items)
	case c.buffer != nil:
		// Recorded in place: the objects it will write into the live
		// generation need their values for the added indices too.
		for _, ch := range c.buffer.changes {
			b.prepare(ch.Key, ch.New)
		}
	}
	liveIndices, seen := c.buildLiveIndices(b)
	if c.testHookBeforeWriteLock != nil {
		c.testHookBeforeWriteLock()
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.liveWrites != seen {
		liveIndices = b.build(c.live.items)
	}
	for i, ix := range added {
		c.byName[ix.name] = len(c.indexers)
		c.indexers = append(c.indexers, ix)
		c.live.indices = append(c.live.indices, liveIndices[i])
		if bufferIndices != nil {
			c.buffer.gen.indices = append(c.buffer.gen.indices, bufferIndices[i])
		}
	}
	b.attach()
	return nil
}

// buildLiveIndices indexes the live generation under the read lock and
// returns the indices with the live write count they reflect.
func (c *Indexer) buildLiveIndices(b *indexBuild) ([]index, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return b.build(c.live.items), c.liveWrites
}

// readableList replaces each stored value of list by what a read hands out
// (see readable). An object that cannot be decoded is left out and reported
// by its key: the store still holds it, and Get returns the error.
func (c *Indexer) readableList(list []any) []any {
	if c.codec == nil {
		return list
	}
	n := 0
	var failed []undecodable
	for _, stored := range list {
		obj, u := c.readable(stored)
		if u != nil {
			failed = append(failed, *u)
			continue
		}
		list[n] = obj
		n++
	}
	clear(list[n:])
	c.reportUndecodable(failed)
	return list[:n]
}
