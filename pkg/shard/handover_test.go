package shard

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// The scenario tests pin the timing rules the model test exercises at
// random: when a member that can no longer renew stops, and when another
// may take its range over.

// TestFencedMemberStopsBeforeTakeover: a member whose renewals stop
// (partitioned from the API server, or with its loop stuck) has its work
// cancelled at the renew deadline after the send time of its last
// acknowledged renewal, and the other member serves its range only a lease
// duration after that renewal: the margin between the two is what work
// has to notice the cancellation.
func TestFencedMemberStopsBeforeTakeover(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(a *simReplica, now time.Time)
	}{
		{"partitioned", func(a *simReplica, now time.Time) { a.partitionedUntil = now.Add(time.Hour) }},
		// Only the gate's watchdog can cancel the work of a stuck loop.
		{"loop stuck", func(a *simReplica, now time.Time) { a.stalledUntil = now.Add(time.Hour) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tightModelParams()
			w := newWorld(t, 1, p)
			w.quiet = true
			// Acknowledgements of a's writes are slow: its deadline must
			// count from when it sent a renewal, not from when it heard back.
			const slowAck = 400 * time.Millisecond
			w.latency = func(r *simReplica, req request) (time.Duration, time.Duration) {
				if r.id == "a" && req.kind == reqWrite {
					return 0, slowAck
				}
				return time.Millisecond, time.Millisecond
			}
			a, b := w.start("a"), w.start("b")
			w.converge("start")
			h, ok := servedHash(w, a)
			if !ok {
				t.Fatal("a serves none of the model's hashes")
			}
			// Work that ends only when cancelled.
			ctx, done, ok := a.gate.begin(context.Background(), h)
			if !ok {
				t.Fatal("a refused work on a hash it serves")
			}
			a.inflight = append(a.inflight, &simWork{r: a, hash: h, start: w.clk.Now(), ctx: ctx, done: done, naturalEnd: w.clk.Now().Add(time.Hour)})
			// Let a renew once more with nothing in flight, then cut it off.
			for a.pending != nil || w.clk.Since(a.core.own.lastRenew) > slowAck+10*time.Millisecond {
				w.step(time.Millisecond)
			}
			tc.fault(a, w.clk.Now())
			lastRenew := a.core.own.lastRenew

			var cancelledAt, takenAt time.Time
			for takenAt.IsZero() && w.clk.Since(lastRenew) < 3*p.leaseDuration {
				w.step(time.Millisecond)
				if cancelledAt.IsZero() && ctx.Err() != nil {
					cancelledAt = w.clk.Now()
				}
				if served, _ := b.gate.snapshot(); served.Contains(h) {
					takenAt = w.clk.Now()
				}
			}
			switch {
			case cancelledAt.IsZero():
				t.Fatalf("a's work was never cancelled (last renewal sent %v)", lastRenew)
			case takenAt.IsZero():
				t.Fatalf("b never took the range over")
			}
			if late := cancelledAt.Sub(lastRenew.Add(p.renewDeadline)); late > 2*time.Millisecond {
				t.Errorf("a's work was cancelled %v after its renew deadline (last renewal sent %v)", late, lastRenew)
			}
			if margin := takenAt.Sub(cancelledAt); margin < p.leaseDuration-p.renewDeadline-2*time.Millisecond {
				t.Errorf("b took a's range %v after a's work was cancelled, want at least the lease duration minus the renew deadline (%v)",
					margin, p.leaseDuration-p.renewDeadline)
			}
		})
	}
}

// servedHash is a hash of the model's objects that r serves.
func servedHash(w *world, r *simReplica) (uint64, bool) {
	served, _ := r.gate.snapshot()
	for _, h := range w.hashes {
		if served.Contains(h) {
			return h, true
		}
	}
	return 0, false
}

// TestNoWorkAfterRenewDeadline: a member's own check refuses work once its
// renew deadline has passed, even before its loop has run to fence it.
func TestNoWorkAfterRenewDeadline(t *testing.T) {
	w := newWorld(t, 2, defaultModelParams())
	g := newGate(w.clk)
	g.set(FullRange(), w.clk.Now().Add(time.Second))
	if _, done, ok := g.begin(context.Background(), 42); !ok {
		t.Fatal("work refused before the deadline")
	} else {
		done()
	}
	w.clk.Step(time.Second)
	if _, _, ok := g.begin(context.Background(), 42); ok {
		t.Fatal("work accepted at the renew deadline")
	}
}

// TestLostClaimRaceBacksOff: a member whose claim another member
// published first withdraws it and claims nothing again until a jittered
// pause has passed, so that racing claimants do not meet again at once.
func TestLostClaimRaceBacksOff(t *testing.T) {
	p := defaultModelParams()
	w := newWorld(t, 3, p)
	a := w.start("a")
	c := a.core
	now := w.clk.Now()
	c.gotOwn(now, request{kind: reqGetOwn}, nil, errNotFound)
	req := c.next(now)
	if req.kind != reqWrite || !req.claims.Equal(FullRange()) {
		t.Fatalf("alone, a first writes a claim of everything; got %v claiming %s", req.kind, req.claims)
	}
	c.wrote(now, req, "1", nil)
	if req = c.next(now); req.kind != reqVerify {
		t.Fatalf("after its claim, a verifies; got %v", req.kind)
	}
	// b published everything meanwhile.
	other := w.start("b").cfg.buildLease(nil, "2", FullRange(), now)
	c.listed(now, req, []leaseRecord{recordOf(other, KeyUID, p.leaseDuration)}, nil)
	if !c.serving.Empty() {
		t.Fatalf("a serves %s after losing the race", c.serving)
	}
	if c.claimAfter.Sub(now) < p.renewInterval/2 {
		t.Fatalf("a may claim again after %v, want at least half the renew interval", c.claimAfter.Sub(now))
	}
	req = c.next(now)
	if req.kind != reqWrite || !req.publish.Empty() || !req.claims.Empty() {
		t.Fatalf("a withdraws its claim; got %v publishing %q claiming %q", req.kind, req.publish, req.claims)
	}
	c.wrote(now, req, "3", nil)
	// b leaves (a clean stop: it publishes an empty range, then deletes its
	// Lease): its range is free, but a waits out the pause.
	released := w.start("b").cfg.buildLease(nil, "4", Range{}, now)
	c.observe(now, []leaseRecord{recordOf(released, KeyUID, p.leaseDuration)})
	c.observe(now, nil)
	if req = c.next(now); !req.claims.Empty() {
		t.Fatalf("a claims %s before its pause ended", req.claims)
	}
	if req = c.next(c.claimAfter); req.kind != reqWrite || !req.claims.Equal(FullRange()) {
		t.Fatalf("after the pause a claims everything; got %v claiming %s", req.kind, req.claims)
	}
}

// TestMemberWhoseLeaseIsGoneClaimsAgain: a member that finds its own Lease
// gone (a renewal fails, and the Lease reads as not found) stops serving at
// once, cancelling its work, and re-creates its Lease with a claim that it
// serves only after the verifying LIST, as a newcomer would: the others may
// have taken its range over meanwhile.
func TestMemberWhoseLeaseIsGoneClaimsAgain(t *testing.T) {
	p := defaultModelParams()
	w := newWorld(t, 3, p)
	a := w.start("a")
	c := a.core
	now := w.clk.Now()
	c.gotOwn(now, request{kind: reqGetOwn}, nil, errNotFound)
	req := c.next(now)
	c.wrote(now, req, "1", nil)
	c.listed(now, c.next(now), nil, nil)
	if !c.serving.Equal(FullRange()) {
		t.Fatalf("alone, a serves %s", c.serving)
	}
	ctx, done, ok := c.gate.begin(context.Background(), 42)
	if !ok {
		t.Fatal("work refused on a served hash")
	}
	defer done()

	now = now.Add(p.renewInterval)
	req = c.next(now)
	if req.kind != reqWrite || req.create {
		t.Fatalf("a renews; got %v (create %v)", req.kind, req.create)
	}
	c.wrote(now, req, "", errNotFound)
	now = now.Add(p.renewInterval)
	if req = c.next(now); req.kind != reqGetOwn {
		t.Fatalf("after a failed renewal a reads its Lease; got %v", req.kind)
	}
	c.gotOwn(now, req, nil, errNotFound)
	if !c.serving.Empty() || !a.gate.serving.Empty() || ctx.Err() == nil {
		t.Fatalf("a's Lease is gone, yet a serves %s (gate %s), work cancelled: %v", c.serving, a.gate.serving, ctx.Err())
	}
	req = c.next(now)
	if req.kind != reqWrite || !req.create || !req.claims.Equal(FullRange()) {
		t.Fatalf("a re-creates its Lease with a claim of everything; got %v (create %v) claiming %q", req.kind, req.create, req.claims)
	}
	c.wrote(now, req, "5", nil)
	if !c.serving.Empty() {
		t.Fatalf("a serves %s before verifying its claim", c.serving)
	}
	if req = c.next(now); req.kind != reqVerify {
		t.Fatalf("a verifies its claim; got %v", req.kind)
	}
}

// TestPredecessorRangeWaitsOneLeaseDuration: a new process that finds its
// Lease held by an earlier process of its identity keeps that one's range
// published, and unclaimed, until the Lease would have expired: a lease
// duration after it first saw the earlier process's last renewal. Its
// updates failing with 409s (someone else wrote the Lease meanwhile, say
// an annotation) make it read the Lease again, which must not push that
// time on while the earlier process has not renewed.
func TestPredecessorRangeWaitsOneLeaseDuration(t *testing.T) {
	p := defaultModelParams()
	w := newWorld(t, 4, p)
	a := w.start("a")
	c := a.core
	start := w.clk.Now()
	earlier, err := newConfig("ns", "ctl", []Option{WithIdentity("a"), WithLeaseDuration(p.leaseDuration), WithRenewDeadline(p.renewDeadline), WithRenewInterval(p.renewInterval)})
	if err != nil {
		t.Fatal(err)
	}
	held := earlier.buildLease(nil, "1", FullRange(), start.Add(-time.Second))
	rec := recordOf(held, KeyUID, p.leaseDuration)
	c.gotOwn(start, request{kind: reqGetOwn}, &rec, nil)
	if !c.inherited(start).Equal(FullRange()) {
		t.Fatalf("the earlier process's range is not kept: %s", c.inherited(start))
	}
	// Every update conflicts: another writer annotates the Lease (a new
	// resourceVersion, the same holder and renewal) between each read and
	// write.
	now, rv := start, 1
	for now.Before(start.Add(2 * p.leaseDuration)) {
		req := c.next(now)
		switch req.kind {
		case reqWrite:
			if !req.claims.Empty() && now.Before(start.Add(p.leaseDuration)) {
				t.Fatalf("at %v a claims %s while the earlier process's Lease may be live", now.Sub(start), req.claims)
			}
			c.wrote(now, req, "", errConflict)
		case reqGetOwn:
			rv++
			annotated := held.DeepCopy()
			annotated.ResourceVersion = strconv.Itoa(rv)
			annotated.Annotations["example.com/note"] = strconv.Itoa(rv)
			rec := recordOf(annotated, KeyUID, p.leaseDuration)
			c.gotOwn(now, req, &rec, nil)
		}
		now = now.Add(p.renewInterval / 4)
	}
	if kept := c.inherited(now); !kept.Empty() {
		t.Fatalf("%v after a first saw the earlier process's Lease, not renewed since (lease duration %v), a still keeps its range %s",
			now.Sub(start), p.leaseDuration, kept)
	}
}
