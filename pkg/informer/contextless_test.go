package informer

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	toolscache "k8s.io/client-go/tools/cache"
)

// Issue 15, item 3: RunWithContext with a cache.ListWatch that has only the
// context-less ListFunc and WatchFunc returns within a second of its
// context's end wherever a call hangs, and leaves nothing once the call
// returns. client-go's informer, on the same ListerWatcher, returns at once
// from a hung LIST but not from a hung WATCH.
func TestRunWithContextReturnsWhenAContextLessCallHangs(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	for _, tc := range []struct {
		verb            string
		clientGoReturns bool
	}{{"list", true}, {"watch", false}} {
		t.Run(tc.verb, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			s := newServer(t, 3)
			for _, name := range []string{"ours", "client-go"} {
				entered, release := make(chan struct{}), make(chan struct{})
				var once sync.Once
				hang := func(verb string) {
					if verb == tc.verb {
						once.Do(func() { close(entered) })
						<-release
					}
				}
				fake := s.ListerWatcher()
				lw := &toolscache.ListWatch{
					ListFunc: func(opts metav1.ListOptions) (kruntime.Object, error) { //nolint:staticcheck // SA1019: the context-less calls are under test
						hang("list")
						return fake.List(opts)
					},
					WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) { //nolint:staticcheck // SA1019: the context-less calls are under test
						hang("watch")
						return fake.Watch(opts)
					},
				}
				var inf toolscache.SharedIndexInformer
				if name == "ours" {
					inf = NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{}, WithBackoff(fastBackoff))
				} else {
					inf = toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); inf.RunWithContext(ctx) }()
				<-entered
				cancel()
				returned := true
				select {
				case <-done:
				case <-time.After(time.Second):
					returned = false
				}
				close(release)
				<-done
				switch {
				case name == "ours" && !returned:
					t.Error("RunWithContext did not return within a second of its context's end")
				case name == "client-go" && returned != tc.clientGoReturns:
					t.Errorf("client-go's RunWithContext returned within a second: %v, want %v (client-go changed: update the README)", returned, tc.clientGoReturns)
				}
			}
			eventually(t, "the watches opened late to be stopped", func() bool { return s.OpenWatches() == 0 })
		})
	}
}
