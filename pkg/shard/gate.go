package shard

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// gate is what the member's work consults before it starts on a hash: the
// Range served now, until when it may be served without a renewed Lease,
// and the work in flight. Its lock makes "check the range, count the work"
// and "shrink the range, see the work left" exclusive, so no work starts on
// a hash after the member stopped serving it.
//
// No clock method is called with mu held: a fake clock runs AfterFunc
// callbacks under its own lock, and the watchdog's callback takes mu.
type gate struct {
	clock clock.WithDelayedExecution

	mu      sync.Mutex
	serving Range
	// assigned is what the assignment gives the member, served or not yet;
	// assignedYet says the member has computed one (or retired).
	assigned    Range
	assignedYet bool
	// validUntil is when the member must stop serving unless its Lease was
	// renewed: the send time of the last acknowledged write plus the renew
	// deadline. begin checks it, and a watchdog timer cancels the work in
	// flight then, so that a member whose loop is stuck in a slow request
	// still stops in time.
	validUntil time.Time
	watchdog   clock.Timer
	generation uint64 // of validUntil, so that a stale watchdog does nothing
	inflight   map[*work]struct{}
	// changed is closed and replaced whenever serving changes.
	changed chan struct{}
	// drained is signalled (without blocking) when work ends, for the loop.
	drained chan struct{}
	// gainSubs are told every hash serving gains (Handovers sources).
	gainSubs map[*gainSub]struct{}
}

// gainSub accumulates what serving gained since its owner last took it:
// a hash lost and regained between two takes is still reported, which a
// reader of snapshot, seeing only the first and last ranges, would miss.
type gainSub struct {
	pending Range
	signal  chan struct{} // holds a value while pending may be non-empty
}

// work is one piece of work on a hash.
type work struct {
	hash   uint64
	cancel context.CancelFunc
}

func newGate(clk clock.WithDelayedExecution) *gate {
	return &gate{
		clock:    clk,
		inflight: make(map[*work]struct{}),
		changed:  make(chan struct{}),
		drained:  make(chan struct{}, 1),
		gainSubs: make(map[*gainSub]struct{}),
	}
}

// subscribeGains returns a subscription to the hashes serving gains from
// now on; unsubscribe it when done.
func (g *gate) subscribeGains() *gainSub {
	s := &gainSub{signal: make(chan struct{}, 1)}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gainSubs[s] = struct{}{}
	return s
}

func (g *gate) unsubscribeGains(s *gainSub) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.gainSubs, s)
}

// takeGains returns what serving gained since the last take, and forgets it.
func (g *gate) takeGains(s *gainSub) Range {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := s.pending
	s.pending = Range{}
	return r
}

// changeServing makes r the served range; mu is held.
func (g *gate) changeServing(r Range) {
	if g.serving.Equal(r) {
		return
	}
	if gained := r.Minus(g.serving); !gained.Empty() {
		for s := range g.gainSubs {
			s.pending = s.pending.Union(gained)
			select {
			case s.signal <- struct{}{}:
			default:
			}
		}
	}
	g.serving = r
	close(g.changed)
	g.changed = make(chan struct{})
}

// begin starts work on hash h if it is served now. The context it returns
// is ctx, cancelled as well when the member is fenced (its Lease could not
// be renewed in time); done ends the work and must be called.
func (g *gate) begin(ctx context.Context, h uint64) (context.Context, func(), bool) {
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.serving.Contains(h) || !now.Before(g.validUntil) {
		return ctx, func() {}, false
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &work{hash: h, cancel: cancel}
	g.inflight[w] = struct{}{}
	var once sync.Once
	return ctx, func() { once.Do(func() { g.end(w) }) }, true
}

func (g *gate) end(w *work) {
	w.cancel()
	g.mu.Lock()
	delete(g.inflight, w)
	g.mu.Unlock()
	select {
	case g.drained <- struct{}{}:
	default:
	}
}

// set makes r the served range, valid until validUntil.
func (g *gate) set(r Range, validUntil time.Time) {
	g.mu.Lock()
	g.changeServing(r)
	if validUntil.Equal(g.validUntil) {
		g.mu.Unlock()
		return
	}
	g.validUntil = validUntil
	g.generation++
	generation, old := g.generation, g.watchdog
	g.watchdog = nil
	g.mu.Unlock()

	if old != nil {
		old.Stop()
	}
	if validUntil.IsZero() {
		g.expire(generation)
		return
	}
	t := g.clock.AfterFunc(validUntil.Sub(g.clock.Now()), func() { g.expire(generation) })
	g.mu.Lock()
	stale := g.generation != generation
	if !stale {
		g.watchdog = t
	}
	g.mu.Unlock()
	if stale {
		t.Stop() // a newer validUntil armed its own watchdog meanwhile
	}
}

// expire stops serving and cancels the work in flight if validUntil has
// not moved since the watchdog of generation was armed. A renewal that
// lands later restores the range (the core sets it again).
func (g *gate) expire(generation uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if generation != g.generation {
		return
	}
	g.changeServing(Range{})
	for w := range g.inflight {
		w.cancel()
	}
}

// assign records what the assignment gives the member.
func (g *gate) assign(r Range) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.assigned, g.assignedYet = r, true
}

// fence stops serving at once and cancels the work in flight: the member
// can no longer prove to the others that it is alive.
func (g *gate) fence() { g.set(Range{}, time.Time{}) }

// retire is fence for a member whose Start has returned: it is assigned
// nothing either, so that a Reconciler drops its requests rather than
// retrying them for as long as the process runs.
func (g *gate) retire() {
	g.fence()
	g.assign(Range{})
}

// busy is the set of buckets (of n) that hold work in flight outside
// serving: what the member must keep published until that work ends.
func (g *gate) busy(n int) Range {
	g.mu.Lock()
	defer g.mu.Unlock()
	var spans []span
	for w := range g.inflight {
		if !g.serving.Contains(w.hash) {
			spans = append(spans, bucketRange(bucketOf(w.hash, n), n).spans[0])
		}
	}
	return normalize(spans)
}

// snapshot is the served range and a channel closed when it next changes.
func (g *gate) snapshot() (Range, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.serving, g.changed
}
