package shard

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/leaninformer/leaninformer/internal/metricstest"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// TestMemberLifecycle runs one member on client-go's fake clientset: it
// claims everything, publishes it in a Lease with the group's label and
// the finalizer, and on a clean stop deletes its Lease and returns nil.
// (test/envtest runs groups of members on a real API server.)
func TestMemberLifecycle(t *testing.T) {
	client := fake.NewClientset()
	m, err := New(client.CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithLogger(funcr.New(func(p, a string) { t.Log(p, a) }, funcr.Options{Verbosity: 2})),
		WithLeaseDuration(2*time.Second), WithRenewDeadline(time.Second), WithRenewInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()

	deadline := time.Now().Add(10 * time.Second)
	for !m.Serving().Equal(FullRange()) {
		if time.Now().After(deadline) {
			t.Fatalf("a lone member serves %s after 10s", m.Serving())
		}
		time.Sleep(10 * time.Millisecond)
	}
	l, err := client.CoordinationV1().Leases("ns").Get(ctx, m.LeaseName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Labels[LabelController] != "ctl" || l.Annotations[AnnotationRange] != FullRange().String() || len(l.Finalizers) != 1 {
		t.Fatalf("lease: labels %v annotations %v finalizers %v", l.Labels, l.Annotations, l.Finalizers)
	}
	_, workDone, ok := m.Begin(context.Background(), 42)
	if !ok {
		t.Fatal("work refused on a served hash")
	}
	if err := m.Start(ctx); err == nil {
		t.Fatal("a second Start succeeds")
	}

	cancel()
	// A stopping member serves nothing at once, but waits for its work.
	for deadline := time.Now().Add(10 * time.Second); !m.Serving().Empty(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a stopping member serves %s", m.Serving())
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the member stopped with work in flight: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	workDone()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("clean stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the member did not stop")
	}
	if _, err := client.CoordinationV1().Leases("ns").Get(context.Background(), m.LeaseName(), metav1.GetOptions{}); err == nil {
		t.Fatal("the Lease outlived a clean stop")
	}
}

// Member Lease names are name-identity, so two controllers' can collide:
// "ctl" with identity "x-a" and "ctl-x" with identity "a" both name theirs
// "ctl-x-a". A member that finds its Lease labelled for another controller
// stops with an error saying so and leaves the Lease as it was: writing it
// would take it out of the other controller's member set, whose members
// would then take over what its holder still serves.
func TestMemberRefusesAnotherControllersLease(t *testing.T) {
	client := fake.NewClientset()
	other, err := newConfig("ns", "ctl-x", []Option{WithIdentity("a")})
	if err != nil {
		t.Fatal(err)
	}
	theirs := other.buildLease(nil, "", FullRange(), time.Now())
	if _, err := client.CoordinationV1().Leases("ns").Create(context.Background(), theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := New(client.CoordinationV1(), "ns", "ctl", WithIdentity("x-a"), WithLogger(funcr.New(func(p, a string) { t.Log(p, a) }, funcr.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	if m.LeaseName() != theirs.Name {
		t.Fatalf("the names do not collide (%s, %s): the test tests nothing", m.LeaseName(), theirs.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = m.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), `"ctl-x"`) || !strings.Contains(err.Error(), "another identity") {
		t.Fatalf("Start with another controller's Lease name: %v, want an error naming that controller", err)
	}
	if !m.Serving().Empty() {
		t.Errorf("the member serves %s", m.Serving())
	}
	// Stopped, it is assigned nothing: its Reconciler drops requests rather
	// than retrying them every RetryAfter for as long as the process runs.
	for _, h := range []uint64{0, 42, 1 << 63} {
		if m.Assigned(h) {
			t.Errorf("the stopped member is still assigned hash %#x", h)
		}
	}
	l, err := client.CoordinationV1().Leases("ns").Get(context.Background(), theirs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Labels[LabelController] != "ctl-x" || *l.Spec.HolderIdentity != *theirs.Spec.HolderIdentity || l.Annotations[AnnotationRange] != theirs.Annotations[AnnotationRange] {
		t.Errorf("the other controller's Lease was changed: labels %v, holder %s, range %s", l.Labels, *l.Spec.HolderIdentity, l.Annotations[AnnotationRange])
	}
}

// A member stopped before any write of its Lease succeeded (its requests
// fail: an API server outage at startup) has served nothing and has
// nothing to release, so Start returns at once and cleanly, not after the
// stop timeout with an error.
func TestMemberStopsAtOnceBeforeItsLeaseWasWritten(t *testing.T) {
	client := fake.NewClientset()
	var failed atomic.Int64
	client.PrependReactor("*", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "get", "create", "update", "delete":
			failed.Add(1)
			return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
		}
		return false, nil, nil
	})
	m, err := New(client.CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithStopTimeout(time.Minute),
		WithLogger(funcr.New(func(p, a string) { t.Log(p, a) }, funcr.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); failed.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the member sent no Lease request")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start after a stop before the Lease was written: %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a member that never wrote its Lease did not stop within 5s of its context's end")
	}
	if m.Assigned(42) || !m.Serving().Empty() {
		t.Errorf("the stopped member is assigned hash 42: %v, serves %s", m.Assigned(42), m.Serving())
	}
}

// testLogger logs to t, up to V(1), each line prefixed.
func testLogger(t *testing.T, prefix string) logr.Logger {
	return funcr.New(func(p, a string) { t.Log(prefix, p, a) }, funcr.Options{Verbosity: 1})
}

// startMember runs m.Start in the background.
func startMember(m *Member) (cancel func(), done <-chan error) {
	ctx, c := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- m.Start(ctx) }()
	return c, ch
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// newTestMetrics is a metrics set registered in a registry of its own.
func newTestMetrics(t *testing.T) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	mx := metrics.New()
	reg := prometheus.NewRegistry()
	if err := mx.Register(reg); err != nil {
		t.Fatal(err)
	}
	return mx, reg
}

// metricValue is the value of the first gauge or counter name in reg whose
// labels include labels, 0 if there is none.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	series, err := metricstest.Find(reg, name, labels)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) == 0 {
		return 0
	}
	return series[0].Value
}

// A member whose own Lease disappears (the finalizer removed by hand, then
// the Lease deleted; here the fake clientset has no finalizers) finds it
// gone when its renewal fails. A peer that saw the Lease go claims its
// range and verifies the claim: the member must stop serving at once and
// claim its share again like a newcomer, not re-create its Lease publishing
// what it served without the verifying LIST.
func TestMemberWhoseLeaseVanishesStopsServing(t *testing.T) {
	client := fake.NewClientset()
	a, err := New(client.CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithLogger(testLogger(t, "A")), WithMetrics(nil),
		WithLeaseDuration(3*time.Second), WithRenewDeadline(2*time.Second), WithRenewInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(client.CoordinationV1(), "ns", "ctl", WithIdentity("b"), WithLogger(testLogger(t, "B")), WithMetrics(nil),
		WithLeaseDuration(3*time.Second), WithRenewDeadline(2*time.Second), WithRenewInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	cancelA, doneA := startMember(a)
	defer func() { cancelA(); t.Logf("a.Start: %v", <-doneA) }() // how a ends is not this test's question
	waitFor(t, "a serving everything", 10*time.Second, func() bool { return a.Serving().Equal(FullRange()) })
	cancelB, doneB := startMember(b)
	defer func() { cancelB(); t.Logf("b.Start: %v", <-doneB) }()
	waitFor(t, "a and b splitting the space", 15*time.Second, func() bool {
		sa, sb := a.Serving(), b.Serving()
		return !sa.Empty() && !sb.Empty() && sa.Union(sb).Equal(FullRange()) && !sa.Overlaps(sb)
	})
	if err := client.CoordinationV1().Leases("ns").Delete(context.Background(), a.LeaseName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		sa, sb := a.Serving(), b.Serving()
		if both := sa.Intersect(sb); !both.Empty() {
			t.Fatalf("after a's Lease was deleted, a and b both serve share %.3f of the hash space (a serves %.3f, b serves %.3f)",
				both.Fraction(), sa.Fraction(), sb.Fraction())
		}
	}
	// The group settles again: both serve, disjoint, everything.
	waitFor(t, "a and b splitting the space again", 15*time.Second, func() bool {
		sa, sb := a.Serving(), b.Serving()
		return !sa.Empty() && !sb.Empty() && sa.Union(sb).Equal(FullRange()) && !sa.Overlaps(sb)
	})
}

// A member that finds its Lease taken over (a second process of its
// identity) stops serving, and records that it serves nothing: its serving
// gauges do not report the range it served last after Start returned.
func TestMemberWhoseLeaseIsTakenOverRecordsNothingServed(t *testing.T) {
	client := fake.NewClientset()
	var conflict atomic.Bool
	client.PrependReactor("update", "leases", func(act k8stesting.Action) (bool, runtime.Object, error) {
		if conflict.Load() {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "ctl-a", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	mx, reg := newTestMetrics(t)
	m, err := New(client.CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithLogger(testLogger(t, "A")), WithMetrics(mx),
		WithLeaseDuration(2*time.Second), WithRenewDeadline(time.Second), WithRenewInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	cancel, done := startMember(m)
	defer cancel()
	waitFor(t, "serving everything", 10*time.Second, func() bool { return m.Serving().Equal(FullRange()) })
	if share := metricValue(t, reg, "leaninformer_shard_serving_share", map[string]string{"controller": "ctl"}); share != 1 {
		t.Fatalf("serving everything, serving_share=%v", share)
	}

	// A second process of identity "a" takes the Lease over.
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	obj, err := client.Tracker().Get(gvr, "ns", m.LeaseName())
	if err != nil {
		t.Fatal(err)
	}
	l := obj.(*coordinationv1.Lease).DeepCopy()
	twin := "a_twin"
	l.Spec.HolderIdentity = &twin
	if err := client.Tracker().Update(gvr, l, "ns"); err != nil {
		t.Fatal(err)
	}
	conflict.Store(true)
	var startErr error
	select {
	case startErr = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the member did not notice the takeover")
	}
	if startErr == nil || !m.Serving().Empty() {
		t.Fatalf("Start: %v, serving %s; want an error and nothing served", startErr, m.Serving())
	}
	share := metricValue(t, reg, "leaninformer_shard_serving_share", map[string]string{"controller": "ctl"})
	terms := metricValue(t, reg, "leaninformer_shard_serving_terms", map[string]string{"controller": "ctl"})
	if share != 0 || terms != 0 {
		t.Fatalf("Start returned %q and the member serves nothing, but serving_share=%v serving_terms=%v", startErr, share, terms)
	}
}

// In an API server outage at start (the Lease watch's LIST fails too), a
// member stopped by its context has written and served nothing: Start
// returns nil, as after any clean stop, and the failed LISTs are counted in
// lease_request_errors_total.
func TestMemberStoppedBeforeTheLeasesCouldBeListed(t *testing.T) {
	client := fake.NewClientset()
	var failed atomic.Int64
	client.PrependReactor("*", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		failed.Add(1)
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	mx, reg := newTestMetrics(t)
	m, err := New(client.CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithLogger(testLogger(t, "A")), WithMetrics(mx))
	if err != nil {
		t.Fatal(err)
	}
	cancel, done := startMember(m)
	waitFor(t, "a request", 10*time.Second, func() bool { return failed.Load() >= 1 })
	time.Sleep(500 * time.Millisecond)
	errs := metricValue(t, reg, "leaninformer_shard_lease_request_errors_total", map[string]string{"request": "list leases"})
	cancel()
	select {
	case err := <-done:
		if err != nil || errs == 0 {
			t.Fatalf("Start after a stop during an outage at start: %v (want nil); %d failed Lease requests, lease_request_errors_total=%v", err, failed.Load(), errs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("did not stop")
	}
	if !m.Serving().Empty() {
		t.Errorf("the stopped member serves %s", m.Serving())
	}
}

// Labels, annotations and finalizers that others put on a member's Lease
// (kubectl annotate, a GitOps tool, a policy controller) outlive the
// member's renewals, while the member's own keys stay what it writes; at a
// clean stop the member removes its finalizer only, so the Lease waits,
// terminating, for the other tool's.
func TestMemberKeepsWhatOthersPutOnItsLease(t *testing.T) {
	client := fake.NewClientset()
	serveLeasesLikeTheAPIServer(client)
	m, err := New(client.CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithLogger(testLogger(t, "A")), WithMetrics(nil),
		WithLeaseDuration(2*time.Second), WithRenewDeadline(time.Second), WithRenewInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	cancel, done := startMember(m)
	defer cancel()
	waitFor(t, "serving everything", 10*time.Second, func() bool { return m.Serving().Equal(FullRange()) })

	leases := client.CoordinationV1().Leases("ns")
	l, err := leases.Get(context.Background(), m.LeaseName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Labels["team"] = "payments"
	l.Annotations["example.com/note"] = "keep me"
	l.Annotations[AnnotationBuckets] = "7" // ours: the member's value wins
	l.Finalizers = append(l.Finalizers, "example.com/keep")
	if l, err = leases.Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	annotated, _ := strconv.Atoi(l.ResourceVersion)
	// Renewals after the annotation: the member wrote its own keys again.
	waitFor(t, "two renewals after the annotation", 10*time.Second, func() bool {
		l, err = leases.Get(context.Background(), m.LeaseName(), metav1.GetOptions{})
		rv, _ := strconv.Atoi(l.ResourceVersion)
		return err == nil && rv > annotated+1 && l.Annotations[AnnotationBuckets] == strconv.Itoa(DefaultBuckets)
	})
	if l.Labels["team"] != "payments" || l.Annotations["example.com/note"] != "keep me" || !slices.Contains(l.Finalizers, "example.com/keep") {
		t.Errorf("after the member's renewals the Lease lost what another tool put on it: labels %v, annotations %v, finalizers %v",
			l.Labels, l.Annotations, l.Finalizers)
	}
	if l.Labels[LabelController] != "ctl" || l.Annotations[AnnotationRange] != FullRange().String() || !slices.Contains(l.Finalizers, Finalizer) {
		t.Errorf("the member's own keys: labels %v, annotations %v, finalizers %v", l.Labels, l.Annotations, l.Finalizers)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("clean stop: %v", err)
	}
	l, err = leases.Get(context.Background(), m.LeaseName(), metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("after the clean stop the Lease is gone (%v): the member removed the other tool's finalizer too", err)
	case l.DeletionTimestamp == nil || !slices.Equal(l.Finalizers, []string{"example.com/keep"}) || l.Annotations[AnnotationRange] != "":
		t.Errorf("after the clean stop: deletionTimestamp %v, finalizers %v, range %q; want terminating, the other tool's finalizer only, nothing published",
			l.DeletionTimestamp, l.Finalizers, l.Annotations[AnnotationRange])
	}
}

// A member's Lease says, as the Lease API documents, when its holder
// acquired it (spec.acquireTime, kept through renewals) and how often its
// holder changed (spec.leaseTransitions: 0 when created, one more when a
// new process of the identity takes it over).
func TestMemberLeaseAcquireTimeAndTransitions(t *testing.T) {
	client := fake.NewClientset()
	serveLeasesLikeTheAPIServer(client)
	leases := client.CoordinationV1().Leases("ns")
	opts := []Option{WithLogger(logr.Discard()), WithMetrics(nil),
		WithLeaseDuration(2 * time.Second), WithRenewDeadline(time.Second), WithRenewInterval(100 * time.Millisecond)}

	// "b" creates its Lease.
	b, err := New(client.CoordinationV1(), "ns", "ctl", append(opts, WithIdentity("b"))...)
	if err != nil {
		t.Fatal(err)
	}
	before := metav1.NewMicroTime(time.Now().Add(-time.Second))
	cancelB, doneB := startMember(b)
	defer func() {
		cancelB()
		if err := <-doneB; err != nil {
			t.Errorf("b's clean stop: %v", err)
		}
	}()
	waitFor(t, "b serving", 10*time.Second, func() bool { return !b.Serving().Empty() })
	l, err := leases.Get(context.Background(), b.LeaseName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.AcquireTime == nil || l.Spec.AcquireTime.Before(&before) || l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 0 {
		t.Fatalf("a created member Lease: acquireTime %v, leaseTransitions %v; want the creation's time and 0", l.Spec.AcquireTime, l.Spec.LeaseTransitions)
	}
	acquired, renewed := *l.Spec.AcquireTime, *l.Spec.RenewTime
	waitFor(t, "b renewing", 10*time.Second, func() bool {
		l, err = leases.Get(context.Background(), b.LeaseName(), metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(renewed.Time)
	})
	if !l.Spec.AcquireTime.Equal(&acquired) || *l.Spec.LeaseTransitions != 0 {
		t.Errorf("renewed by its holder: acquireTime %v (was %v), leaseTransitions %d; want both unchanged", l.Spec.AcquireTime, acquired, *l.Spec.LeaseTransitions)
	}

	// An earlier process of "a" left its Lease (publishing nothing), after
	// 2 transitions; a new process of "a" takes it over.
	earlier, err := newConfig("ns", "ctl", []Option{WithIdentity("a")})
	if err != nil {
		t.Fatal(err)
	}
	old := earlier.buildLease(nil, "", Range{}, time.Now().Add(-time.Minute))
	two := int32(2)
	old.Spec.LeaseTransitions, old.Spec.AcquireTime = &two, old.Spec.RenewTime
	if _, err := leases.Create(context.Background(), old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := New(client.CoordinationV1(), "ns", "ctl", append(opts, WithIdentity("a"))...)
	if err != nil {
		t.Fatal(err)
	}
	before = metav1.NewMicroTime(time.Now().Add(-time.Second))
	cancelA, doneA := startMember(a)
	defer func() {
		cancelA()
		if err := <-doneA; err != nil {
			t.Errorf("a's clean stop: %v", err)
		}
	}()
	waitFor(t, "a writing its Lease", 10*time.Second, func() bool {
		l, err = leases.Get(context.Background(), a.LeaseName(), metav1.GetOptions{})
		return err == nil && *l.Spec.HolderIdentity == a.cfg.holder
	})
	if l.Spec.AcquireTime == nil || l.Spec.AcquireTime.Before(&before) || l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 3 {
		t.Errorf("a Lease taken over by a new process: acquireTime %v, leaseTransitions %v; want the takeover's time and 3", l.Spec.AcquireTime, l.Spec.LeaseTransitions)
	}
}

// Once Start has returned, the member sees no members: its members gauge
// says 0, as its serving gauges say that it serves nothing, whether it
// stopped cleanly (while its peers run on) or lost its Lease.
func TestMemberThatStoppedRecordsNoMembers(t *testing.T) {
	opts := []Option{WithLeaseDuration(2 * time.Second), WithRenewDeadline(time.Second), WithRenewInterval(100 * time.Millisecond)}
	t.Run("clean stop", func(t *testing.T) {
		client := fake.NewClientset()
		mx, reg := newTestMetrics(t)
		a, err := New(client.CoordinationV1(), "ns", "ctl", append(opts, WithIdentity("a"), WithLogger(testLogger(t, "A")), WithMetrics(mx))...)
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(client.CoordinationV1(), "ns", "ctl", append(opts, WithIdentity("b"), WithLogger(testLogger(t, "B")), WithMetrics(nil))...)
		if err != nil {
			t.Fatal(err)
		}
		cancelB, doneB := startMember(b)
		defer func() {
			cancelB()
			if err := <-doneB; err != nil {
				t.Errorf("b's clean stop: %v", err)
			}
		}()
		cancelA, doneA := startMember(a)
		waitFor(t, "a seeing two members", 10*time.Second, func() bool {
			return metricValue(t, reg, "leaninformer_shard_members", map[string]string{"controller": "ctl"}) == 2
		})
		cancelA()
		if err := <-doneA; err != nil {
			t.Fatalf("clean stop: %v", err)
		}
		if n := metricValue(t, reg, "leaninformer_shard_members", map[string]string{"controller": "ctl"}); n != 0 {
			t.Errorf("a's Start returned after a clean stop, but its members gauge says %v", n)
		}
	})
	t.Run("lease lost", func(t *testing.T) {
		client := fake.NewClientset()
		other, err := newConfig("ns", "ctl-x", []Option{WithIdentity("a")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoordinationV1().Leases("ns").Create(context.Background(), other.buildLease(nil, "", FullRange(), time.Now()), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mx, reg := newTestMetrics(t)
		m, err := New(client.CoordinationV1(), "ns", "ctl", append(opts, WithIdentity("x-a"), WithLogger(testLogger(t, "A")), WithMetrics(mx))...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := m.Start(ctx); err == nil {
			t.Fatal("Start with another controller's Lease name succeeded")
		}
		if n := metricValue(t, reg, "leaninformer_shard_members", map[string]string{"controller": "ctl"}); n != 0 {
			t.Errorf("Start returned an error (the Lease is another controller's), but the members gauge says %v", n)
		}
	})
}
