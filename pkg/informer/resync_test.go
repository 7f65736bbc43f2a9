package informer

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// client-go's reflector starts its resync timer when a list completes
// (startResync runs from watchWithResync, after "Caches populated") and
// stops it when the watch is given up for a relist. These tests pin both
// halves on a fake clock; the watcher keeps real time.

// resyncsOf counts the OnUpdate(obj, obj) calls r got.
func resyncsOf(r *recorder) int {
	n := 0
	for _, c := range r.snapshot() {
		if c.op == "update" && c.old == c.obj {
			n++
		}
	}
	return n
}

// newResyncOnlyClockInformer is newResyncInformer without the sync
// watchdog, so that the resync timer is the fake clock's only waiter.
func newResyncOnlyClockInformer(s *fake.Server, resync time.Duration) (*SharedIndexInformer, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Now())
	inf := newInformer(s, resync, WithClock(clk), WithSyncWarningAfter(0),
		WithWatcherOptions(listerwatcher.WithClock(clock.RealClock{})))
	return inf, clk
}

// noResyncFor fails if r gets a resync within d of real time.
func noResyncFor(t *testing.T, r *recorder, d time.Duration, what string) {
	t.Helper()
	time.Sleep(d)
	if n := resyncsOf(r); n != 0 {
		t.Fatalf("%s: %d resync calls, want none", what, n)
	}
}

func TestFirstResyncComesAPeriodAfterTheList(t *testing.T) {
	s := newServer(t, 3)
	release := make(chan struct{})
	s.SetFault(func(ctx context.Context, _ fake.Request) error {
		select { // the first list is slow
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	inf, clk := newResyncOnlyClockInformer(s, time.Minute)
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	time.Sleep(100 * time.Millisecond) // Run is under way
	clk.Step(40 * time.Second)         // while the first list is in flight
	close(release)
	waitSynced(t, inf)
	eventually(t, "initial list", func() bool { return rec.len() == 3 })
	eventually(t, "the resync timer", clk.HasWaiters)

	clk.Step(59 * time.Second) // 99 s after Run, 59 s after the list
	noResyncFor(t, rec, 200*time.Millisecond, "59 s after the list")
	clk.Step(time.Second)
	eventually(t, "a resync a period after the list", func() bool { return resyncsOf(rec) == 3 })
}

func TestNoResyncWhileARelistFails(t *testing.T) {
	s := newServer(t, 3)
	inf, clk := newResyncOnlyClockInformer(s, time.Minute)
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	eventually(t, "initial list", func() bool { return rec.len() == 3 })
	eventually(t, "the resync timer", clk.HasWaiters)

	// The watch ends with a 410 and every request fails: the informer must
	// relist and cannot, so its store is stale and it must not resync it.
	s.SetFault(func(context.Context, fake.Request) error {
		return apierrors.NewInternalError(errors.New("server down"))
	})
	s.SendWatchError(gone())
	eventually(t, "a failed relist", func() bool { return inf.SyncStatus().Failures > 0 })
	for range 3 {
		clk.Step(time.Minute)
		noResyncFor(t, rec, 100*time.Millisecond, "while the relist fails")
	}
	if clk.HasWaiters() {
		t.Fatal("the resync timer runs while the relist fails")
	}

	// Once the relist is stored, resyncs start again a period later.
	rec.reset()
	s.SetFault(nil)
	eventually(t, "the relist", func() bool { return inf.SyncStatus().Failures == 0 && clk.HasWaiters() })
	// Relist reuse hands the unchanged objects to OnUpdate as (obj, obj).
	eventually(t, "the relist's updates", func() bool { return rec.len() == 3 })
	rec.reset()
	clk.Step(time.Minute)
	eventually(t, "a resync after the relist", func() bool { return resyncsOf(rec) == 3 })
}
