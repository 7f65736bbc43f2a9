package main

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// slowHandlerDelay is how long the slow handler takes per call: about what
// a handler that makes one API request or writes to a database takes.
const slowHandlerDelay = time.Millisecond

// handler counts its calls and, while recording, measures the time from
// each update's write (the object's written-at annotation) to the call.
//
// A delay makes it a slow handler that takes delay per call, sleeping as a
// handler waiting on I/O would, without using CPU. A sleep overshoots, here
// by up to a millisecond or more (timer slack, a loaded machine): the next
// calls pay the overshoot back by sleeping less or not at all, so that the
// handler makes one call per delay on average when it has a backlog.
type handler struct {
	delay time.Duration
	// overslept is how much longer than their delay the previous calls
	// took; calls come one at a time, from the handler's own goroutine.
	overslept time.Duration

	adds, updates atomic.Int64
	recording     atomic.Bool
	// windowUpdates counts the updates received while recording.
	windowUpdates atomic.Int64
	unstamped     atomic.Int64
	lat           latencies

	// latest, when set, holds the newest write time (Unix ns) the handler
	// has seen of each object, so that catchUp can tell when it has heard of
	// every object's last write.
	latestMu sync.Mutex
	latest   map[string]int64
}

// trackingLatest returns a handler with delay that records the newest write
// it has seen of each object.
func trackingLatest(delay time.Duration) *handler {
	return &handler{delay: delay, latest: map[string]int64{}}
}

// OnAdd counts the add and, when tracking, records the write the object
// carries: an object last written before this child started (by an earlier
// child's window) is heard through its add, or catchUp would wait for an
// update that never comes.
func (h *handler) OnAdd(obj any, _ bool) {
	h.adds.Add(1)
	if t, stamped := writtenAt(obj); h.latest != nil && stamped {
		h.saw(obj, t.UnixNano())
	}
}

func (h *handler) OnDelete(any) {}

func (h *handler) OnUpdate(_, newObj any) {
	now := time.Now()
	t, stamped := writtenAt(newObj)
	if h.recording.Load() {
		h.windowUpdates.Add(1)
		if stamped {
			h.lat.record(now.Sub(t))
		} else {
			h.unstamped.Add(1)
		}
	}
	if h.latest != nil && stamped {
		h.saw(newObj, t.UnixNano())
	}
	h.updates.Add(1)
	if h.delay > 0 {
		h.takeDelay(now)
	}
}

// takeDelay makes a call that began at start last its delay, less what
// earlier calls overslept.
func (h *handler) takeDelay(start time.Time) {
	wait := h.delay - h.overslept
	if wait <= 0 {
		h.overslept = -wait
		return
	}
	due := start.Add(wait)
	time.Sleep(time.Until(due))
	h.overslept = max(0, time.Since(due))
}

func (h *handler) saw(obj any, written int64) {
	key, err := toolscache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	h.latestMu.Lock()
	defer h.latestMu.Unlock()
	h.latest[key] = max(h.latest[key], written)
}

// heardAll reports whether h has seen the last write of every object in
// objs (objects never written count as heard).
func (h *handler) heardAll(objs []any) bool {
	h.latestMu.Lock()
	defer h.latestMu.Unlock()
	for _, obj := range objs {
		t, ok := writtenAt(obj)
		if !ok {
			continue
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			continue
		}
		if h.latest[m.GetNamespace()+"/"+m.GetName()] < t.UnixNano() {
			return false
		}
	}
	return true
}
