package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

var strategies = []Strategy{ListWatch, StreamingList}

func newInformer(s *fake.Server, resync time.Duration, opts ...Option) *SharedIndexInformer {
	opts = append([]Option{WithBackoff(fastBackoff)}, opts...)
	return NewSharedIndexInformerWithOptions(s.ListerWatcher(), &corev1.ConfigMap{},
		toolscache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}},
		opts...)
}

// forceRelist makes the informer relist: its watch is cut while mutate
// changes the server, history is compacted, and the next watch answers 410.
func forceRelist(t *testing.T, s *fake.Server, mutate func()) {
	t.Helper()
	cutForRelist(s, false, mutate)
}

// forceRelistHeld is forceRelist with the watches held rather than
// refused: a watch request waits until mutate has run and history is
// compacted, and then answers 410. client-go's reflector backs off after a
// refused watch (0.8 s and more, doubling) besides before its relist, so
// this halves what a relist costs a test of client-go's informer.
func forceRelistHeld(t *testing.T, s *fake.Server, mutate func()) {
	t.Helper()
	cutForRelist(s, true, mutate)
}

// cutForRelist cuts the watches and, until mutate has run and history is
// compacted, refuses watch requests or, hold, keeps them waiting.
func cutForRelist(s *fake.Server, hold bool, mutate func()) {
	release := make(chan struct{})
	s.SetFault(func(ctx context.Context, req fake.Request) error {
		switch {
		case req.Verb != "watch":
			return nil
		case !hold:
			return fake.ConnectionRefused()
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	s.CloseWatches()
	if mutate != nil {
		mutate()
	}
	s.Compact()
	s.SetFault(nil)
	close(release)
}

func TestImplementsClientGoInterfaces(t *testing.T) {
	inf := NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0, nil)
	if inf.GetStore() != inf.GetIndexer() {
		t.Fatal("GetStore and GetIndexer return different objects")
	}
	if _, ok := inf.GetIndexer().(*cache.Indexer); !ok {
		t.Fatalf("GetIndexer returns %T, want *cache.Indexer", inf.GetIndexer())
	}
}

func TestNilListerWatcherPanicsWithClearMessage(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "nil") {
			t.Fatalf("recovered %v, want a panic that names the nil ListerWatcher", r)
		}
	}()
	NewSharedIndexInformer(nil, &corev1.ConfigMap{}, 0, nil)
}

func TestInitialListAndLiveEvents(t *testing.T) {
	for _, strategy := range strategies {
		t.Run(strategy.String(), func(t *testing.T) {
			s := newServer(t, 50)
			listRV := s.ResourceVersion()
			inf := newInformer(s, 0, WithStrategy(strategy), WithPageSize(7))
			rec := newRecorder()
			reg, err := inf.AddEventHandler(rec)
			if err != nil {
				t.Fatal(err)
			}
			if reg.HasSynced() || inf.HasSynced() {
				t.Fatal("synced before Run")
			}
			run(t, inf)
			waitSynced(t, inf, reg)

			calls := rec.snapshot()
			if len(calls) != 50 {
				t.Fatalf("got %d calls for the initial list, want 50", len(calls))
			}
			for _, c := range calls {
				if c.op != "add" || !c.initial {
					t.Fatalf("initial list call %+v, want OnAdd with isInInitialList", c)
				}
			}
			if got := len(inf.GetStore().List()); got != 50 {
				t.Fatalf("store holds %d objects, want 50", got)
			}
			if got := inf.LastSyncResourceVersion(); got != listRV {
				t.Fatalf("LastSyncResourceVersion = %q, want the list's %q", got, listRV)
			}

			// Every notification comes after the store has the change.
			var storeMismatch atomic.Value
			rec.onCall = func(c call) {
				_, exists, _ := inf.GetStore().GetByKey(c.key)
				if exists == (c.op == "delete") {
					storeMismatch.Store(fmt.Sprintf("%s of %s while the store has it=%v", c.op, c.key, exists))
				}
			}
			rec.reset()
			// One change at a time, so that each check in onCall sees the store
			// as the store writer left it for that very notification.
			created := mustCreate(t, s, configMap("new", "a", "1"))
			eventually(t, "the add", func() bool { return rec.len() == 1 })
			updated := created.DeepCopyObject().(*corev1.ConfigMap)
			updated.Data["a"] = "2"
			updated = mustUpdate(t, s, updated).(*corev1.ConfigMap)
			eventually(t, "the update", func() bool { return rec.len() == 2 })
			mustDelete(t, s, "new")
			eventually(t, "the delete", func() bool { return rec.len() == 3 })
			calls = rec.snapshot()
			want := []string{"add", "update", "delete"}
			for i, c := range calls {
				if c.op != want[i] || c.key != key("new") || c.initial {
					t.Fatalf("live call %d = %+v, want %s of %s not in the initial list", i, c, want[i], key("new"))
				}
			}
			if calls[1].oldRV != created.(*corev1.ConfigMap).ResourceVersion || calls[1].rv != updated.ResourceVersion {
				t.Fatalf("update %s -> %s, want %s -> %s", calls[1].oldRV, calls[1].rv, created.(*corev1.ConfigMap).ResourceVersion, updated.ResourceVersion)
			}
			if msg := storeMismatch.Load(); msg != nil {
				t.Fatal(msg)
			}
			eventually(t, "LastSyncResourceVersion at the delete", func() bool {
				return inf.LastSyncResourceVersion() == s.ResourceVersion()
			})
			if got := inf.GetController().LastSyncResourceVersion(); got != inf.LastSyncResourceVersion() {
				t.Fatalf("controller's LastSyncResourceVersion %q != informer's %q", got, inf.LastSyncResourceVersion())
			}
		})
	}
}

func TestRelistNotifiesLikeAnAtomicReplace(t *testing.T) {
	for _, strategy := range strategies {
		for _, reuse := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/reuse=%v", strategy, reuse), func(t *testing.T) {
				s := newServer(t, 20)
				inf := newInformer(s, 0, WithStrategy(strategy), WithRelistReuse(reuse))
				rec := newRecorder()
				if _, err := inf.AddEventHandler(rec); err != nil {
					t.Fatal(err)
				}
				run(t, inf)
				waitSynced(t, inf)
				eventually(t, "initial list delivered", func() bool { return rec.len() == 20 })
				before := map[string]any{}
				for _, obj := range inf.GetStore().List() {
					before[objKey(obj)] = obj
				}
				deletedObj := before[key("cm-0001")]

				// Inside every relist callback the store already holds the new generation.
				var inconsistent atomic.Value
				rec.onCall = func(c call) {
					_, hasDeleted, _ := inf.GetStore().GetByKey(key("cm-0001"))
					_, hasAdded, _ := inf.GetStore().GetByKey(key("added"))
					if hasDeleted || !hasAdded {
						inconsistent.Store(fmt.Sprintf("during %s of %s the store still held the old generation", c.op, c.key))
					}
				}
				rec.reset()
				var updatedRV string
				forceRelist(t, s, func() {
					mustDelete(t, s, "cm-0001")
					cm := configMap("cm-0002", "changed", "yes")
					updatedRV = mustUpdate(t, s, cm).(*corev1.ConfigMap).ResourceVersion
					mustCreate(t, s, configMap("added"))
				})
				// 1 delete + 20 adds/updates (handlers without resync get the unchanged ones too).
				eventually(t, "relist notifications", func() bool { return rec.len() == 21 })
				calls := rec.snapshot()
				if c := calls[0]; c.op != "delete" || !c.tombstone || c.key != key("cm-0001") {
					t.Fatalf("first relist call %+v, want OnDelete(DeletedFinalStateUnknown) of cm-0001", c)
				}
				if tomb := calls[0].obj.(toolscache.DeletedFinalStateUnknown); tomb.Obj != deletedObj {
					t.Fatalf("tombstone carries %p, want the last stored object %p", tomb.Obj, deletedObj)
				}
				seen := map[string]call{}
				for _, c := range calls[1:] {
					seen[c.key] = c
				}
				if c := seen[key("added")]; c.op != "add" || c.initial {
					t.Fatalf("added object: %+v, want OnAdd with isInInitialList=false", c)
				}
				if c := seen[key("cm-0002")]; c.op != "update" || c.rv != updatedRV || c.oldRV == updatedRV {
					t.Fatalf("updated object: %+v, want OnUpdate to %s", c, updatedRV)
				}
				for name, old := range before {
					if name == key("cm-0001") || name == key("cm-0002") {
						continue
					}
					c := seen[name]
					if c.op != "update" || c.rv != c.oldRV {
						t.Fatalf("unchanged %s: %+v, want OnUpdate with equal resourceVersions", name, c)
					}
					now, _, _ := inf.GetStore().GetByKey(name)
					if same := now == old; same != reuse {
						t.Fatalf("unchanged %s kept its object: %v, want %v (relist reuse %v)", name, same, reuse, reuse)
					}
					if reuse && (c.old != c.obj) {
						t.Fatalf("reused %s: OnUpdate(old, new) with different objects", name)
					}
				}
				if msg := inconsistent.Load(); msg != nil {
					t.Fatal(msg)
				}
				if want, got := serverState(t, s), storeState(inf.GetStore()); !equalStates(want, got) {
					t.Fatalf("store differs from the server: %s", diffStates(want, got))
				}
			})
		}
	}
}

func TestHandlerAddedAfterSync(t *testing.T) {
	s := newServer(t, 30)
	inf := newInformer(s, 0)
	run(t, inf)
	waitSynced(t, inf)

	rec, g := newRecorder(), closedGate()
	rec.onCall = g.wait
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler to block in its first call", func() bool { return g.blocked.Load() == 1 })
	if reg.HasSynced() {
		t.Fatal("registration synced before its initial list was delivered")
	}
	g.release()
	waitSynced(t, reg)
	select {
	case <-reg.HasSyncedChecker().Done():
	default:
		t.Fatal("HasSyncedChecker not done although HasSynced is true")
	}
	calls := rec.snapshot()
	if len(calls) != 30 {
		t.Fatalf("late handler got %d calls, want 30", len(calls))
	}
	for _, c := range calls {
		if c.op != "add" || !c.initial {
			t.Fatalf("late handler call %+v, want OnAdd with isInInitialList", c)
		}
	}
	mustCreate(t, s, configMap("live"))
	eventually(t, "the live event", func() bool { return rec.len() == 31 })
	if c := rec.snapshot()[30]; c.op != "add" || c.initial || c.key != key("live") {
		t.Fatalf("live call %+v", c)
	}
}

func TestHandlerAddedToEmptyRunningInformerSyncs(t *testing.T) {
	s := newServer(t, 0)
	inf := newInformer(s, 0)
	run(t, inf)
	waitSynced(t, inf)
	reg, err := inf.AddEventHandler(newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, reg)
}

func TestIsInInitialListOnlyForTheFirstList(t *testing.T) {
	s := newServer(t, 3)
	inf := newInformer(s, 0)
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	eventually(t, "initial list", func() bool { return rec.len() == 3 })
	rec.reset()
	forceRelist(t, s, func() { mustCreate(t, s, configMap("after")) })
	eventually(t, "relist", func() bool { return rec.len() == 4 })
	for _, c := range rec.snapshot() {
		if c.initial {
			t.Fatalf("relist call %+v has isInInitialList", c)
		}
	}
}

// newResyncInformer returns an informer whose resync runs on a fake clock;
// its watcher keeps real time, so that backoffs pass by themselves.
func newResyncInformer(s *fake.Server, resync time.Duration) (*SharedIndexInformer, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Now())
	inf := newInformer(s, resync, WithClock(clk), WithWatcherOptions(listerwatcher.WithClock(clock.RealClock{})))
	return inf, clk
}

// resyncPeriodOf is the resync period the informer gave a handler.
func resyncPeriodOf(inf *SharedIndexInformer, reg toolscache.ResourceEventHandlerRegistration) time.Duration {
	inf.processor.mu.RLock()
	defer inf.processor.mu.RUnlock()
	return inf.processor.listeners[reg.(*listener)].period
}

func TestResyncPerHandler(t *testing.T) {
	s := newServer(t, 5)
	inf, clk := newResyncInformer(s, time.Minute)

	every1m, every2m, never := newRecorder(), newRecorder(), newRecorder()
	for h, period := range map[*recorder]time.Duration{every1m: time.Minute, every2m: 2 * time.Minute, never: 0} {
		if _, err := inf.AddEventHandlerWithResyncPeriod(h, period); err != nil {
			t.Fatal(err)
		}
	}
	run(t, inf)
	waitSynced(t, inf)
	for _, r := range []*recorder{every1m, every2m, never} {
		eventually(t, "initial list", func() bool { return r.len() == 5 })
		r.reset()
	}
	eventually(t, "resync ticker", clk.HasWaiters)
	clk.Step(time.Minute)
	eventually(t, "first resync", func() bool { return resyncsOf(every1m) == 5 })
	clk.Step(time.Minute)
	eventually(t, "second resync", func() bool { return resyncsOf(every1m) == 10 && resyncsOf(every2m) == 5 })
	if n := never.len(); n != 0 {
		t.Fatalf("handler without resync got %d calls", n)
	}
}

func TestResyncPeriodClamping(t *testing.T) {
	s := newServer(t, 0)
	inf := newInformer(s, 10*time.Second)
	regTiny, _ := inf.AddEventHandlerWithResyncPeriod(newRecorder(), 100*time.Millisecond)
	if got := resyncPeriodOf(inf, regTiny); got != minimumResyncPeriod {
		t.Fatalf("resync period below the minimum became %v, want %v", got, minimumResyncPeriod)
	}
	if inf.resyncCheckPeriod != minimumResyncPeriod {
		t.Fatalf("a handler added before start lowers the check period to %v, got %v", minimumResyncPeriod, inf.resyncCheckPeriod)
	}
	run(t, inf)
	waitSynced(t, inf)
	inf.startedMu.Lock()
	inf.resyncCheckPeriod = 5 * time.Second // as if set before start by a 5s handler
	inf.startedMu.Unlock()
	regLate, _ := inf.AddEventHandlerWithResyncPeriod(newRecorder(), 2*time.Second)
	if got := resyncPeriodOf(inf, regLate); got != 5*time.Second {
		t.Fatalf("late handler's period %v, want it raised to the check period 5s", got)
	}

	// An informer made without a resync period never resyncs, whatever its
	// handlers ask for (as in client-go).
	noResync := newInformer(s, 0)
	reg, _ := noResync.AddEventHandlerWithResyncPeriod(newRecorder(), time.Minute)
	if got := resyncPeriodOf(noResync, reg); got != 0 {
		t.Fatalf("handler period %v on an informer without resync, want 0", got)
	}
}

// Updates that keep the resourceVersion (unchanged objects in a relist) reach
// exactly the handlers client-go would send them to: those due for resync at
// the last resync check (every handler, while no check has run).
func TestUnchangedRelistUpdatesFollowResyncState(t *testing.T) {
	s := newServer(t, 4)
	inf, clk := newResyncInformer(s, time.Hour)
	due, notDue := newRecorder(), newRecorder()
	if _, err := inf.AddEventHandlerWithResyncPeriod(due, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandlerWithResyncPeriod(notDue, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	eventually(t, "resync ticker", clk.HasWaiters)
	clk.Step(time.Hour) // due resyncs; notDue is marked not syncing
	eventually(t, "resync of the due handler", func() bool { return due.len() == 8 })
	due.reset()
	notDue.reset()

	forceRelist(t, s, func() { mustUpdate(t, s, configMap("cm-0000", "x", "y")) })
	eventually(t, "relist to reach the due handler", func() bool { return due.len() == 4 })
	eventually(t, "the changed object to reach the other handler", func() bool { return notDue.len() == 1 })
	time.Sleep(50 * time.Millisecond)
	if calls := notDue.snapshot(); len(calls) != 1 || calls[0].key != key("cm-0000") || calls[0].rv == calls[0].oldRV {
		t.Fatalf("handler not due for resync got %+v, want only the real update of cm-0000", calls)
	}
}

func TestRemoveEventHandler(t *testing.T) {
	s := newServer(t, 2)
	inf := newInformer(s, 0)
	kept, removed := newRecorder(), newRecorder()
	regRemoved, _ := inf.AddEventHandler(removed)
	if _, err := inf.AddEventHandler(kept); err != nil {
		t.Fatal(err)
	}
	beforeStart, _ := inf.AddEventHandler(newRecorder())
	if err := inf.RemoveEventHandler(beforeStart); err != nil {
		t.Fatal(err)
	}
	select {
	case <-beforeStart.(*listener).ShutdownChan():
	default:
		t.Fatal("a handler removed before start is not shut down")
	}
	run(t, inf)
	waitSynced(t, inf)
	eventually(t, "initial lists", func() bool { return kept.len() == 2 && removed.len() == 2 })
	if err := toolscache.ShutDownEventHandler(inf, regRemoved); err != nil {
		t.Fatal(err)
	}
	if err := inf.RemoveEventHandler(regRemoved); err != nil {
		t.Fatalf("second removal: %v, want nil (idempotent)", err)
	}
	mustCreate(t, s, configMap("x"))
	eventually(t, "kept handler's event", func() bool { return kept.len() == 3 })
	if n := removed.len(); n != 2 {
		t.Fatalf("removed handler got %d calls, want 2", n)
	}
	// client-go's text here is malformed ("invalid key type %t" of a
	// pointer); ours names the handle's type (docs/compatibility.md).
	err := inf.RemoveEventHandler(struct {
		toolscache.ResourceEventHandlerRegistration
	}{})
	if want := "invalid event handler registration of type struct { cache.ResourceEventHandlerRegistration }"; err == nil || err.Error() != want {
		t.Fatalf("removing a foreign registration: %v, want %q", err, want)
	}
}

func TestLifecycle(t *testing.T) {
	s := newServer(t, 1)
	inf := newInformer(s, 0)
	if err := inf.SetTransform(nil); err != nil {
		t.Fatalf("SetTransform(nil) before start: %v", err)
	}
	stop := run(t, inf)
	waitSynced(t, inf)

	// A second Run returns at once and changes nothing.
	done := make(chan struct{})
	go func() { inf.Run(make(chan struct{})); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("second Run did not return")
	}
	if err := inf.SetTransform(nil); err == nil || err.Error() != "informer has already started" {
		t.Fatalf("SetTransform after start: %v", err)
	}
	if err := inf.SetWatchErrorHandler(func(*toolscache.Reflector, error) {}); err == nil || err.Error() != "informer has already started" {
		t.Fatalf("SetWatchErrorHandler after start: %v", err)
	}
	if inf.IsStopped() {
		t.Fatal("IsStopped while running")
	}
	stop()
	if !inf.IsStopped() {
		t.Fatal("IsStopped false after Run returned")
	}
	if _, err := inf.AddEventHandler(newRecorder()); err == nil || !strings.Contains(err.Error(), "was not added to shared informer because it has stopped already") {
		t.Fatalf("AddEventHandler after stop: %v", err)
	}
	if err := inf.AddIndexers(toolscache.Indexers{"x": toolscache.MetaNamespaceIndexFunc}); err == nil || err.Error() != "indexer was not added because it has stopped already" {
		t.Fatalf("AddIndexers after stop: %v", err)
	}
	if !inf.GetController().HasSynced() || !toolscache.IsDone(inf.GetController().HasSyncedChecker()) {
		t.Fatal("controller does not report the informer's sync")
	}
}

func TestAddIndexersBeforeAndAfterStart(t *testing.T) {
	s := fake.NewServer(&corev1.ConfigMapList{})
	t.Cleanup(s.Close)
	for i := range 6 {
		mustCreate(t, s, configMap(fmt.Sprintf("cm-%d", i), "parity", fmt.Sprint(i%2)))
	}
	byParity := func(obj any) ([]string, error) { return []string{obj.(*corev1.ConfigMap).Data["parity"]}, nil }
	byName := func(obj any) ([]string, error) { return []string{obj.(*corev1.ConfigMap).Name}, nil }
	inf := newInformer(s, 0)
	if err := inf.AddIndexers(toolscache.Indexers{"parity": byParity}); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	if err := inf.AddIndexers(toolscache.Indexers{"name": byName}); err != nil {
		t.Fatal(err)
	}
	if err := inf.AddIndexers(toolscache.Indexers{"name": byName}); err == nil {
		t.Fatal("adding an existing indexer name: no error")
	}
	odd, err := inf.GetIndexer().ByIndex("parity", "1")
	if err != nil || len(odd) != 3 {
		t.Fatalf("ByIndex(parity, 1) = %d objects, %v; want 3", len(odd), err)
	}
	named, err := inf.GetIndexer().ByIndex("name", "cm-4")
	if err != nil || len(named) != 1 {
		t.Fatalf("ByIndex(name, cm-4) = %d objects, %v; want 1", len(named), err)
	}
	mustCreate(t, s, configMap("cm-6", "parity", "0"))
	eventually(t, "index to follow a live event", func() bool {
		even, _ := inf.GetIndexer().ByIndex("parity", "0")
		return len(even) == 4
	})
}

func TestTransform(t *testing.T) {
	for _, strategy := range strategies {
		t.Run(strategy.String(), func(t *testing.T) {
			s := newServer(t, 5)
			mustCreate(t, s, configMap("bad"))
			mustCreate(t, s, configMap("nil"))
			inf := newInformer(s, 0, WithStrategy(strategy))
			var transformed atomic.Int64
			err := inf.SetTransform(func(obj any) (any, error) {
				cm := obj.(*corev1.ConfigMap)
				switch {
				case strings.HasPrefix(cm.Name, "bad"):
					return nil, errors.New("refusing bad")
				case strings.HasPrefix(cm.Name, "nil"):
					return nil, nil
				}
				transformed.Add(1)
				cm.Annotations = map[string]string{"transformed": "yes"}
				return cm, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
			run(t, inf)
			waitSynced(t, inf)
			if got := len(inf.GetStore().List()); got != 5 {
				t.Fatalf("store holds %d objects, want the 5 the transform accepted", got)
			}
			mustCreate(t, s, configMap("bad-live"))
			mustCreate(t, s, configMap("good-live"))
			eventually(t, "the good live object", func() bool {
				_, ok, _ := inf.GetStore().GetByKey(key("good-live"))
				return ok
			})
			for _, obj := range inf.GetStore().List() {
				if obj.(*corev1.ConfigMap).Annotations["transformed"] != "yes" {
					t.Fatalf("stored object %s was not transformed", objKey(obj))
				}
			}
			if _, ok, _ := inf.GetStore().GetByKey(key("bad-live")); ok {
				t.Fatal("object the transform failed on was stored")
			}
			for _, c := range rec.snapshot() {
				if strings.HasPrefix(c.key, key("bad")) || strings.HasPrefix(c.key, key("nil")) {
					t.Fatalf("handler was told about a dropped object: %+v", c)
				}
			}
		})
	}
}

func TestWatchErrorHandlerGetsAReflector(t *testing.T) {
	s := newServer(t, 1)
	var failed atomic.Bool
	s.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Verb == "list" && failed.CompareAndSwap(false, true) {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC says no"))
		}
		return nil
	})
	inf := newInformer(s, 0, WithStrategy(ListWatch))
	type report struct {
		r   *toolscache.Reflector
		err error
	}
	reports := make(chan report, 10)
	if err := inf.SetWatchErrorHandler(func(r *toolscache.Reflector, err error) { reports <- report{r, err} }); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	var got report
	select {
	case got = <-reports:
	case <-time.After(20 * time.Second):
		t.Fatal("watch error handler not called for a failed list")
	}
	if got.r == nil {
		t.Fatal("watch error handler got a nil *Reflector")
	}
	if got.r.TypeDescription() != "*v1.ConfigMap" {
		t.Fatalf("reflector describes %q, want *v1.ConfigMap", got.r.TypeDescription())
	}
	if !apierrors.IsForbidden(got.err) {
		t.Fatalf("handler got %v, want the Forbidden error", got.err)
	}
	waitSynced(t, inf) // and the informer recovers
}

func TestSlowHandlerBlocksNeitherPipelineNorOthers(t *testing.T) {
	s := newServer(t, 10)
	inf := newInformer(s, 0)
	slow, fast := newRecorder(), newRecorder()
	release := make(chan struct{})
	slow.onCall = func(call) { <-release }
	if _, err := inf.AddEventHandler(slow); err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(fast); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	for i := range 200 {
		mustCreate(t, s, configMap(fmt.Sprintf("live-%03d", i)))
	}
	eventually(t, "the fast handler to get everything", func() bool { return fast.len() == 210 })
	eventually(t, "the store to get everything", func() bool { return len(inf.GetStore().List()) == 210 })
	if n := slow.len(); n != 0 {
		t.Fatalf("blocked handler recorded %d calls", n)
	}
	close(release)
	eventually(t, "the slow handler to catch up", func() bool { return slow.len() == 210 })
	if want, got := fast.stateCopy(), slow.stateCopy(); !equalStates(want, got) {
		t.Fatalf("slow handler's state differs: %s", diffStates(want, got))
	}
}

// panickingHandlers turns crashing off for the test, adds to inf a handler
// that panics on the objects named and one that does not, runs inf, and
// creates "boom" and "after" once the panicking one has synced; it returns
// when the other handler has every object (the 3 of s, boom and after).
func panickingHandlers(t *testing.T, s *fake.Server, inf *SharedIndexInformer, panicOn ...string) (panicky *recorder) {
	t.Helper()
	old := utilruntime.ReallyCrash
	utilruntime.ReallyCrash = false
	t.Cleanup(func() { utilruntime.ReallyCrash = old })
	panicky, other := newRecorder(), newRecorder()
	panicky.onCall = func(c call) {
		for _, name := range panicOn {
			if c.key == key(name) {
				panic("handler bug")
			}
		}
	}
	regPanicky, _ := inf.AddEventHandler(panicky)
	if _, err := inf.AddEventHandler(other); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf, regPanicky)
	mustCreate(t, s, configMap("boom"))
	mustCreate(t, s, configMap("after"))
	eventually(t, "the other handler", func() bool { return other.len() == 5 })
	return panicky
}

func TestPanickingHandlerWithCrashingOff(t *testing.T) {
	s := newServer(t, 3)
	panicky := panickingHandlers(t, s, newInformer(s, 0), "cm-0001", "boom")
	eventually(t, "the panicking handler to go on", func() bool {
		_, ok := panicky.stateCopy()[key("after")]
		return ok
	})
	if n := panicky.len(); n != 3 {
		t.Fatalf("panicking handler recorded %d calls, want 3 (two panicked)", n)
	}
}

func TestStoreIsStableAcrossRelists(t *testing.T) {
	s := newServer(t, 3)
	inf := newInformer(s, 0)
	store, indexer := inf.GetStore(), inf.GetIndexer()
	run(t, inf)
	waitSynced(t, inf)
	forceRelist(t, s, func() { mustCreate(t, s, configMap("x")) })
	eventually(t, "relist", func() bool { return len(store.List()) == 4 })
	if inf.GetStore() != store || inf.GetIndexer() != indexer {
		t.Fatal("store replaced by a relist")
	}
}

func TestManyHandlersAddedWhileEventsFlow(t *testing.T) {
	s := newServer(t, 20)
	inf := newInformer(s, 0)
	run(t, inf)
	waitSynced(t, inf)
	var wg sync.WaitGroup
	recs := make([]*recorder, 8)
	wg.Go(func() {
		for i := range 100 {
			mustCreate(t, s, configMap(fmt.Sprintf("flow-%03d", i)))
		}
	})
	for i := range recs {
		recs[i] = newRecorder()
		wg.Go(func() {
			reg, err := inf.AddEventHandler(recs[i])
			if err != nil {
				t.Error(err)
				return
			}
			eventually(t, "handler sync", reg.HasSynced)
		})
	}
	wg.Wait()
	want := serverState(t, s)
	for i, r := range recs {
		eventually(t, fmt.Sprintf("handler %d to converge", i), func() bool { return equalStates(want, r.stateCopy()) })
		seen := map[string]int{}
		for _, c := range r.snapshot() {
			if c.op == "add" {
				seen[c.key]++
			}
		}
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("handler %d got %d adds of %s", i, n, k)
			}
		}
	}
}

// Like client-go's reflector, the watch error handler hears of failed lists
// and failed watch opens, not of watches that end with an error.
func TestWatchErrorHandlerSeesListAndWatchOpenFailures(t *testing.T) {
	s := newServer(t, 1)
	inf := newInformer(s, 0, WithStrategy(ListWatch))
	errs := make(chan error, 10)
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) { errs <- err }); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)

	s.SendWatchError(&metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError, Message: "etcd hiccup"})
	var refused atomic.Bool
	s.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Verb == "watch" && refused.CompareAndSwap(false, true) {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no watching"))
		}
		return nil
	})
	select {
	case err := <-errs:
		if !apierrors.IsForbidden(err) {
			t.Fatalf("handler got %v first, want the failed watch open (the ended watch is only logged)", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watch error handler not called for a failed watch open")
	}
}

// TestHandlersNeverSeeAnOlderLastSyncResourceVersion: the store writer
// commits a live event's resourceVersion before handlers hear of it, so a
// handler that reads LastSyncResourceVersion (to tell whether the cache has
// caught up with a write, say) never gets one older than its event. Before
// the commit was made under the change it came after the notification was
// queued, and a handler's goroutine could run in between.
func TestHandlersNeverSeeAnOlderLastSyncResourceVersion(t *testing.T) {
	s := newServer(t, 0)
	inf := newInformer(s, 0)
	var mu sync.Mutex
	var seen int
	var behind []string
	check := func(what string, obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		last := inf.LastSyncResourceVersion()
		var eventRV, lastRV int
		_, _ = fmt.Sscan(rvOf(obj), &eventRV)
		_, _ = fmt.Sscan(last, &lastRV)
		mu.Lock()
		defer mu.Unlock()
		seen++
		if lastRV < eventRV && len(behind) < 3 {
			behind = append(behind, fmt.Sprintf("%s at resourceVersion %d with LastSyncResourceVersion %q", what, eventRV, last))
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { check("OnAdd", obj) },
		UpdateFunc: func(_, obj any) { check("OnUpdate", obj) },
		DeleteFunc: func(obj any) { check("OnDelete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	const n = 200
	for i := range n {
		name := fmt.Sprintf("cm-%04d", i)
		mustCreate(t, s, configMap(name))
		time.Sleep(100 * time.Microsecond) // let the handler run, as it would under load
		mustUpdate(t, s, configMap(name, "k", "v"))
		time.Sleep(100 * time.Microsecond)
		mustDelete(t, s, name)
		time.Sleep(100 * time.Microsecond)
	}
	eventually(t, "every event handled", func() bool { mu.Lock(); defer mu.Unlock(); return seen == 3*n })
	mu.Lock()
	defer mu.Unlock()
	if len(behind) > 0 {
		t.Errorf("handlers heard of events before LastSyncResourceVersion reached them, for example %s", strings.Join(behind, "; "))
	}
}

// client-go's informer store is a cache.TransactionStore; callers that
// type-assert GetStore() or GetIndexer() to it must find ours one too.
func TestStoreIsATransactionStore(t *testing.T) {
	s := newServer(t, 0)
	for name, inf := range map[string]toolscache.SharedIndexInformer{
		"client-go": newClientGoInformer(s), "ours": newInformer(s, 0),
	} {
		for what, store := range map[string]toolscache.Store{"GetStore": inf.GetStore(), "GetIndexer": inf.GetIndexer()} {
			if _, ok := store.(toolscache.TransactionStore); !ok {
				t.Errorf("%s: %s() is not a cache.TransactionStore", name, what)
			}
		}
		txn, ok := inf.GetStore().(toolscache.TransactionStore)
		if !ok {
			continue
		}
		if err := txn.Transaction(
			toolscache.Transaction{Type: toolscache.TransactionTypeAdd, Object: configMap("a")},
			toolscache.Transaction{Type: toolscache.TransactionTypeAdd, Object: configMap("b")},
			toolscache.Transaction{Type: toolscache.TransactionTypeDelete, Object: configMap("a")},
		); err != nil {
			t.Errorf("%s: Transaction: %v", name, err)
		}
		if keys := inf.GetStore().ListKeys(); len(keys) != 1 || keys[0] != key("b") {
			t.Errorf("%s: store after the transaction holds %v, want [%s]", name, keys, key("b"))
		}
	}
}

// After a handler panic the process survives (ReallyCrash off), the
// handler's next call waits a second, as client-go's listeners do, so that
// a handler that always panics does not spin; other handlers do not wait.
func TestHandlerCallAfterAPanicWaitsASecond(t *testing.T) {
	s := newServer(t, 3)
	inf, clk := newResyncInformer(s, 0)
	panicky := panickingHandlers(t, s, inf, "boom")
	time.Sleep(100 * time.Millisecond)
	if _, ok := panicky.stateCopy()[key("after")]; ok {
		t.Fatal("the call after the panic came before a second passed")
	}
	clk.Step(time.Second)
	eventually(t, "the panicking handler to go on after a second", func() bool {
		_, ok := panicky.stateCopy()[key("after")]
		return ok
	})
}

// A handler added before Run syncs once it has been given the whole initial
// list, not when the informer has: client-go's registration HasSynced waits
// for its handler's calls.
func TestHandlerAddedBeforeRunSyncsAfterItsInitialList(t *testing.T) {
	for _, strategy := range strategies {
		t.Run(strategy.String(), func(t *testing.T) {
			s := newServer(t, 30)
			inf := newInformer(s, 0, WithStrategy(strategy))
			rec, g := newRecorder(), closedGate()
			rec.onCall = g.wait
			reg, err := inf.AddEventHandler(rec)
			if err != nil {
				t.Fatal(err)
			}
			run(t, inf)
			defer g.release()
			waitSynced(t, inf)
			eventually(t, "the handler to block in its first call", func() bool { return g.blocked.Load() == 1 })
			if reg.HasSynced() {
				t.Fatal("registration synced while its handler was in the first call of its initial list")
			}
			g.release()
			waitSynced(t, reg)
			if n := rec.len(); n != 30 {
				t.Fatalf("registration synced after %d calls, want the initial list's 30", n)
			}
		})
	}
}
