package informer_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// SyncStatus says why an informer has not synced yet: a program whose
// caches do not sync logs it rather than a bare "timed out". Here the API
// server forbids the informer to list ConfigMaps until its RBAC is fixed;
// the informer retries after each backoff and syncs once it may. Its first
// failure is the streaming list it tries by default (Auto); it falls back to
// a paginated LIST at once, which fails too, then waits. A fake
// clock makes the durations exact; in a program the informer reads the
// real one.
func ExampleSharedIndexInformer_SyncStatus() {
	server, fixRBAC := forbiddingServer() // answers 403 until fixRBAC
	defer server.Close()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))

	inf := informer.NewSharedIndexInformerWithOptions(server.ListerWatcher(), &corev1.ConfigMap{},
		toolscache.SharedIndexInformerOptions{},
		informer.WithClock(clk), informer.WithMetrics(nil), informer.WithSyncWarningAfter(0),
		informer.WithBackoff(informer.Backoff{Initial: time.Minute, Factor: 2, Cap: 5 * time.Minute}))
	failed := make(chan error, 10)
	_ = inf.SetWatchErrorHandler(func(_ *toolscache.Reflector, err error) { failed <- err })
	fmt.Println(inf.SyncStatus())

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard())) // the informer logs to ctx's logger
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	fmt.Println("watch error handler:", <-failed)

	awaitBackoff(clk)
	clk.Step(20 * time.Second)
	st := inf.SyncStatus()
	fmt.Println(st)
	fmt.Println("forbidden:", apierrors.IsForbidden(st.LastError))

	fixRBAC()
	clk.Step(40 * time.Second) // the backoff ends: the informer lists again
	toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	fmt.Println(inf.SyncStatus())

	cancel()
	<-done
	// Output:
	// not running
	// watch error handler: failed to list *v1.ConfigMap: configmaps is forbidden: User "system:serviceaccount:default:app" cannot list resource "configmaps"
	// not synced after 20s: forbidden by RBAC: the client may not list or watch this resource (2 failures, last 20s ago: configmaps is forbidden: User "system:serviceaccount:default:app" cannot list resource "configmaps")
	// forbidden: true
	// synced
}

// forbiddingServer returns an empty fake API server of ConfigMaps that
// forbids every request until fixRBAC is called.
func forbiddingServer() (server *fake.Server, fixRBAC func()) {
	server = fake.NewServer(&corev1.ConfigMapList{})
	var allowed atomic.Bool
	server.SetFault(func(_ context.Context, req fake.Request) error {
		if allowed.Load() {
			return nil
		}
		return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "",
			errors.New(`User "system:serviceaccount:default:app" cannot `+req.Verb+` resource "configmaps"`))
	})
	return server, func() { allowed.Store(true) }
}

// awaitBackoff waits until the informer waits on clk: its backoff timer,
// the only timer of an informer without resync or sync warnings that is
// not watching.
func awaitBackoff(clk *clocktesting.FakeClock) {
	for clk.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
}
