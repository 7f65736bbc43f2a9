package informer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// gate blocks a recorder's calls while it is closed: blocked reports how
// many calls wait at it.
type gate struct {
	open    chan struct{}
	blocked atomic.Int32
	once    sync.Once
}

func closedGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) wait(call) {
	g.blocked.Add(1)
	<-g.open
}

// release opens the gate; a second release does nothing.
func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// countingDecoder is inf's store Decode, counting its calls.
func countingDecoder(inf *SharedIndexInformer) (decoder, *atomic.Int64) {
	var n atomic.Int64
	return func(stored any) (any, error) {
		n.Add(1)
		return inf.indexer.Decode(stored)
	}, &n
}

// listenerOf returns the informer's listener behind reg.
func listenerOf(t *testing.T, reg toolscache.ResourceEventHandlerRegistration) *listener {
	t.Helper()
	l, ok := reg.(*listener)
	if !ok {
		t.Fatalf("registration is a %T", reg)
	}
	return l
}

func queuedChanges(l *listener) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keyed.len
}

// A coalescing handler stuck in a call while objects change hears, once it
// goes on, of each object's net change: one update from the state it knew to
// the newest, the end of an object it knew, the end and the new start of a
// re-created one, and nothing of an object that came and went.
func TestCoalescingHandlerHearsTheNetChange(t *testing.T) {
	s := newServer(t, 5)
	reg := prometheus.NewRegistry()
	m := metrics.New()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	inf := newInformer(s, 0, WithMetrics(m))
	rec := newRecorder()
	handle, err := inf.AddEventHandler(Coalesce(rec))
	if err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf, handle)
	known := map[string]string{}
	for _, c := range rec.snapshot() {
		known[c.key] = c.rv
	}

	g := closedGate()
	rec.onCall = g.wait
	mustCreate(t, s, configMap("sentinel"))
	eventually(t, "the handler to block in the sentinel's add", func() bool { return g.blocked.Load() == 1 })
	rec.reset()

	var last *corev1.ConfigMap
	for i := range 5 {
		last = mustUpdate(t, s, configMap("cm-0001", "v", fmt.Sprint(i))).(*corev1.ConfigMap)
	}
	mustCreate(t, s, configMap("ephemeral"))
	mustDelete(t, s, "ephemeral")
	mustUpdate(t, s, configMap("cm-0002", "v", "x"))
	mustDelete(t, s, "cm-0002")
	mustDelete(t, s, "cm-0003")
	reborn := mustCreate(t, s, configMap("cm-0003", "v", "reborn")).(*corev1.ConfigMap)
	eventually(t, "the store to have every change", func() bool { return equalStates(serverState(t, s), storeState(inf.GetStore())) })
	l := listenerOf(t, handle)
	// cm-0001: one update; cm-0002: its delete; cm-0003: its delete, then its add.
	if n := queuedChanges(l); n != 4 {
		t.Errorf("the blocked handler has %d changes queued, want 4", n)
	}
	if got := gathered(t, reg, "leaninformer_handler_pending_notifications", nil); got != 5 {
		t.Errorf("pending notifications gauge = %v, want 5 (the 4 queued and the call in progress)", got)
	}

	g.release()
	eventually(t, "the handler to catch up", func() bool { return equalStates(serverState(t, s), rec.stateCopy()) })
	got := rec.snapshot()
	var want []string
	want = append(want, "add "+key("sentinel"))
	want = append(want, fmt.Sprintf("update %s %s->%s", key("cm-0001"), known[key("cm-0001")], last.ResourceVersion))
	want = append(want, "delete "+key("cm-0002"), "delete "+key("cm-0003"), fmt.Sprintf("add %s %s", key("cm-0003"), reborn.ResourceVersion))
	var saw []string
	for _, c := range got {
		switch c.op {
		case "update":
			saw = append(saw, fmt.Sprintf("update %s %s->%s", c.key, c.oldRV, c.rv))
		case "add":
			if c.key == key("cm-0003") {
				saw = append(saw, fmt.Sprintf("add %s %s", c.key, c.rv))
				if c.obj.(*corev1.ConfigMap).UID != reborn.UID {
					t.Errorf("the re-created cm-0003 came with UID %s, want %s", c.obj.(*corev1.ConfigMap).UID, reborn.UID)
				}
				continue
			}
			saw = append(saw, "add "+c.key)
		case "delete":
			saw = append(saw, "delete "+c.key)
		}
	}
	if fmt.Sprint(saw) != fmt.Sprint(want) {
		t.Errorf("after the block the handler heard\n%q\nwant\n%q", saw, want)
	}
	// 4 updates folded into cm-0001's, ephemeral's delete into its add,
	// cm-0002's delete into its update.
	if got := gathered(t, reg, "leaninformer_handler_coalesced_notifications_total", nil); got != 6 {
		t.Errorf("coalesced notifications = %v, want 6", got)
	}
	eventually(t, "the pending gauge to drain", func() bool {
		return gathered(t, reg, "leaninformer_handler_pending_notifications", nil) == 0
	})
}

// The initial list of a coalescing handler that cannot keep up: its
// HasSynced waits for every object's add, an object deleted before its add
// was delivered counts as done, and the adds carry the newest objects.
func TestCoalescingHasSyncedWaitsForTheInitialList(t *testing.T) {
	s := newServer(t, 20)
	inf := newInformer(s, 0)
	rec := newRecorder()
	g := closedGate()
	rec.onCall = g.wait
	handle, err := inf.AddEventHandler(Coalesce(rec))
	if err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	eventually(t, "the handler to block in its first add", func() bool { return g.blocked.Load() == 1 })
	updated := mustUpdate(t, s, configMap("cm-0010", "v", "new")).(*corev1.ConfigMap)
	mustDelete(t, s, "cm-0011")
	eventually(t, "the store to have both changes", func() bool { return equalStates(serverState(t, s), storeState(inf.GetStore())) })
	if handle.HasSynced() {
		t.Fatal("HasSynced before the handler got its initial list")
	}
	g.release()
	waitSynced(t, handle)
	eventually(t, "the handler to catch up", func() bool { return equalStates(serverState(t, s), rec.stateCopy()) })
	calls := rec.snapshot()
	if len(calls) != 19 {
		t.Errorf("the handler got %d calls, want the 19 initial adds", len(calls))
	}
	for _, c := range calls {
		if c.op != "add" || !c.initial {
			t.Errorf("call %s %s (initial %v), want initial adds only", c.op, c.key, c.initial)
		}
		if c.key == key("cm-0010") && c.rv != updated.ResourceVersion {
			t.Errorf("cm-0010's add carries rv %s, want the update's %s", c.rv, updated.ResourceVersion)
		}
	}
}

// A relist while a coalescing handler is blocked folds into what it has
// pending: once it goes on, its state is the store's, with at most two calls
// per key. An unchanged object gets the relist's OnUpdate(obj, obj), as
// client-go sends it to handlers of an informer that does not resync.
func TestCoalescingHandlerAcrossARelist(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"plain store", nil}, {"encoded store", []Option{WithEncodedStore()}}} {
		t.Run(tc.name, func(t *testing.T) { testCoalescingAcrossARelist(t, tc.opts...) })
	}
}

func testCoalescingAcrossARelist(t *testing.T, opts ...Option) {
	s := newServer(t, 30)
	inf := newInformer(s, 0, opts...)
	rec := newRecorder()
	handle, err := inf.AddEventHandler(Coalesce(rec))
	if err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf, handle)
	g := closedGate()
	rec.onCall = g.wait
	mustUpdate(t, s, configMap("cm-0000", "v", "block"))
	eventually(t, "the handler to block", func() bool { return g.blocked.Load() == 1 })
	rec.reset()
	for i := range 3 {
		mustUpdate(t, s, configMap("cm-0001", "v", fmt.Sprint(i)))
	}
	forceRelist(t, s, func() {
		mustUpdate(t, s, configMap("cm-0001", "v", "relisted"))
		mustDelete(t, s, "cm-0002")
		mustCreate(t, s, configMap("new"))
	})
	eventually(t, "the relist to reach the store", func() bool { return equalStates(serverState(t, s), storeState(inf.GetStore())) })
	g.release()
	eventually(t, "the handler to catch up", func() bool { return equalStates(serverState(t, s), rec.stateCopy()) })
	perKey := map[string]int{}
	for _, c := range rec.snapshot() {
		perKey[c.key]++
	}
	for k, n := range perKey {
		if n > 2 {
			t.Errorf("%s: %d calls, want at most 2", k, n)
		}
	}
	for _, c := range rec.snapshot() {
		if c.key == key("cm-0029") && (c.op != "update" || c.oldRV != c.rv) {
			t.Errorf("unchanged cm-0029: %s %s->%s, want an update that keeps its resourceVersion", c.op, c.oldRV, c.rv)
		}
	}
	if _, known := rec.stateCopy()[key("cm-0002")]; known || perKey[key("cm-0002")] != 1 {
		t.Errorf("cm-0002 deleted in the relist: %d calls, still known %v; want its delete", perKey[key("cm-0002")], known)
	}
}

// Through client-go's informer, a Coalesce'd handler gets every call.
func TestCoalesceWithClientGoInformerPassesThrough(t *testing.T) {
	s := newServer(t, 2)
	inf := toolscache.NewSharedIndexInformer(s.ListerWatcher(), &corev1.ConfigMap{}, 0, nil)
	rec := newRecorder()
	if _, err := inf.AddEventHandler(Coalesce(rec)); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	eventually(t, "client-go's informer to sync", inf.HasSynced)
	for i := range 3 {
		mustUpdate(t, s, configMap("cm-0000", "v", fmt.Sprint(i)))
	}
	eventually(t, "every call", func() bool { return rec.len() == 5 })
	if c := Coalesce(rec); Coalesce(c) != c {
		t.Error("Coalesce of a Coalesce'd handler wraps it twice")
	}
}

// With WithControllerRuntimeCoalescing, the handlers controller-runtime's
// sources register coalesce, and no other handler does.
func TestControllerRuntimeHandlersCoalesce(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       []Option
		crCoalesce bool
	}{
		{"default", nil, false},
		{"WithControllerRuntimeCoalescing", []Option{WithControllerRuntimeCoalescing()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, 3)
			inf := newInformer(s, 0, tc.opts...)
			plain, err := inf.AddEventHandler(newRecorder())
			if err != nil {
				t.Fatal(err)
			}
			queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer queue.ShutDown()
			src := &source.Informer{Informer: inf, Handler: &handler.EnqueueRequestForObject{}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := src.Start(ctx, queue); err != nil {
				t.Fatal(err)
			}
			var cr *listener
			inf.processor.mu.RLock()
			for l := range inf.processor.listeners {
				if l != plain {
					cr = l
				}
			}
			inf.processor.mu.RUnlock()
			if cr == nil {
				t.Fatal("controller-runtime's source registered no handler")
			}
			if got := cr.keyed != nil; got != tc.crCoalesce {
				t.Errorf("controller-runtime's handler %s coalesces: %v, want %v", cr.handlerName, got, tc.crCoalesce)
			}
			if listenerOf(t, plain).keyed != nil {
				t.Error("a plain handler coalesces")
			}
			run(t, inf)
			eventually(t, "the requests of the initial list", func() bool { return queue.Len() == 3 })
		})
	}
}

// isControllerRuntimeHandler knows controller-runtime's adapter by its
// package and name only.
func TestIsControllerRuntimeHandler(t *testing.T) {
	for _, h := range []toolscache.ResourceEventHandler{nil, newRecorder(), toolscache.ResourceEventHandlerFuncs{}, Coalesce(newRecorder())} {
		if isControllerRuntimeHandler(h) {
			t.Errorf("%T taken for controller-runtime's handler", h)
		}
	}
}

// coalesceKey keys objects as the store does, tombstones included, and
// gives objects without a key keys of their own.
func TestCoalesceKey(t *testing.T) {
	cm := configMap("a")
	if k := coalesceKey(cm); k != key("a") {
		t.Errorf("key %q", k)
	}
	if k := coalesceKey(toolscache.DeletedFinalStateUnknown{Key: key("a"), Obj: cm}); k != key("a") {
		t.Errorf("tombstone key %q", k)
	}
	if a, b := coalesceKey(&metav1.Status{}), coalesceKey(&metav1.Status{}); a == b {
		t.Errorf("two objects without a key share %q", a)
	}
}

// A coalescing handler that joins a running informer gets its initial list
// from a store snapshot (an encoded store's entries, decoded as delivered),
// folded with the changes that come while it is behind.
func TestCoalescingLateHandler(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"plain store", nil}, {"encoded store", []Option{WithEncodedStore()}}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, 10)
			inf := newInformer(s, 0, tc.opts...)
			run(t, inf)
			waitSynced(t, inf)
			rec := newRecorder()
			g := closedGate()
			rec.onCall = g.wait
			handle, err := inf.AddEventHandler(Coalesce(rec))
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "the late handler to block in its first add", func() bool { return g.blocked.Load() == 1 })
			updated := mustUpdate(t, s, configMap("cm-0005", "v", "late")).(*corev1.ConfigMap)
			mustDelete(t, s, "cm-0006")
			eventually(t, "the store to have both changes", func() bool { return equalStates(serverState(t, s), storeState(inf.GetStore())) })
			if handle.HasSynced() {
				t.Fatal("the late handler synced before getting its initial list")
			}
			g.release()
			waitSynced(t, handle)
			eventually(t, "the handler to catch up", func() bool { return equalStates(serverState(t, s), rec.stateCopy()) })
			// The blocked first add was delivered before the changes: if it
			// was cm-0005's or cm-0006's, that object gets a second call.
			calls := rec.snapshot()
			perKey := map[string]int{}
			for _, c := range calls {
				perKey[c.key]++
			}
			first := calls[0].key
			for k, n := range perKey {
				if want := 1; n != want && (k != first || n != 2) {
					t.Errorf("%s: %d calls, want 1 (2 for the first object, %s)", k, n, first)
				}
			}
			if first != key("cm-0006") && perKey[key("cm-0006")] != 0 {
				t.Errorf("cm-0006, deleted before its add was delivered, got %d calls", perKey[key("cm-0006")])
			}
			for _, c := range calls {
				if c.key == key("cm-0005") && c.op == "add" && first != c.key && c.rv != updated.ResourceVersion {
					t.Errorf("cm-0005's add carries rv %s, want the update's %s", c.rv, updated.ResourceVersion)
				}
				if _, isCM := c.obj.(*corev1.ConfigMap); !isCM && c.op != "delete" {
					t.Errorf("%s %s got a %T, want a decoded ConfigMap", c.op, c.key, c.obj)
				}
			}
		})
	}
}

// A coalescing handler's queue folds an encoded store's snapshot (a late
// handler's initial list, a resync) by the keys the store gives with it:
// registration, which holds the informer's changeMu, decodes nothing; each
// object is decoded once, as it is delivered.
func TestCoalescingSnapshotFoldsWithoutDecoding(t *testing.T) {
	const n = 200
	s := newServer(t, n)
	inf := newInformer(s, 0, WithEncodedStore())
	run(t, inf)
	waitSynced(t, inf)
	countingDecode, decodes := countingDecoder(inf)
	rec := newRecorder()
	l := newListener(klog.Background(), inf.cfg.clock, rec, true, inf.HasSyncedChecker(), inf.metrics, countingDecode)
	keys, stored := inf.indexer.ListStored()
	l.add(notification{kind: notifyObjects, keys: keys, objects: stored, isInInitialList: true, countsForSync: true})
	if got := decodes.Load(); got != 0 {
		t.Fatalf("folding a snapshot of %d encoded entries decoded %d of them", n, got)
	}
	if got := queuedChanges(l); got != n {
		t.Fatalf("%d changes queued, want one per stored object (%d)", got, n)
	}
	go l.watchSynced()
	go l.run()
	t.Cleanup(func() { l.stop(); <-l.ShutdownChan() })
	eventually(t, "every object delivered", func() bool { return rec.len() == n })
	if got := decodes.Load(); got != n {
		t.Errorf("delivering %d objects decoded %d times, want one each", n, got)
	}
	for _, c := range rec.snapshot() {
		if c.op != "add" || c.key != objKey(c.obj) {
			t.Errorf("%s under key %s of object %s, want adds under each object's own key", c.op, c.key, objKey(c.obj))
		}
	}
	if !equalStates(serverState(t, s), rec.stateCopy()) {
		t.Error("the handler's state is not the server's")
	}
}
