package listerwatcher

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// hangingCalls builds a cache.ListWatch with only the context-less
// ListFunc and WatchFunc, whose calls that hang picks block until release
// is called, then go on to the fake server.
type hangingCalls struct {
	srv     *fake.Server
	hang    func(verb string, opts metav1.ListOptions) bool
	entered chan struct{} // closed when the first call hangs
	once    sync.Once
	release chan struct{}
}

func newHangingCalls(srv *fake.Server, hang func(verb string, opts metav1.ListOptions) bool) *hangingCalls {
	return &hangingCalls{srv: srv, hang: hang, entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *hangingCalls) wait(verb string, opts metav1.ListOptions) {
	if h.hang(verb, opts) {
		h.once.Do(func() { close(h.entered) })
		<-h.release
	}
}

func (h *hangingCalls) listWatch() *toolscache.ListWatch {
	lw := h.srv.ListerWatcher()
	return &toolscache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) { //nolint:staticcheck // SA1019: the context-less calls are under test
			h.wait("list", opts)
			return lw.List(opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) { //nolint:staticcheck // SA1019: the context-less calls are under test
			h.wait("watch", opts)
			return lw.Watch(opts)
		},
	}
}

// returnsWithin cancels run's context once a call hangs and reports
// whether run returns within d. It waits for run to return in any case,
// releasing the hung call after d.
func returnsWithin(t *testing.T, h *hangingCalls, d time.Duration, run func(ctx context.Context)) bool {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	select {
	case <-h.entered:
	case <-time.After(guard):
		t.Fatal("no call hung")
	}
	cancel()
	returned := true
	select {
	case <-done:
	case <-time.After(d):
		returned = false
	}
	close(h.release) // the hung call returns: nothing may outlive it
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("Run did not return once the hung call did")
	}
	return returned
}

// With a ListerWatcher whose calls ignore their context, cancelling Run's
// context returns Run within a second wherever a call hangs; once the call
// returns, nothing is left: a watch that opened late is stopped and the
// goroutine that waited for the call is gone. client-go's reflector, on the
// same ListerWatcher, returns at once from a hung LIST (it lists on a
// goroutine of its own) but waits for a hung WATCH, streaming or not.
func TestRunReturnsPromptlyWhenAContextLessCallHangs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy Strategy
		watchLis bool // client-go's WatchListClient feature gate
		hang     func(verb string, opts metav1.ListOptions) bool
		// clientGoReturns: whether client-go's reflector returns within the
		// second, as observed.
		clientGoReturns bool
	}{
		{"LIST hangs", ListWatch, false,
			func(verb string, _ metav1.ListOptions) bool { return verb == "list" }, true},
		{"WATCH hangs", ListWatch, false,
			func(verb string, _ metav1.ListOptions) bool { return verb == "watch" }, false},
		{"streaming WATCH hangs", StreamingList, true,
			func(verb string, _ metav1.ListOptions) bool { return verb == "watch" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, tc.watchLis)

			srv := newServer(t, 3)
			// client-go's informers hand the reflector their ListWatch
			// wrapped; its context-aware methods are the ListWatch's.
			for _, wrap := range []bool{false, true} {
				ours := newHangingCalls(srv, tc.hang)
				var lw toolscache.ListerWatcher = ours.listWatch()
				if wrap {
					lw = toolscache.ToListWatcherWithWatchListSemantics(ours.listWatch(), nil)
				}
				w, err := New(lw, WithStrategy(tc.strategy))
				if err != nil {
					t.Fatal(err)
				}
				if !returnsWithin(t, ours, time.Second, func(ctx context.Context) {
					if err := w.Run(ctx, ConsumerFunc(func(context.Context, Event) error { return nil })); err != nil {
						t.Errorf("Run: %v", err)
					}
				}) {
					t.Errorf("Run (ListWatch wrapped by client-go: %v) did not return within a second of its context's end", wrap)
				}
			}

			theirs := newHangingCalls(srv, tc.hang)
			r := toolscache.NewReflectorWithOptions(theirs.listWatch(), &corev1.ConfigMap{},
				toolscache.NewStore(toolscache.MetaNamespaceKeyFunc), toolscache.ReflectorOptions{})
			if got := returnsWithin(t, theirs, time.Second, r.RunWithContext); got != tc.clientGoReturns {
				t.Errorf("client-go's reflector returned within a second: %v, want %v (client-go changed: update the README)", got, tc.clientGoReturns)
			}

			// The watch a hung call opened after Run gave up is stopped.
			deadline := time.Now().Add(guard)
			for srv.OpenWatches() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("%d watches open after the hung calls returned", srv.OpenWatches())
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

func TestDetachedCallHandsOnItsPanic(t *testing.T) {
	defer func() {
		if r := recover(); r != "list bug" {
			t.Errorf("recovered %v, want the call's panic", r)
		}
	}()
	_, _ = detach(context.Background(), func() (int, error) { panic("list bug") }, func(int) {})
	t.Error("detach returned after its call panicked")
}

func TestContextAwareCallsAreNotDetached(t *testing.T) {
	lw := fake.NewServer(&corev1.ConfigMapList{}).ListerWatcher()
	if list, watch := ignoresContext(lw); list || watch {
		t.Errorf("the fake's ListerWatcher ignores its context: list %v, watch %v", list, watch)
	}
	withCtx := &toolscache.ListWatch{ListWithContextFunc: lw.ListWithContext, WatchFunc: lw.Watch} //nolint:staticcheck // SA1019: a context-less WatchFunc is under test
	if list, watch := ignoresContext(withCtx); list || !watch {
		t.Errorf("a ListWatch with ListWithContextFunc and WatchFunc ignores its context: list %v, watch %v; want false, true", list, watch)
	}
	if list, watch := ignoresContext(toolscache.ToListWatcherWithWatchListSemantics(withCtx, nil)); list || !watch {
		t.Errorf("client-go's wrapper of that ListWatch: list %v, watch %v; want false, true", list, watch)
	}
	if list, watch := ignoresContext(contextLessLW{lw}); !list || !watch {
		t.Errorf("a ListerWatcher with only List and Watch: list %v, watch %v; want both ignoring the context", list, watch)
	}
}

// A context-less call still running when its caller gave up, that panics
// afterwards (a client torn down at shutdown, say), must not crash the
// process: nobody can recover it any more. It is logged and dropped, as
// client-go's reflector drops its abandoned list's panic. Were it raised
// again, this test binary would crash.
func TestAbandonedCallThatPanicsLaterIsDropped(t *testing.T) {
	logged := capturedErrors(t)
	ctx, cancel := context.WithCancel(context.Background())
	entered, release := make(chan struct{}), make(chan struct{})
	go func() {
		<-entered
		cancel()
	}()
	_, err := detach(ctx, func() (int, error) {
		close(entered)
		<-release
		panic("client torn down")
	}, func(int) { t.Error("a call that panicked has nothing to abandon") })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("detach returned %v, want the context's end", err)
	}
	close(release)
	timeout := time.After(guard)
	for {
		select {
		case msg := <-logged: // other tests' leftover calls may log too
			if strings.Contains(msg, "abandoned") {
				return
			}
		case <-timeout:
			t.Fatal("the late panic was not logged")
		}
	}
}
