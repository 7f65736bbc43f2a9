package informer

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// This file holds panics in the informer's own work (a transform, the
// ListerWatcher) with utilruntime.ReallyCrash off: client-go's reflector
// loop recovers them and lists again; so must ours. (With ReallyCrash on,
// the default, both crash the process. Panicking handlers are
// differential_handler_test.go's.)

// runTracked runs inf until the test ends and closes returned when its
// RunWithContext returns.
func runTracked(t *testing.T, inf *SharedIndexInformer) (stop func(), returned <-chan struct{}) {
	t.Helper()
	done := make(chan struct{})
	stop = run(t, trackedRun{inf, done})
	return stop, done
}

type trackedRun struct {
	*SharedIndexInformer
	returned chan struct{}
}

func (r trackedRun) RunWithContext(ctx context.Context) {
	defer close(r.returned)
	r.SharedIndexInformer.RunWithContext(ctx)
}

// panicOnce returns a transform that panics the first time it sees the
// ConfigMap named name.
func panicOnce(name string) toolscache.TransformFunc {
	var done atomic.Bool
	return func(obj any) (any, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == name && done.CompareAndSwap(false, true) {
			panic("transform bug")
		}
		return obj, nil
	}
}

func TestTransformPanicIsRecovered(t *testing.T) {
	defer func(old bool) { utilruntime.ReallyCrash = old }(utilruntime.ReallyCrash)
	utilruntime.ReallyCrash = false

	s := newServer(t, 2)
	ours, theirs := newInformer(s, 0), newClientGoInformer(s)
	for _, inf := range []toolscache.SharedIndexInformer{ours, theirs} {
		if err := inf.SetTransform(panicOnce("boom")); err != nil {
			t.Fatal(err)
		}
	}
	ourRec, theirRec := newRecorder(), newRecorder()
	ourReg, err := ours.AddEventHandler(ourRec)
	if err != nil {
		t.Fatal(err)
	}
	theirReg, err := theirs.AddEventHandler(theirRec)
	if err != nil {
		t.Fatal(err)
	}
	stopOurs, returned := runTracked(t, ours)
	stopTheirs := run(t, theirs)
	waitSynced(t, ours, theirs)

	mustCreate(t, s, configMap("boom"))
	mustCreate(t, s, configMap("after"))
	for name, rec := range map[string]*recorder{"client-go": theirRec, "ours": ourRec} {
		eventually(t, name+"'s handler to hear of both objects after the panic", func() bool {
			state := rec.stateCopy()
			_, boom := state[key("boom")]
			_, after := state[key("after")]
			return boom && after
		})
	}
	select {
	case <-returned:
		t.Fatal("RunWithContext returned while its context was live")
	default:
	}
	if ours.IsStopped() {
		t.Error("IsStopped while running")
	}

	// Stopping ends every listener, ours as client-go's.
	stopOurs()
	stopTheirs()
	for name, reg := range map[string]toolscache.ResourceEventHandlerRegistration{"client-go": theirReg, "ours": ourReg} {
		select {
		case <-reg.(interface{ ShutdownChan() <-chan struct{} }).ShutdownChan():
		case <-time.After(5 * time.Second):
			t.Errorf("%s: the registration did not shut down after Run's context ended", name)
		}
	}
	if !ours.IsStopped() {
		t.Error("not IsStopped after Run returned")
	}
}

// panickingList panics in its first LIST, as a ListFunc with a nil client
// would, and lists (it never streams).
type panickingList struct {
	*fake.ListerWatcher
	panicked *atomic.Bool
}

func (lw panickingList) ListWithContext(ctx context.Context, opts metav1.ListOptions) (kruntime.Object, error) {
	if lw.panicked.CompareAndSwap(false, true) {
		panic("list bug")
	}
	return lw.ListerWatcher.ListWithContext(ctx, opts)
}

func (panickingList) IsWatchListSemanticsUnSupported() bool { return true }

func TestListerWatcherPanicIsRecovered(t *testing.T) {
	defer func(old bool) { utilruntime.ReallyCrash = old }(utilruntime.ReallyCrash)
	utilruntime.ReallyCrash = false

	s := newServer(t, 2)
	lw := func() toolscache.ListerWatcher {
		return panickingList{s.ListerWatcher(), new(atomic.Bool)}
	}
	ours := NewSharedIndexInformerWithOptions(lw(), &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{}, WithBackoff(fastBackoff))
	theirs := toolscache.NewSharedIndexInformer(lw(), &corev1.ConfigMap{}, 0, nil)
	_, returned := runTracked(t, ours)
	run(t, theirs)
	waitSynced(t, ours, theirs)
	select {
	case <-returned:
		t.Fatal("RunWithContext returned while its context was live")
	default:
	}
	if got := len(ours.GetStore().ListKeys()); got != 2 {
		t.Errorf("%d objects stored after the panic, want 2", got)
	}
}
