package shard

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// The model test runs the members' cores (the code the Member's loop
// drives) against a simulated API server, with simulated time, watch
// delays, request latencies, lost responses and late commits, crashes,
// restarts under the same identity, clean stops, joins, partitions, stalled
// loops and big clock steps. It checks, at every step, that no two running
// replicas may serve the same hash at once (their served ranges, while
// valid, and the hashes of their work in flight are disjoint), and that no
// two pieces of work on one hash by different replicas overlap in time;
// then that a quiet group converges on the assignment, and that a crashed
// member's range is served again within the lease duration plus a bounded
// slack.

// modelParams are the durations of one run.
type modelParams struct {
	leaseDuration, renewDeadline, renewInterval time.Duration
	maxLatency, requestTimeout, maxWatchDelay   time.Duration
	maxWork, cancelLatency                      time.Duration
	tick                                        time.Duration
	buckets                                     int
	maxReplicas                                 int
}

// tightModelParams has fast requests and watches and work that takes
// almost the whole margin between the renew deadline and the lease
// duration to notice a cancellation: hand-overs after an expiry are as
// close as the rules allow.
func tightModelParams() modelParams {
	p := defaultModelParams()
	p.maxLatency, p.maxWatchDelay, p.tick = 10*time.Millisecond, 10*time.Millisecond, 10*time.Millisecond
	p.cancelLatency = p.leaseDuration - p.renewDeadline - 50*time.Millisecond
	return p
}

func defaultModelParams() modelParams {
	return modelParams{
		leaseDuration: 3 * time.Second, renewDeadline: 2500 * time.Millisecond, renewInterval: 500 * time.Millisecond,
		maxLatency: 150 * time.Millisecond, requestTimeout: 500 * time.Millisecond, maxWatchDelay: 200 * time.Millisecond,
		maxWork: 400 * time.Millisecond, cancelLatency: 400 * time.Millisecond, tick: 20 * time.Millisecond,
		buckets: 16, maxReplicas: 5,
	}
}

type change struct {
	at    time.Time
	name  string
	lease *coordinationv1.Lease // nil: deleted
}

type world struct {
	t      testing.TB
	rng    *rand.Rand
	clk    *testingclock.FakeClock
	p      modelParams
	leases map[string]*coordinationv1.Lease
	rv     uint64
	log    []change

	replicas []*simReplica
	nextID   int
	hashes   []uint64 // the objects work is done on
	// works of every replica by hash, for the interval check.
	works map[uint64][]*simWork
	trace []string // the last events, printed on a failure
	quiet bool     // no faults: no slow or failing requests
	// latency, when set, gives the latencies to and from the server of a
	// request instead of random ones.
	latency func(r *simReplica, req request) (up, down time.Duration)
}

type simReplica struct {
	w         *world
	id        string
	cfg       *config
	gate      *gate
	core      *core
	up        bool
	view      map[string]*coordinationv1.Lease
	viewDirty bool
	cursor    int

	watchDelay       time.Duration
	partitionedUntil time.Time
	stalledUntil     time.Time
	stopDeadline     time.Time
	pending          *simRequest
	wakeAt           time.Time
	inflight         []*simWork
}

type simRequest struct {
	req       request
	commitAt  time.Time
	respondAt time.Time
	committed bool
	fail      bool // the request never reaches the server
	lost      bool // it reaches the server, the response is an error
	// results, set at commit
	rv   string
	rec  *leaseRecord
	recs []leaseRecord
	err  error
}

type simWork struct {
	r          *simReplica
	hash       uint64
	start, end time.Time
	ctx        context.Context
	done       func()
	naturalEnd time.Time
	// stopAt is when work that saw its context cancelled ends: it takes
	// up to cancelLatency to notice.
	stopAt time.Time
	ended  bool
}

func newWorld(t testing.TB, seed uint64, p modelParams) *world {
	w := &world{
		t:      t,
		rng:    rand.New(rand.NewPCG(seed, 0x7e57)),
		clk:    testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		p:      p,
		leases: make(map[string]*coordinationv1.Lease),
		works:  make(map[uint64][]*simWork),
	}
	for range 24 {
		w.hashes = append(w.hashes, w.rng.Uint64())
	}
	return w
}

func (w *world) tracef(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf("%7.3fs ", w.clk.Since(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).Seconds())+fmt.Sprintf(format, args...))
	if len(w.trace) > 400 {
		w.trace = w.trace[len(w.trace)-300:]
	}
}

func (w *world) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("%s\nlast events:\n%s", fmt.Sprintf(format, args...), strings.Join(w.trace, "\n"))
}

// start runs a new process under identity id.
func (w *world) start(id string) *simReplica {
	cfg, err := newConfig("ns", "ctl", []Option{
		WithIdentity(id), WithLeaseDuration(w.p.leaseDuration), WithRenewDeadline(w.p.renewDeadline),
		WithRenewInterval(w.p.renewInterval), WithBuckets(w.p.buckets), WithClock(w.clk),
		WithLogger(funcr.New(func(prefix, args string) { w.tracef("%s %s", prefix, args) }, funcr.Options{Verbosity: 1})),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	g := newGate(w.clk)
	r := &simReplica{
		w: w, id: id, cfg: cfg, gate: g, core: newCore(cfg, g, w.rng.Uint64()), up: true,
		view: make(map[string]*coordinationv1.Lease), viewDirty: true,
		watchDelay: time.Duration(w.rng.Int64N(int64(w.p.maxWatchDelay) + 1)),
	}
	// A new process lists the group first: its view starts current.
	for name, l := range w.leases {
		r.view[name] = l
	}
	r.cursor = len(w.log)
	w.replicas = append(w.replicas, r)
	w.tracef("start %s (holder %s)", cfg.leaseName, cfg.holder)
	return r
}

func (w *world) newIdentity() string {
	w.nextID++
	return "r" + strconv.Itoa(w.nextID)
}

// crash ends a process at once: its work ends, its Lease stays.
func (w *world) crash(r *simReplica) {
	r.up = false
	for _, wk := range r.inflight {
		w.endWork(wk)
	}
	r.inflight = nil
	r.gate.fence()
	w.tracef("crash %s", r.cfg.leaseName)
}

// running is the replicas whose process runs.
func (w *world) running() []*simReplica {
	var out []*simReplica
	for _, r := range w.replicas {
		if r.up {
			out = append(out, r)
		}
	}
	return out
}

// step advances the world by dt.
func (w *world) step(dt time.Duration) {
	w.clk.Step(dt) // watchdogs fire here, at their time
	now := w.clk.Now()

	// Work ends: naturally, or once cancelled (the watchdog, a fence).
	for _, r := range w.running() {
		kept := r.inflight[:0]
		for _, wk := range r.inflight {
			switch {
			case !wk.naturalEnd.After(now):
				wk.end = wk.naturalEnd
				w.endWork(wk)
			case wk.ctx.Err() != nil && wk.stopAt.IsZero():
				wk.stopAt = now.Add(time.Duration(w.rng.Int64N(int64(w.p.cancelLatency) + 1)))
				kept = append(kept, wk)
			case !wk.stopAt.IsZero() && !wk.stopAt.After(now):
				wk.end = now
				w.endWork(wk)
			default:
				kept = append(kept, wk)
			}
		}
		r.inflight = kept
	}

	// Requests reach the server in the order they were committed.
	var commits []*simReplica
	for _, r := range w.replicas {
		if p := r.pending; p != nil && !p.committed && !p.fail && !p.commitAt.After(now) {
			commits = append(commits, r)
		}
	}
	slices.SortFunc(commits, func(a, b *simReplica) int { return a.pending.commitAt.Compare(b.pending.commitAt) })
	for _, r := range commits {
		w.commit(r, r.pending)
	}

	// Watches deliver what happened watchDelay ago.
	for _, r := range w.running() {
		if now.Before(r.partitionedUntil) {
			continue
		}
		for r.cursor < len(w.log) && !w.log[r.cursor].at.Add(r.watchDelay).After(now) {
			c := w.log[r.cursor]
			if c.lease == nil {
				delete(r.view, c.name)
			} else {
				r.view[c.name] = c.lease
			}
			r.cursor++
			r.viewDirty = true
		}
	}

	// Responses, then the loops of the running replicas.
	order := w.rng.Perm(len(w.replicas))
	for _, i := range order {
		r := w.replicas[i]
		if r.up && !now.Before(r.stalledUntil) {
			w.runLoop(r, now)
		} else if !r.up && r.pending != nil && (r.pending.committed || r.pending.fail || !now.Before(r.pending.respondAt)) {
			r.pending = nil // a dead process gets no response
		}
	}

	// New work on random objects.
	for _, r := range w.running() {
		if w.rng.IntN(2) != 0 {
			continue
		}
		h := w.hashes[w.rng.IntN(len(w.hashes))]
		ctx, done, ok := r.gate.begin(context.Background(), h)
		if !ok {
			continue
		}
		d := time.Duration(w.rng.Int64N(int64(w.p.maxWork)) + 1)
		if !w.quiet && w.rng.IntN(10) == 0 {
			d = 2 * w.p.leaseDuration // long work: only its cancellation ends it in time
		}
		wk := &simWork{r: r, hash: h, start: now, ctx: ctx, done: done, naturalEnd: now.Add(d)}
		r.inflight = append(r.inflight, wk)
		w.checkWorkStart(wk)
		w.works[h] = append(w.works[h], wk)
	}
	w.checkExclusive(now)
}

// runLoop is the Member's loop for one replica at now: take a response,
// then ask the core for requests until it has none or one is in flight.
func (w *world) runLoop(r *simReplica, now time.Time) {
	if p := r.pending; p != nil {
		if now.Before(p.respondAt) || (!p.committed && !p.fail) {
			return
		}
		r.pending = nil
		w.respond(r, p, now)
		r.viewDirty = true
	}
	if !r.viewDirty && now.Before(r.wakeAt) {
		return
	}
	r.viewDirty = false
	for {
		if r.core.finished || r.core.lost != nil {
			if r.core.lost != nil {
				w.tracef("%s lost its Lease: %v", r.cfg.leaseName, r.core.lost)
			}
			w.crash(r)
			return
		}
		r.core.observe(now, w.records(r.view))
		req := r.core.next(now)
		if req.kind == reqNone {
			// The Member arms a timer for wakeAt: one that is not ahead
			// of now, with nothing to send, would spin its loop.
			r.wakeAt = r.core.wakeAt(now)
			if !r.core.finished && r.core.lost == nil && !r.wakeAt.After(now) {
				w.fail("%s has nothing to send but would wake again at once (wakeAt %v, now %v)", r.cfg.leaseName, r.wakeAt, now)
			}
			return
		}
		if p := w.send(r, req, now); p != nil {
			r.pending = p
			return
		}
	}
}

func (w *world) records(view map[string]*coordinationv1.Lease) []leaseRecord {
	out := make([]leaseRecord, 0, len(view))
	for _, l := range view {
		out = append(out, recordOf(l, KeyUID, w.p.leaseDuration))
	}
	return out
}

// send schedules req: it reaches the server after a latency (or never,
// during a partition), and its response comes back after another one, or
// as a timeout error after the request timeout.
func (w *world) send(r *simReplica, req request, now time.Time) *simRequest {
	lat := func() time.Duration {
		if !w.quiet && w.rng.IntN(20) == 0 { // now and then a slow one, past the timeout
			return time.Duration(w.rng.Int64N(int64(3 * w.p.requestTimeout)))
		}
		return time.Duration(w.rng.Int64N(int64(w.p.maxLatency) + 1))
	}
	p := &simRequest{req: req}
	up, down := lat(), lat()
	if w.latency != nil {
		up, down = w.latency(r, req)
	}
	p.commitAt = now.Add(up)
	p.respondAt = p.commitAt.Add(down)
	switch {
	case now.Before(r.partitionedUntil):
		p.fail = true
		p.respondAt = now.Add(w.p.requestTimeout)
	case !w.quiet && w.rng.IntN(25) == 0:
		p.lost = true // it lands, the client sees an error
	}
	if p.respondAt.Sub(now) > w.p.requestTimeout {
		p.lost = true // the client gave up; the server may still commit
		p.respondAt = now.Add(w.p.requestTimeout)
	}
	return p
}

// commit applies a request to the server.
func (w *world) commit(r *simReplica, p *simRequest) {
	p.committed = true
	now := w.clk.Now()
	req := p.req
	switch req.kind {
	case reqGetOwn:
		if l := w.leases[req.name]; l != nil {
			rec := recordOf(l, KeyUID, w.p.leaseDuration)
			p.rec = &rec
		} else {
			p.err = errNotFound
		}
	case reqWrite:
		cur := w.leases[req.name]
		switch {
		case req.create && cur != nil:
			p.err = errConflict
		case !req.create && cur == nil:
			p.err = errNotFound
		case !req.create && cur.ResourceVersion != req.rv:
			p.err = errConflict
		default:
			w.rv++
			l := r.cfg.buildLease(cur, strconv.FormatUint(w.rv, 10), req.publish, now)
			w.leases[req.name] = l
			w.log = append(w.log, change{at: now, name: req.name, lease: l})
			p.rv = l.ResourceVersion
			w.tracef("%s wrote %s rv %s: %s (claims %s)", r.cfg.holder, req.name, l.ResourceVersion, req.publish, req.claims)
		}
	case reqVerify:
		p.recs = w.records(w.leases)
	case reqDeleteOwn, reqDeletePeer:
		cur := w.leases[req.name]
		switch {
		case cur == nil:
			p.err = errNotFound
		case cur.ResourceVersion != req.rv:
			p.err = errConflict
		default:
			delete(w.leases, req.name)
			w.log = append(w.log, change{at: now, name: req.name})
			w.tracef("%s deleted %s", r.cfg.holder, req.name)
		}
	}
}

// respond hands a request's result to the core.
func (w *world) respond(r *simReplica, p *simRequest, now time.Time) {
	err := p.err
	if p.fail || p.lost {
		err = fmt.Errorf("request failed (committed %v)", p.committed)
	}
	switch p.req.kind {
	case reqGetOwn:
		r.core.gotOwn(now, p.req, p.rec, err)
	case reqWrite:
		r.core.wrote(now, p.req, p.rv, err)
	case reqVerify:
		r.core.listed(now, p.req, p.recs, err)
	case reqDeleteOwn, reqDeletePeer:
		r.core.deleted(now, p.req, err)
	}
}

// adminDelete is a DELETE of a Lease by someone else: a Lease with a
// finalizer only becomes terminating.
func (w *world) adminDelete(name string) {
	now := w.clk.Now()
	cur := w.leases[name]
	if len(cur.Finalizers) == 0 {
		delete(w.leases, name)
		w.log = append(w.log, change{at: now, name: name})
		w.tracef("someone deleted %s", name)
		return
	}
	l := cur.DeepCopy()
	w.rv++
	l.ResourceVersion = strconv.FormatUint(w.rv, 10)
	t := metav1.NewTime(now)
	l.DeletionTimestamp = &t
	w.leases[name] = l
	w.log = append(w.log, change{at: now, name: name, lease: l})
	w.tracef("someone deleted %s: terminating, rv %s", name, l.ResourceVersion)
}

func (w *world) endWork(wk *simWork) {
	if wk.ended {
		return
	}
	if wk.end.IsZero() {
		wk.end = w.clk.Now()
	}
	wk.ended = true
	wk.done()
}

// checkWorkStart fails when new work on a hash starts while work on it by
// another replica has not ended.
func (w *world) checkWorkStart(wk *simWork) {
	for _, o := range w.works[wk.hash] {
		if o.r != wk.r && (!o.ended || o.end.After(wk.start)) {
			w.fail("work on hash %016x by %s starts at %v while %s's work (started %v, ended %v) runs",
				wk.hash, wk.r.cfg.holder, wk.start, o.r.cfg.holder, o.start, o.ended)
		}
	}
	// Keep the history short: only work that ended recently matters.
	old := w.clk.Now().Add(-2 * w.p.leaseDuration)
	w.works[wk.hash] = slices.DeleteFunc(w.works[wk.hash], func(o *simWork) bool { return o.ended && o.end.Before(old) })
}

// effective is what a running replica may work on now: its range while
// valid, and the hashes of its work in flight.
func effective(r *simReplica, now time.Time) Range {
	serving, _ := r.gate.snapshot()
	r.gate.mu.Lock()
	valid := now.Before(r.gate.validUntil)
	r.gate.mu.Unlock()
	if !valid {
		serving = Range{}
	}
	for _, wk := range r.inflight {
		serving = serving.Union(NewRange(wk.hash, wk.hash+1))
	}
	return serving
}

func (w *world) checkExclusive(now time.Time) {
	run := w.running()
	for i, a := range run {
		ea := effective(a, now)
		for _, b := range run[i+1:] {
			if both := ea.Intersect(effective(b, now)); !both.Empty() {
				w.fail("%s and %s may both serve %s", a.cfg.holder, b.cfg.holder, both)
			}
		}
	}
}

// settled reports whether every running replica serves exactly its share
// of the assignment over the running replicas and the whole space is
// served.
func (w *world) settled() (bool, string) {
	run := w.running()
	names := make([]string, 0, len(run))
	for _, r := range run {
		names = append(names, r.cfg.leaseName)
	}
	want := Assign(names, w.p.buckets)
	var all Range
	for _, r := range run {
		got := r.gate.serving
		if !got.Equal(want[r.cfg.leaseName]) {
			return false, fmt.Sprintf("%s serves %s, assigned %s", r.cfg.leaseName, got, want[r.cfg.leaseName])
		}
		all = all.Union(got)
	}
	if len(run) > 0 && !all.Equal(FullRange()) {
		return false, "not everything is served: " + all.String()
	}
	return true, ""
}

// chaos applies one random fault or change, now and then.
func (w *world) chaos() {
	now := w.clk.Now()
	run := w.running()
	switch n := w.rng.IntN(400); {
	case n < 4 && len(run) < w.p.maxReplicas:
		w.start(w.newIdentity())
	case n < 6 && len(run) > 0:
		w.crash(run[w.rng.IntN(len(run))])
	case n < 8:
		// A crashed identity comes back as a new process.
		var dead []*simReplica
		for _, r := range w.replicas {
			if !r.up && !slices.ContainsFunc(w.replicas, func(o *simReplica) bool { return o.up && o.id == r.id }) {
				dead = append(dead, r)
			}
		}
		if len(dead) > 0 && len(run) < w.p.maxReplicas {
			w.start(dead[w.rng.IntN(len(dead))].id)
		}
	case n < 10 && len(run) > 1:
		r := run[w.rng.IntN(len(run))]
		if !r.core.stopping {
			r.core.stop()
			r.viewDirty = true
			r.stopDeadline = now.Add(2 * w.p.leaseDuration)
			w.tracef("stop %s", r.cfg.leaseName)
		}
	case n < 16 && len(run) > 0:
		r := run[w.rng.IntN(len(run))]
		r.partitionedUntil = now.Add(time.Duration(w.rng.Int64N(int64(2 * w.p.leaseDuration))))
		w.tracef("partition %s until %v", r.cfg.leaseName, r.partitionedUntil.Sub(now))
	case n < 19 && len(run) > 0:
		r := run[w.rng.IntN(len(run))]
		r.stalledUntil = now.Add(time.Duration(w.rng.Int64N(int64(2 * w.p.leaseDuration))))
		w.tracef("stall %s for %v", r.cfg.leaseName, r.stalledUntil.Sub(now))
	case n < 21 && len(run) > 0:
		run[w.rng.IntN(len(run))].watchDelay = time.Duration(w.rng.Int64N(int64(w.p.maxWatchDelay) + 1))
	case n < 22 && len(w.leases) > 0:
		// Someone (a person, another tool) deletes a member's Lease.
		names := make([]string, 0, len(w.leases))
		for name := range w.leases {
			names = append(names, name)
		}
		slices.Sort(names)
		name := names[w.rng.IntN(len(names))]
		w.adminDelete(name)
	case n < 23 && len(run) > 0 && len(run) < w.p.maxReplicas:
		// A second process with the identity of a running one.
		w.start(run[w.rng.IntN(len(run))].id)
	}
	for _, r := range w.running() {
		if r.core.stopping && !r.stopDeadline.IsZero() && now.After(r.stopDeadline) {
			w.crash(r) // the stop timed out
		}
	}
}

// nextDelta is the next step of the clock: a tick. Now and then the clock
// moves on far while no member's loop runs, as when a fake clock is
// stepped or every loop wakes late: the loops then find several deadlines
// passed at once and run in random order. Watchdogs and work go on
// meanwhile, as they do in a process whose loop is late.
func (w *world) nextDelta() time.Duration {
	if w.rng.IntN(150) == 0 {
		until := w.clk.Now().Add(time.Duration(w.rng.Int64N(int64(2 * w.p.leaseDuration))))
		for _, r := range w.replicas {
			if r.stalledUntil.Before(until) {
				r.stalledUntil = until
			}
		}
		w.tracef("clock step: every loop wakes at %v", until.Sub(w.clk.Now()))
	}
	return time.Duration(w.rng.Int64N(int64(w.p.tick))) + time.Millisecond
}

// runModel runs one seeded history: chaos for chaosSteps times 20 ms of
// simulated time, then quiet convergence, then a crash in a quiet group
// and the time until its range is served again.
func runModel(t testing.TB, seed uint64, chaosSteps int) {
	p := defaultModelParams()
	if seed%2 == 1 {
		p = tightModelParams()
	}
	w := newWorld(t, seed, p)
	for range 1 + w.rng.IntN(w.p.maxReplicas) {
		w.start(w.newIdentity())
	}
	// Faults come at the same rate of simulated time whatever the tick.
	end := w.clk.Now().Add(time.Duration(chaosSteps) * 20 * time.Millisecond)
	lastChaos := w.clk.Now()
	for w.clk.Now().Before(end) {
		if w.clk.Since(lastChaos) >= 20*time.Millisecond {
			lastChaos = w.clk.Now()
			w.chaos()
		}
		w.step(w.nextDelta())
	}

	// Quiet: no faults; every stopping replica finishes or times out.
	w.quiet = true
	for _, r := range w.replicas {
		r.partitionedUntil, r.stalledUntil = time.Time{}, time.Time{}
	}
	staying := 0
	for _, r := range w.running() {
		if !r.core.stopping {
			staying++
		}
	}
	for ; staying < 2; staying++ {
		w.start(w.newIdentity())
	}
	w.converge("after chaos")

	// Crash one replica of a quiet group: its range must be served again
	// within the lease duration plus the slack of detecting the expiry
	// (watch delay), claiming (a write and a list), and the moves between
	// survivors the new assignment makes (shrink after the work in flight,
	// write, watch delay, claim).
	run := w.running()
	victim := run[w.rng.IntN(len(run))]
	w.crash(victim)
	crashed := w.clk.Now()
	roundTrip := 2 * w.p.maxLatency
	slack := 2*(w.p.maxWatchDelay+2*roundTrip) + w.p.maxWork + w.p.renewInterval + 4*w.p.tick
	deadline := crashed.Add(w.p.leaseDuration + slack)
	for {
		if ok, _ := w.settled(); ok {
			break
		}
		if w.clk.Now().After(deadline) {
			_, why := w.settled()
			w.fail("the range of crashed %s is not served %v after the crash (lease duration %v + slack %v): %s",
				victim.cfg.leaseName, w.clk.Since(crashed), w.p.leaseDuration, slack, why)
		}
		w.step(time.Duration(w.rng.Int64N(int64(w.p.tick))) + time.Millisecond)
	}
}

// converge runs a quiet group until it is settled, failing after a bound.
func (w *world) converge(when string) {
	w.t.Helper()
	// Dead Leases expire, ghosts pass, stops finish: a few lease durations.
	limit := w.clk.Now().Add(4*w.p.leaseDuration + 10*w.p.renewInterval)
	for {
		w.step(time.Duration(w.rng.Int64N(int64(w.p.tick))) + time.Millisecond)
		quiet := true
		for _, r := range w.replicas {
			if r.up && r.core.stopping {
				quiet = false
				w.chaosStopTimeouts()
			}
		}
		if ok, _ := w.settled(); ok && quiet {
			return
		}
		if w.clk.Now().After(limit) {
			_, why := w.settled()
			w.fail("%s: the group did not settle within %v: %s", when, 4*w.p.leaseDuration+10*w.p.renewInterval, why)
		}
	}
}

func (w *world) chaosStopTimeouts() {
	now := w.clk.Now()
	for _, r := range w.running() {
		if r.core.stopping && !r.stopDeadline.IsZero() && now.After(r.stopDeadline) {
			w.crash(r)
		}
	}
}

func TestHandoverModel(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runModel(t, seed, 3000) })
	}
}

func FuzzHandoverModel(f *testing.F) {
	for seed := range uint64(4) {
		f.Add(seed, uint16(2000))
	}
	f.Fuzz(func(t *testing.T, seed uint64, steps uint16) {
		runModel(t, seed, int(steps%5000))
	})
}
