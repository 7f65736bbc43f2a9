package faultproxy

import "sync/atomic"

// Stats counts what went through a Proxy: requests by kind, as they arrived
// (faulted ones included), and the faults it injected.
type Stats struct {
	Requests RequestCounts
	Faults   FaultCounts
}

// RequestCounts counts requests by kind. A list is counted under Lists and,
// when it has them, under ListsWithLimit and ListsWithContinue; a watch
// under Watches and, with sendInitialEvents=true, under StreamingWatches.
type RequestCounts struct {
	Lists             int64
	ListsWithLimit    int64
	ListsWithContinue int64
	Watches           int64
	StreamingWatches  int64
	// Other is every other request (get, create, discovery, ...).
	Other int64
}

// FaultCounts counts injected faults.
type FaultCounts struct {
	Gone            int64
	TooManyRequests int64
	InternalError   int64
	Disconnects     int64
	Delays          int64
	// WatchesCut counts watch connections CutWatches dropped.
	WatchesCut int64
	// BlackHoled counts requests and open responses a black hole held.
	BlackHoled int64
}

// counters is Stats with atomic fields, updated from request goroutines.
type counters struct {
	lists, listsWithLimit, listsWithContinue, watches, streamingWatches, other atomic.Int64
	faults                                                                     [Delay + 1]atomic.Int64
	watchesCut, blackHoled                                                     atomic.Int64
}

func (c *counters) countRequest(info requestInfo) {
	switch info.verb {
	case List:
		c.lists.Add(1)
		if info.limited {
			c.listsWithLimit.Add(1)
		}
		if info.continued {
			c.listsWithContinue.Add(1)
		}
	case Watch:
		c.watches.Add(1)
		if info.streaming {
			c.streamingWatches.Add(1)
		}
	default:
		c.other.Add(1)
	}
}

func (c *counters) snapshot() Stats {
	return Stats{
		Requests: RequestCounts{
			Lists:             c.lists.Load(),
			ListsWithLimit:    c.listsWithLimit.Load(),
			ListsWithContinue: c.listsWithContinue.Load(),
			Watches:           c.watches.Load(),
			StreamingWatches:  c.streamingWatches.Load(),
			Other:             c.other.Load(),
		},
		Faults: FaultCounts{
			Gone:            c.faults[Gone].Load(),
			TooManyRequests: c.faults[TooManyRequests].Load(),
			InternalError:   c.faults[InternalError].Load(),
			Disconnects:     c.faults[Disconnect].Load(),
			Delays:          c.faults[Delay].Load(),
			WatchesCut:      c.watchesCut.Load(),
			BlackHoled:      c.blackHoled.Load(),
		},
	}
}
