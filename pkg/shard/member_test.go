package shard

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
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
