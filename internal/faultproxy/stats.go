package faultproxy

import (
	"net/http"
	"sync/atomic"
)

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
	// Disconnects counts responses cut short: a Disconnect whose response
	// body ended within AfterBytes went through whole and is not counted.
	Disconnects int64
	Delays      int64
	// WatchesCut counts watch connections CutWatches dropped.
	WatchesCut int64
	// BlackHoled counts requests and open responses a black hole held.
	BlackHoled int64
	// Garbled counts responses Garble replaced with an undecodable body
	// (not a request the API server could not be asked, which gets a 502).
	Garbled int64
}

// RequestCounter counts requests by kind on the client side, the way a
// Proxy does: wrap a rest.Config's transport with Wrap to compare what a
// client sent with what the proxy saw. Its methods are safe for concurrent use.
type RequestCounter struct{ c counters }

// Count counts r.
func (rc *RequestCounter) Count(r *http.Request) { rc.c.countRequest(ParseRequest(r)) }

// Counts returns the counts so far.
func (rc *RequestCounter) Counts() RequestCounts { return rc.c.snapshot().Requests }

// Wrap returns a RoundTripper that counts every request, then sends it
// through rt; its signature fits rest.Config's WrapTransport.
func (rc *RequestCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		rc.Count(r)
		return rt.RoundTrip(r)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// counters is Stats with atomic fields, updated from request goroutines.
type counters struct {
	lists, listsWithLimit, listsWithContinue, watches, streamingWatches, other atomic.Int64
	faults                                                                     [Garble + 1]atomic.Int64
	watchesCut, blackHoled                                                     atomic.Int64
}

func (c *counters) countRequest(info RequestInfo) {
	switch info.Verb {
	case List:
		c.lists.Add(1)
		if info.Limited {
			c.listsWithLimit.Add(1)
		}
		if info.Continued {
			c.listsWithContinue.Add(1)
		}
	case Watch:
		c.watches.Add(1)
		if info.Streaming {
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
			Garbled:         c.faults[Garble].Load(),
			WatchesCut:      c.watchesCut.Load(),
			BlackHoled:      c.blackHoled.Load(),
		},
	}
}
