package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// shardCollectors are the metrics of pkg/shard's members, labelled by the
// sharded controller's name.
type shardCollectors struct {
	members      *prometheus.GaugeVec
	servingShare *prometheus.GaugeVec
	servingTerms *prometheus.GaugeVec
	rangeChanges *prometheus.CounterVec
	fences       *prometheus.CounterVec
	lostClaims   *prometheus.CounterVec
	leaseErrors  *prometheus.CounterVec
	requests     *prometheus.CounterVec
	informers    *prometheus.GaugeVec
}

func newShardCollectors() shardCollectors {
	labels := func(extra ...string) []string { return append([]string{"controller"}, extra...) }
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "shard", Name: name, Help: help}, labels())
	}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "shard", Name: name, Help: help}, labels(extra...))
	}
	return shardCollectors{
		members:      gauge("members", "Live members of the sharded controller this replica sees, itself included."),
		servingShare: gauge("serving_share", "Share of the hash space this replica serves, between 0 and 1."),
		servingTerms: gauge("serving_terms", "Intervals (shardRange terms) of the range this replica serves."),
		rangeChanges: counter("range_changes_total", "Changes of the served range, by direction (grow, shrink).", "direction"),
		fences:       counter("fences_total", "Times this replica stopped serving because it could not renew its Lease within the renew deadline."),
		lostClaims:   counter("lost_claims_total", "Claims withdrawn because another member published an overlapping range first."),
		leaseErrors:  counter("lease_request_errors_total", "Failed requests on the members' Leases, by request.", "request"),
		requests:     counter("reconcile_requests_total", "Requests seen by shard.Reconciler, by result: reconciled, retried (the range is being taken over, or a sharded cache relists it), not_served and unknown (dropped).", "result"),
		informers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "shard", Name: "informers",
			Help: "Sharded informers of the resource, by where their objects are filtered (server: the API server applies the shard selector; client: it ignores it, the informer drops what is outside its range)."},
			withResource("filtering")),
	}
}

func (s *shardCollectors) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.members, s.servingShare, s.servingTerms, s.rangeChanges, s.fences, s.lostClaims, s.leaseErrors, s.requests, s.informers}
}

// Member returns the recorder of a shard member of the sharded controller
// named controller. A nil *Metrics returns a recorder that records nothing.
func (m *Metrics) Member(controller string) *MemberRecorder {
	if m == nil {
		return nil
	}
	return &MemberRecorder{s: &m.shard, labels: prometheus.Labels{"controller": controller}}
}

// MemberRecorder records the metrics of one shard member. All methods
// accept a nil receiver and then do nothing.
type MemberRecorder struct {
	s      *shardCollectors
	labels prometheus.Labels
}

func (r *MemberRecorder) with(k, v string) prometheus.Labels {
	return prometheus.Labels{"controller": r.labels["controller"], k: v}
}

// Members sets how many live members the member sees.
func (r *MemberRecorder) Members(n int) {
	if r != nil {
		r.s.members.With(r.labels).Set(float64(n))
	}
}

// Serving records the served range's share of the hash space and its
// number of intervals, and counts a change in the directions it moved.
func (r *MemberRecorder) Serving(share float64, terms int, grew, shrank bool) {
	if r == nil {
		return
	}
	r.s.servingShare.With(r.labels).Set(share)
	r.s.servingTerms.With(r.labels).Set(float64(terms))
	if grew {
		r.s.rangeChanges.With(r.with("direction", "grow")).Inc()
	}
	if shrank {
		r.s.rangeChanges.With(r.with("direction", "shrink")).Inc()
	}
}

// Fenced counts a stop for want of a renewed Lease.
func (r *MemberRecorder) Fenced() {
	if r != nil {
		r.s.fences.With(r.labels).Inc()
	}
}

// LostClaim counts a withdrawn claim.
func (r *MemberRecorder) LostClaim() {
	if r != nil {
		r.s.lostClaims.With(r.labels).Inc()
	}
}

// LeaseError counts a failed Lease request of the given kind.
func (r *MemberRecorder) LeaseError(request string) {
	if r != nil {
		r.s.leaseErrors.With(r.with("request", request)).Inc()
	}
}

// Request counts a request seen by shard.Reconciler, by its result.
func (r *MemberRecorder) Request(result string) {
	if r != nil {
		r.s.requests.With(r.with("result", result)).Inc()
	}
}

// ShardFiltering records where this sharded informer's objects are
// filtered ("server" or "client"), moving it out of the series of its
// previous mode.
func (r *Recorder) ShardFiltering(filtering string) {
	if r == nil {
		return
	}
	r.shardMu.Lock()
	defer r.shardMu.Unlock()
	if r.shardFiltering == filtering {
		return
	}
	if r.shardFiltering != "" {
		r.m.shard.informers.With(r.with("filtering", r.shardFiltering)).Dec()
	}
	r.shardFiltering = filtering
	r.join()
	r.m.shard.informers.With(r.with("filtering", filtering)).Inc()
}

// closeShard takes this informer out of leaninformer_shard_informers.
func (r *Recorder) closeShard() {
	r.shardMu.Lock()
	defer r.shardMu.Unlock()
	if r.shardFiltering != "" {
		r.m.shard.informers.With(r.with("filtering", r.shardFiltering)).Dec()
		r.shardFiltering = ""
	}
}
