package informer

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// SyncStatus says whether an informer has synced and, while it has not,
// what stands in the way.
type SyncStatus struct {
	// Synced: the store has been filled by a complete list.
	Synced bool
	// Running: Run has been called and has not returned.
	Running bool
	// Since is when Run started.
	Since time.Time
	// LastError is the last failure of a list or watch since the last
	// complete list, nil if none.
	LastError error
	// LastErrorTime is when LastError happened.
	LastErrorTime time.Time
	// Failures counts the failures since the last complete list.
	Failures int
	// Reason explains LastError in a few words, e.g. "forbidden by RBAC".
	Reason string
	// Dropped says which objects the last complete list was stored without
	// (the transform failed on them, or they had no key); nil if none.
	Dropped *DroppedObjectsError
	// At is when the status was taken. Like every time above, it is read
	// from the informer's clock (WithClock); String measures durations up
	// to it, or up to now if it is zero.
	At time.Time
	// Shard is the informer's sharding (see WithShard); zero if it is not
	// sharded.
	Shard ShardStatus
}

// String summarises the status for a log line or an error message.
func (st SyncStatus) String() string {
	if st.Shard.Sharded {
		return st.syncString() + "; " + st.Shard.String()
	}
	return st.syncString()
}

func (st SyncStatus) syncString() string {
	now := st.At
	if now.IsZero() {
		now = time.Now()
	}
	since := func(t time.Time) time.Duration { return now.Sub(t).Round(time.Second) }
	switch {
	case st.Synced && st.Dropped != nil:
		return "synced, but " + st.Dropped.Error()
	case st.Synced:
		return "synced"
	case !st.Running:
		return "not running"
	case st.LastError == nil:
		return fmt.Sprintf("listing for %s, no error so far", since(st.Since))
	default:
		return fmt.Sprintf("not synced after %s: %s (%d failures, last %s ago: %v)",
			since(st.Since), st.Reason, st.Failures, since(st.LastErrorTime), st.LastError)
	}
}

// SyncStatus reports whether the informer has synced and, if not, why: the
// last list or watch error, explained. A controller stuck waiting for caches
// can log it instead of a bare "timed out".
func (s *SharedIndexInformer) SyncStatus() SyncStatus {
	st := s.diag.status(s.HasSynced())
	st.Shard = s.shard.status()
	return st
}

// syncDiagnostics keeps what SyncStatus reports. It is safe for concurrent
// use.
type syncDiagnostics struct {
	clock clock.PassiveClock

	mu sync.Mutex // guards st; taken alone
	st SyncStatus // Synced and At are filled in by status
}

func (d *syncDiagnostics) status(synced bool) SyncStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.st
	st.Synced, st.At = synced, d.clock.Now()
	return st
}

// running records that Run has started.
func (d *syncDiagnostics) running() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.Running, d.st.Since = true, d.clock.Now()
}

// stopped records that Run has returned.
func (d *syncDiagnostics) stopped() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.Running = false
}

// failed records a failed list or watch, and reason, the pipeline's
// description of it.
func (d *syncDiagnostics) failed(err error, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.LastError, d.st.LastErrorTime = err, d.clock.Now()
	d.st.Failures++
	d.st.Reason = reason
}

// listed forgets the errors a complete list has overcome, and the objects
// an earlier list was stored without.
func (d *syncDiagnostics) listed() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.LastError, d.st.LastErrorTime, d.st.Failures, d.st.Reason = nil, time.Time{}, 0, ""
	d.st.Dropped = nil
}

// droppedObjects records the objects the complete list just stored was
// stored without.
func (d *syncDiagnostics) droppedObjects(err *DroppedObjectsError) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.Dropped = err
}
