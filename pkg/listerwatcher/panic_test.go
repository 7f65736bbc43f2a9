package listerwatcher

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2/ktesting"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// withoutCrashing turns utilruntime.ReallyCrash off for the test, as a
// program that wants panics recovered does.
func withoutCrashing(t *testing.T) {
	saved := utilruntime.ReallyCrash
	utilruntime.ReallyCrash = false
	t.Cleanup(func() { utilruntime.ReallyCrash = saved })
}

// expectPanicFailure reads the next reported error and fails unless it is
// the recovered panic of value.
func (h *harness) expectPanicFailure(value any) {
	h.t.Helper()
	err := h.err()
	var f *Failure
	var p *PanicError
	if !errors.As(err, &f) || f.Op != OpPanic || f.Decision.Cause != CausePanic || !errors.As(err, &p) || p.Value != value {
		h.t.Errorf("reported %v, want the recovered panic %q", err, value)
	}
}

// With ReallyCrash off, a consumer that panics on a live event is a failure
// like one that returns an error: the watch it was handed is stopped, and
// the watcher relists after its backoff.
func TestConsumerPanicRelistsAfterBackoff(t *testing.T) {
	withoutCrashing(t)
	srv := newServer(t, 3)
	var panicked atomic.Bool
	h := startHandled(t, srv, nil, func(_ context.Context, ev Event) error {
		if ev.Type == Deleted && panicked.CompareAndSwap(false, true) {
			panic("handler bug")
		}
		return nil
	}, WithStrategy(ListWatch))
	h.restart()
	h.watchStarted()
	if _, err := srv.Delete("ns", "cm-00000"); err != nil {
		t.Fatal(err)
	}
	h.expectPanicFailure("handler bug")
	if n := srv.OpenWatches(); n != 0 {
		t.Errorf("%d watches open after the panic, want the one it broke off stopped", n)
	}
	h.backoff(testBackoff.Initial)
	if startEv, names, _ := h.restart(); startEv.Reason != Error || len(names) != 2 {
		t.Errorf("restart %+v with %v, want Error with the 2 objects left", startEv, names)
	}
	h.watchStarted()
}

// A panic in the middle of a paginated restart whose RestartStart the
// consumer got: the restart starts over, telling why (Error), as after any
// failure once the consumer saw the restart begin (fault table row 31).
// The step's phase had changed only in its own variables, so the restart
// after the panic was told Initial again.
func TestConsumerPanicWhileListing(t *testing.T) {
	withoutCrashing(t)
	srv := newServer(t, 30)
	var panicked atomic.Bool
	h := startHandled(t, srv, nil, func(_ context.Context, ev Event) error {
		if ev.Type == RestartPage && panicked.CompareAndSwap(false, true) {
			panic("transform bug")
		}
		return nil
	}, WithStrategy(ListWatch), WithPageSize(10))
	if startEv := h.nextOf(RestartStart); startEv.Reason != Initial {
		t.Fatalf("first restart %+v, want Initial", startEv)
	}
	h.expectPanicFailure("transform bug")
	h.backoff(testBackoff.Initial)
	if startEv, names, _ := h.restart(); startEv.Reason != Error || len(names) != 30 {
		t.Errorf("restart after the panic %+v with %d objects, want reason Error with 30", startEv, len(names))
	}
}

// A panic in the middle of a streamed restart's initial events: the stream
// is stopped, and the restart starts over, telling why.
func TestConsumerPanicWhileStreaming(t *testing.T) {
	withoutCrashing(t)
	srv := newServer(t, 3)
	var panicked atomic.Bool
	h := startHandled(t, srv, nil, func(_ context.Context, ev Event) error {
		if ev.Type == RestartPage && panicked.CompareAndSwap(false, true) {
			panic("transform bug")
		}
		return nil
	}, WithStrategy(StreamingList), WithPageSize(1))
	h.nextOf(RestartStart)
	h.expectPanicFailure("transform bug")
	if n := srv.OpenWatches(); n != 0 {
		t.Errorf("%d watches open after the panic, want the stream stopped", n)
	}
	h.backoff(testBackoff.Initial)
	if startEv, names, _ := h.restart(); startEv.Strategy != StreamingList || startEv.Reason != Error || len(names) != 3 {
		t.Errorf("restart %+v with %v, want a streamed one for Error with 3 objects", startEv, names)
	}
}

// panickingListerWatcher panics in its first LIST, as a ListFunc with a
// nil client would.
type panickingListerWatcher struct {
	*fake.ListerWatcher
	panicked atomic.Bool
}

func (lw *panickingListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if lw.panicked.CompareAndSwap(false, true) {
		panic("list bug")
	}
	return lw.ListerWatcher.ListWithContext(ctx, opts)
}

func TestListerWatcherPanicRetriesAfterBackoff(t *testing.T) {
	withoutCrashing(t)
	srv := newServer(t, 3)
	lw := &panickingListerWatcher{ListerWatcher: srv.ListerWatcher()}
	h := start(t, srv, lw, WithStrategy(ListWatch))
	h.expectPanicFailure("list bug")
	h.backoff(testBackoff.Initial)
	if startEv, names, _ := h.restart(); startEv.Reason != Initial || len(names) != 3 {
		t.Errorf("restart %+v with %v, want the Initial one with 3 objects", startEv, names)
	}
}

// With ReallyCrash on, the default, a panic still crashes, as client-go's
// reflector's does: Run panics with it, after stopping the stream it broke
// off.
func TestPanicCrashesByDefault(t *testing.T) {
	if !utilruntime.ReallyCrash {
		t.Fatal("utilruntime.ReallyCrash is off: this test needs the default")
	}
	srv := newServer(t, 3)
	w, err := New(srv.ListerWatcher(), WithStrategy(StreamingList), WithPageSize(1), WithBackoff(testBackoff))
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recovered := make(chan any, 1)
	go func() {
		defer func() { recovered <- recover() }()
		_ = w.Run(ctx, ConsumerFunc(func(_ context.Context, ev Event) error {
			if ev.Type == RestartPage {
				panic("handler bug")
			}
			return nil
		}))
	}()
	select {
	case r := <-recovered:
		if r != "handler bug" {
			t.Errorf("Run panicked with %v, want the consumer's panic", r)
		}
	case <-time.After(guard):
		t.Fatal("Run did not panic")
	}
	if n := srv.OpenWatches(); n != 0 {
		t.Errorf("%d watches open after the panic, want the stream stopped", n)
	}
}
