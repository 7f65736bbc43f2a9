package shard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
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
	m := idleMember(t)
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
