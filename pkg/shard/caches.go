package shard

import "sync"

// CacheRange is one sharded cache's hold on its member's range: an
// informer built with informer.WithShard registers one while it runs and
// sets it each time a list of a new range is complete, so that Reconciler
// reconciles an object only once every sharded cache of the member holds
// its hash, and reconcilers read complete caches after a hand-over.
type CacheRange struct {
	caches *caches
}

// caches are the ranges the member's sharded caches hold.
type caches struct {
	mu   sync.Mutex
	held map[*CacheRange]Range
}

// TrackCache registers a sharded cache of the member; it holds nothing
// until Set. Close it when the cache stops.
func (m *Member) TrackCache() *CacheRange {
	c := &CacheRange{caches: &m.caches}
	m.caches.mu.Lock()
	defer m.caches.mu.Unlock()
	if m.caches.held == nil {
		m.caches.held = make(map[*CacheRange]Range)
	}
	m.caches.held[c] = Range{}
	return c
}

// Set records that the cache holds r.
func (c *CacheRange) Set(r Range) {
	c.caches.mu.Lock()
	defer c.caches.mu.Unlock()
	if _, ok := c.caches.held[c]; ok {
		c.caches.held[c] = r
	}
}

// Close unregisters the cache.
func (c *CacheRange) Close() {
	c.caches.mu.Lock()
	defer c.caches.mu.Unlock()
	delete(c.caches.held, c)
}

// CachesHold reports whether every sharded cache registered with the member
// holds hash h (true when none is registered).
func (m *Member) CachesHold(h uint64) bool {
	m.caches.mu.Lock()
	defer m.caches.mu.Unlock()
	for _, r := range m.caches.held {
		if !r.Contains(h) {
			return false
		}
	}
	return true
}

// Assigned reports whether the assignment over the live members, as this
// member last computed it, gives it hash h: a request for h that the member
// does not serve yet is its own soon, and is worth retrying. Until the
// member has computed its first assignment (it lists the group's Leases
// first), every hash may be its own, and Assigned is true: a controller
// that starts with the member must not drop what it is handed meanwhile.
// Once Start has returned, nothing is.
func (m *Member) Assigned(h uint64) bool {
	m.gate.mu.Lock()
	defer m.gate.mu.Unlock()
	return !m.gate.assignedYet || m.gate.assigned.Contains(h)
}
