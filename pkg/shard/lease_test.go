package shard

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

func testConfig(t *testing.T, opts ...Option) *config {
	t.Helper()
	cfg, err := newConfig("ns", "ctl", append([]Option{WithIdentity("a"), WithLogger(logr.Discard())}, opts...))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestLeaseRoundTrip(t *testing.T) {
	cfg := testConfig(t, WithLeaseDuration(1500*time.Millisecond), WithRenewDeadline(time.Second), WithRenewInterval(200*time.Millisecond))
	published := NewRange(0, 1<<62).Union(NewRange(1<<63, 0))
	l := cfg.buildLease(nil, "7", published, time.Now())
	if l.Name != "ctl-a" || l.Namespace != "ns" || l.Labels[LabelController] != "ctl" || l.Finalizers[0] != Finalizer {
		t.Fatalf("lease metadata: %+v", l.ObjectMeta)
	}
	if *l.Spec.LeaseDurationSeconds != 2 {
		t.Errorf("a 1.5s lease duration is written as %d seconds, want 2 (rounded up)", *l.Spec.LeaseDurationSeconds)
	}
	rec := recordOf(l, KeyUID, time.Minute)
	if rec.name != "ctl-a" || rec.rv != "7" || rec.holder != cfg.holder || rec.duration != 2*time.Second ||
		!rec.published.Equal(published) || rec.buckets != DefaultBuckets || rec.key != KeyUID || rec.problem != nil {
		t.Fatalf("record: %+v", rec)
	}
}

func TestLeaseRecordIsConservative(t *testing.T) {
	cfg := testConfig(t)
	l := cfg.buildLease(nil, "1", NewRange(0, 1<<60), time.Now())

	bad := l.DeepCopy()
	bad.Annotations[AnnotationRange] = "everything"
	if rec := recordOf(bad, KeyUID, time.Minute); !rec.published.Equal(FullRange()) || rec.problem == nil {
		t.Errorf("an unreadable range blocks everything: %+v", rec)
	}

	if rec := recordOf(l, KeyNamespace, time.Minute); !rec.published.Equal(FullRange()) || rec.problem == nil ||
		!strings.Contains(rec.problem.Error(), string(KeyNamespace)) {
		t.Errorf("a range over another key's hashes blocks everything: %+v", rec)
	}
	empty := cfg.buildLease(nil, "1", Range{}, time.Now())
	if rec := recordOf(empty, KeyNamespace, time.Minute); !rec.published.Empty() || rec.problem != nil {
		t.Errorf("an empty range over another key blocks nothing: %+v", rec)
	}

	noDuration := l.DeepCopy()
	noDuration.Spec.LeaseDurationSeconds = nil
	if rec := recordOf(noDuration, KeyUID, time.Minute); rec.duration != time.Minute {
		t.Errorf("a Lease without a duration is given ours: %v", rec.duration)
	}
}

func TestOptionsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		name, namespace string
		opts            []Option
		want            string
	}{
		{"ctl", "ns", []Option{WithRenewDeadline(20 * time.Second)}, "WithRenewDeadline(20s)"},
		{"ctl", "ns", []Option{WithRenewInterval(10 * time.Second)}, "WithRenewInterval(10s)"},
		{"ctl", "ns", []Option{WithLeaseDuration(500 * time.Millisecond)}, "WithLeaseDuration(500ms)"},
		{"ctl", "ns", []Option{WithBuckets(0)}, "WithBuckets(0)"},
		{"ctl", "ns", []Option{WithBuckets(MaxBuckets + 1)}, "WithBuckets(2049)"},
		{"ctl", "ns", []Option{WithKey("object.metadata.name")}, "WithKey"},
		{"ctl", "ns", []Option{WithStopTimeout(0)}, "WithStopTimeout(0s)"},
		{"ctl", "ns", []Option{WithIdentity("Not_A_Name")}, "WithIdentity(\"Not_A_Name\")"},
		{"ctl", "ns", []Option{WithClock(nil)}, "WithClock(nil)"},
		{"", "ns", nil, "name \"\""},
		{"ctl", "Bad Namespace", nil, "namespace \"Bad Namespace\""},
	} {
		_, err := newConfig(tc.namespace, tc.name, append([]Option{WithIdentity("a")}, tc.opts...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.want, err, tc.want)
		}
	}
	if _, err := New(nil, "ns", "ctl"); err == nil {
		t.Error("New without a Lease client succeeds")
	}
}

// A failed delete of a long-dead peer's Lease (which drops its finalizer)
// is counted in lease_request_errors_total, as every other failed Lease
// request is: a member without "patch" on Leases would otherwise leave
// finalizer-held Leases behind with no metric saying so.
func TestDeadPeerLeaseDeleteErrorIsCounted(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	mx, reg := newTestMetrics(t)
	cfg := testConfig(t, WithClock(clk), WithMetrics(mx))
	g := newGate(clk)
	defer g.retire()
	c := newCore(cfg, g, 1)
	peerCfg := testConfig(t, WithIdentity("b"))
	peer := recordOf(peerCfg.buildLease(nil, "7", Range{}, clk.Now()), cfg.key, cfg.leaseDuration)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, peer.name, errors.New("cannot patch"))
	tried := false
	for i := 0; i < 10000 && !tried; i++ {
		now := clk.Now()
		c.observe(now, []leaseRecord{peer})
		req := c.next(now)
		switch req.kind {
		case reqNone:
			clk.Step(100 * time.Millisecond)
		case reqGetOwn:
			c.gotOwn(now, req, nil, errNotFound)
		case reqWrite:
			c.wrote(now, req, "1", nil)
		case reqVerify:
			c.listed(now, req, []leaseRecord{peer}, nil)
		case reqDeletePeer:
			c.deleted(now, req, classify(forbidden))
			tried = true
		}
	}
	if !tried {
		t.Fatal("the dead peer's Lease was never collected")
	}
	n := metricValue(t, reg, "leaninformer_shard_lease_request_errors_total", map[string]string{"request": reqDeletePeer.String()})
	if n != 1 {
		t.Fatalf("a %q request failed with %v, lease_request_errors_total{request=%q} = %v, want 1", reqDeletePeer, forbidden, reqDeletePeer.String(), n)
	}
	// A Lease already gone or changed meanwhile is no error.
	for _, err := range []error{errNotFound, errConflict} {
		c.deleted(clk.Now(), request{kind: reqDeletePeer, name: peer.name}, err)
	}
	if n := metricValue(t, reg, "leaninformer_shard_lease_request_errors_total", map[string]string{"request": reqDeletePeer.String()}); n != 1 {
		t.Fatalf("NotFound and Conflict on a dead peer's delete counted: lease_request_errors_total=%v, want 1", n)
	}
}
