package shard

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// startLoneMember runs a member alone on a fake clientset until it serves
// everything; the returned stop stops it and waits.
func startLoneMember(t *testing.T) (*Member, func()) {
	t.Helper()
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithLogger(logr.Discard()),
		WithLeaseDuration(2*time.Second), WithRenewDeadline(time.Second), WithRenewInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); !m.Serving().Equal(FullRange()); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a lone member does not serve everything after 10s")
		}
	}
	return m, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("stopping the member: %v", err)
		}
	}
}

func TestReconcilerReconcilesOnlyServedObjects(t *testing.T) {
	m, stop := startLoneMember(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "present", UID: "u-1"}}
	reader := crfake.NewClientBuilder().WithObjects(cm).Build()
	var reconciled []string
	inner := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if ctx.Err() != nil {
			t.Errorf("reconcile of %s got a done context", req.Name)
		}
		reconciled = append(reconciled, req.Name)
		return reconcile.Result{}, nil
	})
	r := Reconciler(m, ObjectKey(m, reader, &corev1.ConfigMap{}), inner)
	for _, name := range []string{"present", "absent"} {
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if len(reconciled) != 1 || reconciled[0] != "present" {
		t.Fatalf("reconciled %v, want the object in the cache only", reconciled)
	}

	failing := Reconciler(m, func(context.Context, reconcile.Request) (string, bool, error) {
		return "", false, errors.New("cache not synced")
	}, inner)
	if _, err := failing.Reconcile(context.Background(), reconcile.Request{}); err == nil {
		t.Fatal("a key error is not returned")
	}

	stop()
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "present"}}); err != nil {
		t.Fatal(err)
	}
	if len(reconciled) != 1 {
		t.Fatalf("a stopped member reconciled %v", reconciled)
	}
}

func TestRequestKeys(t *testing.T) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "x"}}
	if v, ok, _ := RequestNamespace(context.Background(), req); v != "team-a" || !ok {
		t.Errorf("RequestNamespace = %q", v)
	}
	if v, ok, _ := RequestName(context.Background(), req); v != "x" || !ok {
		t.Errorf("RequestName = %q", v)
	}
}

// TestReconcilerRetriesWhatIsComing: a request for a hash the member is
// assigned but does not serve yet, or serves while a sharded cache does not
// hold it yet, is retried, not dropped.
func TestReconcilerRetriesWhatIsComing(t *testing.T) {
	// Requests placed by their namespace, with a member of that key.
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithKey(KeyNamespace), WithLogger(logr.Discard()), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	r := Reconciler(m, RequestNamespace, reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		calls++
		return reconcile.Result{}, nil
	}))
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "x"}}

	// Before the member's first assignment (the manager starts the
	// controllers with it) every request may be its own: retried, not
	// dropped for good, for nothing would send it again.
	if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != RetryAfter || calls != 0 {
		t.Fatalf("before the first assignment: %+v, %v, %d calls; want a retry", res, err, calls)
	}

	m.gate.assign(FullRange()) // assigned, not served: another member still hands it over
	if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != RetryAfter {
		t.Fatalf("assigned, not served: %+v, %v", res, err)
	}
	m.gate.assign(Range{}) // another member's
	if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("another member's: %+v, %v", res, err)
	}

	m.gate.assign(FullRange())
	m.gate.set(FullRange(), time.Now().Add(time.Hour))
	cache := m.TrackCache() // a sharded cache that holds nothing yet
	if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != RetryAfter || calls != 0 {
		t.Fatalf("served, not cached: %+v, %v, %d calls", res, err, calls)
	}
	cache.Set(FullRange())
	if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != 0 || calls != 1 {
		t.Fatalf("served and cached: %+v, %v, %d calls", res, err, calls)
	}
	cache.Close()
	if !m.CachesHold(0) {
		t.Fatal("a closed cache still counts")
	}
}

// logLines collects a logger's lines (message and values), safe for
// concurrent use.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{})
}

// matching is the lines that contain s.
func (l *logLines) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// A Reconciler retries every request until its member has computed its
// first assignment. When that takes longer than a lease duration it says
// why, once, at level 0: the member was never started (not added to the
// manager), or it has not listed the member Leases (RBAC, an outage).
func TestReconcilerSaysWhyItsMemberHasNoAssignment(t *testing.T) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "x"}}
	inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	for _, tc := range []struct {
		name  string
		start bool
		want  string
	}{
		{"never started", false, "has not been started"},
		{"leases forbidden", true, "has not listed the member Leases"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			var lists atomic.Int64
			client.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
				lists.Add(1)
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "",
					errors.New(`User "system:serviceaccount:ns:ctl" cannot list resource "leases"`))
			})
			clk := testingclock.NewFakeClock(time.Now())
			var logs logLines
			m, err := New(client.CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithKey(KeyNamespace), WithLogger(logs.logger()), WithMetrics(nil), WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			if tc.start {
				cancel, done := startMember(m)
				defer func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("stopping the member: %v", err)
					}
				}()
				waitFor(t, "the member listing its Leases", 10*time.Second, func() bool { return lists.Load() > 0 })
			}
			r := Reconciler(m, RequestNamespace, inner)
			reconcileAt := func(d, wantAfter time.Duration) {
				t.Helper()
				clk.Step(d)
				if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != wantAfter {
					t.Fatalf("before the first assignment: %+v, %v; want a retry after %v", res, err, wantAfter)
				}
			}
			reconcileAt(0, RetryAfter)
			reconcileAt(DefaultLeaseDuration-time.Millisecond, RetryAfter)
			if said := logs.matching(tc.want); len(said) != 0 {
				t.Fatalf("logged before a lease duration had passed: %q", said)
			}
			reconcileAt(time.Millisecond, 2*RetryAfter) // a lease duration: the retries grow apart
			reconcileAt(time.Minute, 32*RetryAfter)     // five lease durations
			reconcileAt(10*time.Minute, MaxRetryAfter)  // and no further
			if said := logs.matching(tc.want); len(said) != 1 {
				t.Fatalf("requests retried for %v for want of an assignment; log lines saying %q: %q, want one", DefaultLeaseDuration+time.Minute, tc.want, said)
			}
		})
	}
}

// A sharded cache that never completes a list (its informer may not list
// its kind) holds nothing, so that every request of every controller of
// its member is retried for as long as it lasts. After a lease duration
// the member says so, once, naming the cache.
func TestReconcilerSaysWhichCacheHoldsNothing(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	var logs logLines
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithKey(KeyNamespace), WithLogger(logs.logger()), WithMetrics(nil), WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	m.gate.assign(FullRange())
	m.gate.set(FullRange(), clk.Now().Add(time.Hour))
	listed := m.TrackCacheOf("*v1.ConfigMap")
	listed.Set(FullRange())
	never := m.TrackCacheOf("*v1.Secret") // forbidden to list Secrets
	defer listed.Close()
	defer never.Close()
	r := Reconciler(m, RequestNamespace, reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		t.Error("reconciled while a cache holds nothing")
		return reconcile.Result{}, nil
	}))
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "x"}}
	const want = "has not completed a list"
	reconcileAt := func(d, wantAfter time.Duration) {
		t.Helper()
		clk.Step(d)
		if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != wantAfter {
			t.Fatalf("a cache holds nothing: %+v, %v; want a retry after %v", res, err, wantAfter)
		}
	}
	reconcileAt(0, RetryAfter)
	reconcileAt(DefaultLeaseDuration-time.Millisecond, RetryAfter)
	if said := logs.matching(want); len(said) != 0 {
		t.Fatalf("logged before a lease duration had passed: %q", said)
	}
	reconcileAt(time.Millisecond, 2*RetryAfter)
	reconcileAt(time.Minute, 32*RetryAfter)
	said := logs.matching(want)
	if len(said) != 1 || !strings.Contains(said[0], "*v1.Secret") || strings.Contains(said[0], "*v1.ConfigMap") {
		t.Fatalf("every request retried for %v because a cache holds nothing; log lines saying %q: %q, want one naming *v1.Secret only",
			DefaultLeaseDuration+time.Minute, want, said)
	}
	// Once the cache lists, its wait starts again from RetryAfter.
	never.Set(Range{})
	reconcileAt(0, RetryAfter)
}

// The retries of a request the member keeps back grow apart once the wait
// has lasted a lease duration, and stop growing at MaxRetryAfter.
func TestRetryDelay(t *testing.T) {
	const lease = 15 * time.Second
	for _, tc := range []struct {
		waited, want time.Duration
	}{
		{0, RetryAfter},
		{lease - time.Nanosecond, RetryAfter},
		{lease, 2 * RetryAfter},
		{2*lease - time.Nanosecond, 2 * RetryAfter},
		{2 * lease, 4 * RetryAfter},
		{7 * lease, 128 * RetryAfter}, // 25.6 s
		{8 * lease, MaxRetryAfter},    // 51.2 s, but for the bound
		{1000 * time.Hour, MaxRetryAfter},
	} {
		if got := retryDelay(tc.waited, lease); got != tc.want {
			t.Errorf("retryDelay(%v, %v) = %v, want %v", tc.waited, lease, got, tc.want)
		}
	}
}
