package shard

import (
	"sync"
	"time"
)

// CacheRange is one sharded cache's hold on its member's range: an
// informer built with informer.WithShard registers one while it runs and
// sets it each time a list of a new range is complete, so that Reconciler
// reconciles an object only once every sharded cache of the member holds
// its hash, and reconcilers read complete caches after a hand-over.
type CacheRange struct {
	caches *caches
	name   string

	// Guarded by caches.mu.
	listed bool // Set has been called
	// behindSince is when a Reconciler first retried a request for a hash
	// this cache did not hold, since its last Set; told says that the wait
	// has been logged.
	behindSince time.Time
	told        bool
}

// caches are the ranges the member's sharded caches hold.
type caches struct {
	mu   sync.Mutex
	held map[*CacheRange]Range
}

// TrackCache registers a sharded cache of the member; it holds nothing
// until Set. Close it when the cache stops. It is TrackCacheOf an unnamed
// cache.
func (m *Member) TrackCache() *CacheRange { return m.TrackCacheOf("") }

// TrackCacheOf registers a sharded cache of the member, named name (its
// kind, for instance) in the member's logs; it holds nothing until Set.
// Close it when the cache stops.
func (m *Member) TrackCacheOf(name string) *CacheRange {
	if name == "" {
		name = "an unnamed sharded cache"
	}
	c := &CacheRange{caches: &m.caches, name: name}
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
		c.listed = true
		c.behindSince, c.told = time.Time{}, false
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

// waitedForCaches is called when a Reconciler retries a request for hash h
// because a sharded cache does not hold it: a cache that has not held h
// for a lease duration of such retries is logged, once until its next
// list completes. A cache that never completes a list (its informer may not
// list its kind) holds back every request of every controller of the
// member, and the retried count is all that would show it otherwise.
//
// It returns how long the cache that has waited longest for h has waited.
func (m *Member) waitedForCaches(h uint64) time.Duration {
	type behind struct {
		name   string
		listed bool
		waited time.Duration
	}
	var tell []behind
	var longest time.Duration
	now := m.cfg.clock.Now()
	m.caches.mu.Lock()
	for c, r := range m.caches.held {
		if r.Contains(h) {
			continue
		}
		if c.behindSince.IsZero() {
			c.behindSince = now
		}
		waited := now.Sub(c.behindSince)
		longest = max(longest, waited)
		if !c.told && waited >= m.cfg.leaseDuration {
			c.told = true
			tell = append(tell, behind{c.name, c.listed, waited})
		}
	}
	m.caches.mu.Unlock()
	for _, b := range tell {
		if !b.listed {
			m.cfg.logger.Error(nil, "Reconcile requests are retried until every sharded cache of the shard member holds their objects, and this cache has not completed a list since it started: until it does, every request of every controller of the member is retried. See its informer's SyncStatus or its errors: it may not be allowed to list its kind (RBAC), or the kind may not exist",
				"cache", b.name, "waited", b.waited)
			continue
		}
		m.cfg.logger.Error(nil, "Reconcile requests are retried until every sharded cache of the shard member holds their objects, and this cache has not completed its list of the member's new range yet: see its informer's SyncStatus",
			"cache", b.name, "waited", b.waited)
	}
	return longest
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
