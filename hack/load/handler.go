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
