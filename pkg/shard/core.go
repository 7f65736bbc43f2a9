package shard

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// core makes a member's decisions without doing any I/O: the Member's loop
// (and the model test) feeds it what it observes and carries out the
// requests it returns, one at a time. The rules:
//
//   - Liveness is judged on the observer's own clock: a Lease is live until
//     its duration has passed since this member first saw its current
//     version (resourceVersion and renewTime). No two clocks are ever
//     compared.
//   - The assignment is Assign over the live members, this one included.
//   - Shrink at once: a hash that is no longer assigned leaves the served
//     range immediately; it stays published until the work in flight on it
//     has ended, then the smaller range is written.
//   - Grow only when free: a hash is claimed only if no live Lease (nor the
//     ghost of one, below) publishes it. A claim is written first, then the
//     group is read again (a consistent LIST); the claimed hashes that no
//     other live Lease publishes in that read are served. Whichever of two
//     racing claimants writes second sees the first's claim in its read.
//   - Fence: a member stops serving, and cancels its work, when its Lease
//     was last renewed (by the send time of the request) a renew deadline
//     ago, before any other member can see the Lease expire.
//   - A member's clean stop publishes an empty range before it deletes its
//     Lease, so that its range is free at once; a finalizer keeps anyone
//     else from deleting a live member's Lease. A Lease that goes while it
//     publishes a range is kept until it would have expired; a member that
//     finds its own Lease gone stops serving and claims again.
//   - A process that finds its Lease held by an earlier process of its
//     identity keeps that one's range published, and does not claim it,
//     until the Lease would have expired; an earlier process that finds its
//     Lease taken over stops serving and gives up.
type core struct {
	cfg  *config
	gate *gate
	log  logr.Logger
	rng  *rand.Rand // jitters the retry after a lost claim race

	peers map[string]*peer // the group's other Leases, by name
	// predecessor is what this member's own Lease published when the member
	// found it held by an earlier process of its identity: that process may
	// still run until the Lease would expire, so the range stays published
	// and unclaimed until then.
	predecessor *ghost

	own ownLease
	// serving mirrors the gate's range, so decisions need not lock it.
	serving Range
	// verifying holds claims written and acknowledged, not yet verified.
	verifying Range
	// claimAfter and retryAfter pace claims after a lost race and requests
	// after a failure.
	claimAfter, retryAfter time.Time

	stopping bool
	finished bool
	lost     error // set when another process took this member's Lease over

	assignMemo struct {
		valid  bool
		key    string
		result Range
	}
}

// ownLease is what the member knows of its own Lease on the server.
type ownLease struct {
	known     bool // rv and published reflect the server; false after a failed write
	exists    bool
	rv        string
	published Range
	written   bool      // the member wrote its Lease at least once
	lastRenew time.Time // send time of the last acknowledged write
	lastSend  time.Time // send time of the last write, acknowledged or not
}

// peer is another member's Lease as this member observed it.
type peer struct {
	rec        leaseRecord
	observedAt time.Time // when this member first saw rec.version
	gcTried    time.Time
	reported   bool // rec.problem was logged
	// gone says the Lease is missing from the latest view: kept, as a Lease
	// no longer renewed, until it would have expired.
	gone bool
}

func (p *peer) expiresAt() time.Time { return p.observedAt.Add(p.rec.duration) }
func (p *peer) live(now time.Time) bool {
	return now.Before(p.expiresAt())
}

// ghost is a range blocked until a time, without a live Lease behind it.
type ghost struct {
	published Range
	until     time.Time
	// holder and renewed are the predecessor's holder and last renewal
	// that until counts from: reading them again does not move it.
	holder, renewed string
}

// requestKind is the I/O a core asks for.
type requestKind int

const (
	reqNone requestKind = iota
	// reqGetOwn reads the member's own Lease: at start, and after a failed
	// write, when its state on the server is unknown.
	reqGetOwn
	// reqWrite creates or updates the member's Lease to publish.
	reqWrite
	// reqVerify lists the group's Leases with a consistent read, after a
	// claim was written.
	reqVerify
	// reqDeleteOwn deletes the member's Lease at a clean stop.
	reqDeleteOwn
	// reqDeletePeer deletes a Lease that has been dead for long.
	reqDeletePeer
)

func (k requestKind) String() string {
	return [...]string{"none", "get own lease", "write own lease", "verify claims", "delete own lease", "delete dead lease"}[k]
}

// request is one piece of I/O; the core is told its result through the
// method of its kind.
type request struct {
	kind requestKind
	sent time.Time
	// name and rv are the Lease and the resourceVersion it must still have
	// (updates and deletes).
	name, rv string
	create   bool  // reqWrite: the Lease does not exist yet
	publish  Range // reqWrite
	claims   Range // reqWrite: hashes claimed by this write
}

// Errors the I/O reports to the core.
var (
	errNotFound = errors.New("not found")
	errConflict = errors.New("conflict")
)

func newCore(cfg *config, g *gate, seed uint64) *core {
	return &core{
		cfg:   cfg,
		gate:  g,
		log:   cfg.logger,
		rng:   rand.New(rand.NewPCG(seed, seed^0x5a5a)),
		peers: make(map[string]*peer),
	}
}

// validUntil is when the member must stop serving without a renewal.
func (c *core) validUntil() time.Time {
	if c.own.lastRenew.IsZero() {
		return time.Time{}
	}
	return c.own.lastRenew.Add(c.cfg.renewDeadline)
}

// observe takes a complete view of the group's Leases: the Lease watch's
// store, or a consistent list. A Lease missing from it is gone: a member
// deletes its own Lease only after publishing an empty range, and the
// finalizer keeps a live member's Lease from being deleted by anyone else.
// A Lease that goes while it still publishes a range (its finalizer removed
// by hand, or the empty version missed) is kept until it would have
// expired, as if it were no longer renewed: its member is fenced by then.
func (c *core) observe(now time.Time, recs []leaseRecord) {
	seen := make(map[string]bool, len(recs))
	for _, rec := range recs {
		if rec.name == c.cfg.leaseName {
			continue // the member's own Lease is tracked by its writes
		}
		seen[rec.name] = true
		p := c.peers[rec.name]
		switch {
		case p == nil:
			p = &peer{rec: rec, observedAt: now}
			c.peers[rec.name] = p
			c.log.V(1).Info("Member Lease seen", "lease", rec.name, "range", rec.published.String())
		case p.rec.version != rec.version:
			p.rec, p.observedAt, p.reported = rec, now, false
		}
		if rec.problem != nil && !p.reported {
			p.reported = true
			c.log.Error(rec.problem, "Treating the member's range as everything", "lease", rec.name)
		}
	}
	for name, p := range c.peers {
		if seen[name] {
			p.gone = false
			continue
		}
		if p.live(now) && !p.rec.published.Empty() {
			// Deleted while it published a range (its finalizer removed
			// by hand): its member may still serve that range until it
			// notices, at the latest at its renew deadline. Treat the
			// Lease as one no longer renewed: live, and its range blocked,
			// until it would have expired.
			if !p.gone {
				p.gone = true
				c.log.Info("Member Lease deleted while it published a range: keeping the range until the Lease would have expired",
					"lease", name, "range", p.rec.published.String(), "until", p.expiresAt())
			}
			continue
		}
		delete(c.peers, name)
		c.log.V(1).Info("Member Lease gone", "lease", name)
	}
}

// gcAfter is how long after its last renewal a dead Lease is deleted.
func (c *core) gcAfter(p *peer) time.Duration { return 10 * p.rec.duration }

// members is the live members' Lease names, this member's included unless
// it is stopping.
func (c *core) members(now time.Time) []string {
	out := make([]string, 0, len(c.peers)+1)
	if !c.stopping {
		out = append(out, c.cfg.leaseName)
	}
	for name, p := range c.peers {
		if p.live(now) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// assigned is this member's share of the assignment over members.
func (c *core) assigned(members []string) Range {
	if c.stopping {
		return Range{}
	}
	key := strings.Join(members, "\x00")
	if !c.assignMemo.valid || key != c.assignMemo.key {
		c.assignMemo.valid, c.assignMemo.key = true, key
		c.assignMemo.result = Assign(members, c.cfg.buckets)[c.cfg.leaseName]
	}
	return c.assignMemo.result
}

// blocked is what other live members (and a predecessor) publish at now.
func (c *core) blocked(now time.Time) Range {
	var spans []span
	for _, p := range c.peers {
		if p.live(now) {
			spans = append(spans, p.rec.published.spans...)
		}
	}
	return normalize(spans).Union(c.inherited(now))
}

// inherited is what a predecessor left in this member's own Lease, kept
// published until it would have expired.
func (c *core) inherited(now time.Time) Range {
	if c.predecessor == nil || !now.Before(c.predecessor.until) {
		return Range{}
	}
	return c.predecessor.published
}

// setServing makes r the served range.
func (c *core) setServing(r Range, why string) {
	c.recordServing(r, why)
	c.gate.set(r, c.validUntil())
}

// fence stops serving at once and cancels the work in flight (through the
// gate).
func (c *core) fence(why string) {
	c.recordServing(Range{}, why)
	c.gate.fence()
}

// recordServing makes r the served range in the core, its log and its
// gauges; the caller tells the gate.
func (c *core) recordServing(r Range, why string) {
	if !r.Equal(c.serving) {
		grew, shrank := r.Minus(c.serving), c.serving.Minus(r)
		c.log.Info("Serving range changed", "why", why, "share", r.Fraction(), "terms", r.Terms(),
			"grew", grew.Fraction(), "shrank", shrank.Fraction())
		c.cfg.rec.Serving(r.Fraction(), r.Terms(), !grew.Empty(), !shrank.Empty())
	}
	c.serving = r
}

// next applies the decisions that need no I/O (fence, shrink) and returns
// the next request, or reqNone when nothing is due before wakeAt.
func (c *core) next(now time.Time) request {
	if c.finished || c.lost != nil {
		return request{}
	}
	if c.stopping && !c.own.written {
		// No write of this member's Lease was ever acknowledged, so it has
		// served nothing and has nothing to release: a Lease that a write
		// it took for failed may have created expires like a crashed
		// member's. Waiting on the API server (in an outage, for the whole
		// stop timeout) would gain nothing.
		c.finished = true
		return request{}
	}
	if !c.serving.Empty() && !now.Before(c.validUntil()) {
		c.log.Error(nil, "Lease not renewed within the renew deadline: no longer serving", "lastRenew", c.own.lastRenew, "renewDeadline", c.cfg.renewDeadline)
		c.cfg.rec.Fenced()
		c.fence("renew deadline passed")
	}
	members := c.members(now)
	c.cfg.rec.Members(len(members))
	assigned := c.assigned(members)
	c.gate.assign(assigned)
	c.setServing(c.serving.Intersect(assigned), "assignment")

	if now.Before(c.retryAfter) {
		return request{}
	}
	if !c.own.known {
		return request{kind: reqGetOwn, sent: now, name: c.cfg.leaseName}
	}
	if !c.verifying.Empty() {
		return request{kind: reqVerify, sent: now}
	}

	busy := c.gate.busy(c.cfg.buckets)
	var claims Range
	if !c.stopping && !now.Before(c.claimAfter) {
		claims = assigned.Minus(c.serving).Minus(c.blocked(now))
	}
	target := c.serving.Union(busy).Union(claims).Union(c.inherited(now))

	if c.stopping && target.Empty() && c.own.published.Empty() {
		if !c.own.exists {
			c.finished = true
			return request{}
		}
		return request{kind: reqDeleteOwn, sent: now, name: c.cfg.leaseName, rv: c.own.rv}
	}
	if !c.own.exists || !target.Equal(c.own.published) || !claims.Empty() ||
		!now.Before(c.own.lastSend.Add(c.cfg.renewInterval)) {
		c.own.lastSend = now
		return request{kind: reqWrite, sent: now, name: c.cfg.leaseName, rv: c.own.rv, create: !c.own.exists, publish: target, claims: claims}
	}
	if !c.stopping {
		for name, p := range c.peers {
			gcAt := p.observedAt.Add(c.gcAfter(p))
			if !p.gone && !now.Before(gcAt) && !now.Before(p.gcTried.Add(c.gcAfter(p))) {
				p.gcTried = now
				return request{kind: reqDeletePeer, sent: now, name: name, rv: p.rec.rv}
			}
		}
	}
	return request{}
}

// wakeAt is when the core next needs next() called if nothing is observed
// before.
func (c *core) wakeAt(now time.Time) time.Time {
	// The renewal is due renewInterval after the last request, but after a
	// failure nothing is sent before retryAfter: waking for a renewal
	// already due would find nothing to do, and the loop would spin for as
	// long as the API server fails it.
	at := latest(c.own.lastSend.Add(c.cfg.renewInterval), c.retryAfter)
	consider := func(t time.Time) {
		if t.After(now) && t.Before(at) {
			at = t
		}
	}
	if !c.serving.Empty() {
		consider(c.validUntil())
	}
	consider(c.validUntil().Add(-c.cfg.renewInterval))
	consider(c.claimAfter)
	consider(c.retryAfter)
	for _, p := range c.peers {
		consider(p.expiresAt())
		consider(p.observedAt.Add(c.gcAfter(p)))
	}
	if c.predecessor != nil {
		consider(c.predecessor.until) // once past, it is not considered
	}
	if !at.After(now) {
		return now
	}
	return at
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// failed paces the next request after a failed one.
func (c *core) failed(now time.Time, r request, err error) {
	c.retryAfter = now.Add(c.cfg.renewInterval / 2)
	c.cfg.rec.LeaseError(r.kind.String())
	c.log.Error(err, "Shard Lease request failed", "request", r.kind.String(), "lease", r.name)
}

// gotOwn takes the result of reqGetOwn: rec is nil when the Lease does not
// exist.
func (c *core) gotOwn(now time.Time, r request, rec *leaseRecord, err error) {
	switch {
	case errors.Is(err, errNotFound):
		if c.own.written {
			// The Lease this member wrote is gone (deleted by hand, its
			// finalizer removed): the others no longer see what it
			// publishes and may have claimed and verified its range
			// already. Stop serving at once; what it publishes next is a
			// fresh claim, served only once the LIST verifies it.
			c.log.Error(nil, "This member's Lease is gone: no longer serving; claiming its share again", "lease", c.cfg.leaseName)
			c.fence("lease gone")
			c.verifying = Range{}
		}
		c.own = ownLease{known: true, written: c.own.written, lastRenew: c.own.lastRenew, lastSend: c.own.lastSend}
	case err != nil:
		c.failed(now, r, err)
	case rec.controller != c.cfg.name:
		// Not a Lease of this controller's members: "ctl" with identity
		// "x-a" and "ctl-x" with identity "a" both name theirs "ctl-x-a".
		// Writing it would take it out of the other controller's member
		// set, whose members would take over what its holder still serves.
		c.lost = fmt.Errorf("lease %s is not a member Lease of controller %q (its %s label is %q): another controller's member Lease has this name; give this member another identity",
			c.cfg.leaseName, c.cfg.name, LabelController, rec.controller)
		c.log.Error(c.lost, "Cannot join")
		c.fence("lease of another controller")
	case rec.holder != c.cfg.holder && c.own.written:
		c.lost = errors.New("lease " + c.cfg.leaseName + " was taken over by " + rec.holder + ": two replicas have the same identity")
		c.log.Error(c.lost, "No longer serving")
		c.fence("lease taken over")
	default:
		if g := c.predecessor; rec.holder != c.cfg.holder && !rec.published.Empty() &&
			(g == nil || g.holder != rec.holder || g.renewed != rec.renewed || !g.published.Equal(rec.published)) {
			// A predecessor of this identity left a range: it may still
			// run until its Lease would expire, a lease duration after this
			// member first saw its last renewal. A read of the same renewal
			// (after a 409: someone else wrote the Lease) keeps that time.
			c.predecessor = &ghost{published: rec.published, until: now.Add(rec.duration), holder: rec.holder, renewed: rec.renewed}
			c.log.Info("Found this member's Lease held by a predecessor; keeping its range until it would expire",
				"holder", rec.holder, "range", rec.published.String(), "until", now.Add(rec.duration))
		}
		c.own.known, c.own.exists, c.own.rv, c.own.published = true, true, rec.rv, rec.published
	}
}

// ready reports whether the member has made its first claim: its Lease is
// written and any claim in it verified. What it serves then is what it
// could take at start; informers list first with that.
func (c *core) ready() bool { return c.own.written && c.verifying.Empty() }

// wrote takes the result of reqWrite: rv is the Lease's new resourceVersion.
func (c *core) wrote(now time.Time, r request, rv string, err error) {
	if err != nil {
		// The write may or may not have landed: read the Lease again.
		c.own.known = false
		c.failed(now, r, err)
		return
	}
	c.own.exists, c.own.rv, c.own.published, c.own.written = true, rv, r.publish, true
	c.own.lastRenew = r.sent
	c.verifying = r.claims
	c.gate.set(c.serving, c.validUntil())
}

// listed takes the result of reqVerify.
func (c *core) listed(now time.Time, r request, recs []leaseRecord, err error) {
	claims := c.verifying
	c.verifying = Range{}
	if err != nil {
		c.failed(now, r, err)
		return
	}
	c.observe(now, recs)
	if !now.Before(c.validUntil()) {
		return
	}
	assigned := c.assigned(c.members(now))
	free := claims.Intersect(assigned).Minus(c.blocked(now))
	if lost := claims.Minus(free); !lost.Empty() {
		// Another member claimed some of it at the same time, or the
		// assignment moved: withdraw (the next write drops it) and retry
		// after a jittered pause, so that racing claimants do not meet again.
		pause := c.cfg.renewInterval/2 + time.Duration(c.rng.Int64N(int64(c.cfg.renewInterval/2)+1))
		c.claimAfter = now.Add(pause)
		c.cfg.rec.LostClaim()
		c.log.V(1).Info("Claim not granted", "share", lost.Fraction(), "retryIn", pause)
	}
	c.setServing(c.serving.Union(free), "claim granted")
}

// deleted takes the result of reqDeleteOwn or reqDeletePeer.
func (c *core) deleted(now time.Time, r request, err error) {
	switch {
	case r.kind == reqDeletePeer:
		if err != nil && !errors.Is(err, errNotFound) && !errors.Is(err, errConflict) {
			// Retried a gc interval later (peer.gcTried), without pausing
			// the member's own requests: a member lacking "patch" on
			// Leases leaves finalizer-held Leases behind, which only this
			// says.
			c.cfg.rec.LeaseError(r.kind.String())
			c.log.Info("Warning: could not delete a dead member Lease; its finalizer keeps it until removed", "lease", r.name, "err", err.Error())
		}
	case err == nil || errors.Is(err, errNotFound):
		c.own.exists, c.finished = false, true
	default:
		c.own.known = false
		c.failed(now, r, err)
	}
}

// stop begins a clean stop: serve nothing, let the work in flight end,
// publish an empty range, delete the Lease.
func (c *core) stop() { c.stopping = true }
