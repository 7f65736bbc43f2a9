package main

import (
	"sync/atomic"
	"time"
)

// slowHandlerDelay is how long the slow handler takes per call: about what
// a handler that makes one API request or writes to a database takes.
const slowHandlerDelay = time.Millisecond

// handler counts its calls and, while recording, measures the time from
// each update's write (the object's written-at annotation) to the call.
//
// A delay makes it a slow handler: each call is busy for delay after the
// previous one's end (or its own start, if later), sleeping as a handler
// waiting on I/O would, without using CPU. A sleep here overshoots by up to
// a millisecond or so (timer slack, a loaded machine); a call that starts
// past its busy time does not sleep, so a backlogged handler makes one call
// per delay on average, whatever the overshoot.
type handler struct {
	delay time.Duration
	// busyUntil is when the current call's delay ends; calls come one at a
	// time, from the handler's own goroutine.
	busyUntil time.Time

	adds, updates atomic.Int64
	recording     atomic.Bool
	// windowUpdates counts the updates received while recording.
	windowUpdates atomic.Int64
	unstamped     atomic.Int64
	lat           latencies
}

func (h *handler) OnAdd(any, bool) { h.adds.Add(1) }
func (h *handler) OnDelete(any)    {}

func (h *handler) OnUpdate(_, newObj any) {
	now := time.Now()
	if h.recording.Load() {
		h.windowUpdates.Add(1)
		if t, ok := writtenAt(newObj); ok {
			h.lat.record(now.Sub(t))
		} else {
			h.unstamped.Add(1)
		}
	}
	h.updates.Add(1)
	if h.delay > 0 {
		h.busyUntil = later(h.busyUntil, now).Add(h.delay)
		if d := time.Until(h.busyUntil); d > 0 {
			time.Sleep(d)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
