package shard

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// informerReader is what a manager's cache is to ObjectKey: a reader of the
// objects, and the informer that delivers their events (one kind).
type informerReader struct {
	objects client.Client
	inf     *testInformer
}

func newInformerReader(objs ...client.Object) *informerReader {
	return &informerReader{objects: crfake.NewClientBuilder().WithObjects(objs...).Build(), inf: &testInformer{FakeInformer: &controllertest.FakeInformer{}}}
}

func (r *informerReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return r.objects.Get(ctx, key, obj, opts...)
}

func (r *informerReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.objects.List(ctx, list, opts...)
}

func (r *informerReader) GetInformer(context.Context, client.Object, ...crcache.InformerGetOption) (crcache.Informer, error) {
	return r.inf, nil
}

// remove deletes obj from the cache, then delivers its delete event, as an
// informer does (tombstone: as the DeletedFinalStateUnknown of a relist
// that found it gone).
func (r *informerReader) remove(t *testing.T, obj client.Object, tombstone bool) {
	t.Helper()
	r.removeFromCache(t, obj)
	r.deliverDelete(obj, tombstone)
}

func (r *informerReader) removeFromCache(t *testing.T, obj client.Object) {
	t.Helper()
	if err := r.objects.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func (r *informerReader) deliverDelete(obj client.Object, tombstone bool) {
	var event any = obj
	if tombstone {
		event = toolscache.DeletedFinalStateUnknown{Key: obj.GetNamespace() + "/" + obj.GetName(), Obj: obj}
	}
	r.inf.mu.Lock()
	defer r.inf.mu.Unlock()
	for _, h := range r.inf.handlers {
		h.OnDelete(event)
	}
}

// deleted returns the sizes of the record of deletions behind key.
func (r *informerReader) deleted(t *testing.T, key KeyFunc) (pending, released int) {
	t.Helper()
	d := deletionsOf(key)
	if d == nil {
		t.Fatal("no record of deletions behind the key")
	}
	return d.len()
}

// testInformer is a fake informer that delivers what the test hands it.
type testInformer struct {
	*controllertest.FakeInformer
	mu       sync.Mutex
	handlers []toolscache.ResourceEventHandler
}

func (i *testInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = append(i.handlers, h)
	return i.FakeInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
}

func (i *testInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, _ toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(h)
}

func (i *testInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, _ time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(h)
}

// startPair runs two members on one fake clientset until they share the
// hash space.
func startPair(t *testing.T) (a, b *Member, stop func()) {
	t.Helper()
	leases := fake.NewClientset()
	opts := []Option{WithLeaseDuration(time.Second), WithRenewDeadline(500 * time.Millisecond), WithRenewInterval(100 * time.Millisecond), WithMetrics(nil)}
	var err error
	if a, err = New(leases.CoordinationV1(), "ns", "ctl", append(opts, WithIdentity("a"), WithLogger(testLogger(t, "A")))...); err != nil {
		t.Fatal(err)
	}
	if b, err = New(leases.CoordinationV1(), "ns", "ctl", append(opts, WithIdentity("b"), WithLogger(testLogger(t, "B")))...); err != nil {
		t.Fatal(err)
	}
	cancelA, doneA := startMember(a)
	cancelB, doneB := startMember(b)
	stop = func() {
		cancelA()
		cancelB()
		for _, done := range []<-chan error{doneA, doneB} {
			if err := <-done; err != nil {
				t.Errorf("stopping a member: %v", err)
			}
		}
	}
	waitFor(t, "a and b sharing the hash space", 10*time.Second, func() bool {
		return !a.Serving().Empty() && !b.Serving().Empty() && a.Serving().Union(b.Serving()).Equal(FullRange())
	})
	return a, b, stop
}

// TestDeletionReconciledByOneReplica: the request of a deleted object (its
// delete event) finds nothing in the cache; a reconciler that cleans up on
// NotFound must still run for it, on exactly one replica: the one whose
// range held the object's hash. The primary kind here is not sharded, so
// both replicas hold the object, see its deletion and get the request; the
// tombstone case is a relist that found the object gone.
func TestDeletionReconciledByOneReplica(t *testing.T) {
	a, b, stop := startPair(t)
	defer stop()
	for _, tc := range []struct {
		name      string
		tombstone bool
		// recordedLate: the controller's handler and worker run before
		// ObjectKey's handler has recorded the deletion (each handler
		// has its own goroutine).
		recordedLate bool
	}{
		{name: "deleted"},
		{name: "tombstone", tombstone: true},
		{name: "recorded after the request", recordedLate: true},
	} {
		tombstone := tc.tombstone
		t.Run(tc.name, func(t *testing.T) {
			uid := ""
			for i := 0; uid == ""; i++ {
				if u := "uid-" + strconv.Itoa(i) + "-" + tc.name; b.Serving().Contains(Hash(u)) {
					uid = u
				}
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: types.UID(uid)}}
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "cm"}}
			type replica struct {
				name     string
				m        *Member
				reader   *informerReader
				key      *objectKey
				ctl      *miniController
				notFound atomic.Int64
			}
			replicas := []*replica{{name: "a", m: a}, {name: "b", m: b}}
			for _, r := range replicas {
				r.reader = newInformerReader(cm.DeepCopy())
				reader := r.reader
				r.key = newObjectKey(r.m, reader, &corev1.ConfigMap{})
				r.ctl = startMiniController(Reconciler(r.m, r.key.key,
					reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
						if err := reader.Get(ctx, req.NamespacedName, &corev1.ConfigMap{}); apierrors.IsNotFound(err) {
							r.notFound.Add(1) // the clean-up of a deleted object
						}
						return reconcile.Result{}, nil
					})))
				defer r.ctl.stop()
			}
			for _, r := range replicas {
				if tc.recordedLate {
					r.reader.removeFromCache(t, cm)
					r.ctl.queue.Add(req)
					continue
				}
				r.reader.remove(t, cm, tombstone)
				r.ctl.queue.Add(req) // what the controller's own delete handler does
			}
			if tc.recordedLate {
				waitFor(t, "both replicas trying the request", 5*time.Second, func() bool {
					return replicas[0].ctl.processed.Load() >= 1 && replicas[1].ctl.processed.Load() >= 1
				})
				for _, r := range replicas {
					r.reader.deliverDelete(cm, false)
				}
			}
			waitFor(t, "both replicas handling the deletion", 5*time.Second, func() bool {
				return replicas[0].ctl.processed.Load() >= 1 && replicas[1].ctl.processed.Load() >= 1
			})
			time.Sleep(3 * RetryAfter) // a retried request would be reconciled by now
			if na, nb := replicas[0].notFound.Load(), replicas[1].notFound.Load(); na != 0 || nb != 1 {
				t.Fatalf("the deletion of %s (hash in b's range) was reconciled %d times by a and %d times by b, want once by b only", req, na, nb)
			}
			// a keeps the deletion, released, in case it takes b's range
			// over before b reconciles it (Handovers replays it).
			for _, r := range replicas {
				wantReleased := 0
				if r.name == "a" {
					wantReleased = 1
				}
				if pending, released := r.key.deleted.len(); pending != 0 || released != wantReleased {
					t.Errorf("%s records %d deletions pending and %d released after it settled the request, want 0 and %d", r.name, pending, released, wantReleased)
				}
			}
		})
	}
}

// The record of deleted objects' keys is bounded in number and age, and
// forgetting a settled request leaves a later deletion of the same name.
func TestDeletedKeysBounds(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	full := 0
	d := newDeletedKeys(clk, time.Minute, time.Second, 2, func() { full++ })
	name := func(s string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: s} }
	d.record(name("x"), "ux")
	d.record(name("y"), "uy")
	d.record(name("z"), "uz")
	d.record(name("w"), "uw")
	if _, _, ok := d.lookup(name("y"), true); ok || pendingOf(d) != 2 || full != 1 {
		t.Fatalf("over a bound of 2: %d kept, y kept %v, full told %d times; want 2, the oldest gone, told once", pendingOf(d), ok, full)
	}
	clk.Step(time.Minute)
	if _, _, ok := d.lookup(name("w"), true); ok || pendingOf(d) != 0 {
		t.Fatalf("after the TTL: %d kept", pendingOf(d))
	}

	d.record(name("x"), "ux1")
	v, settle, ok := d.lookup(name("x"), true)
	if !ok || v != "ux1" {
		t.Fatalf("lookup(x) = %q, %v", v, ok)
	}
	d.record(name("x"), "ux2") // deleted again, re-created in between
	settle(true)
	if v, _, ok := d.lookup(name("x"), true); !ok || v != "ux2" {
		t.Fatalf("settling the first deletion of x forgot the second: %q, %v", v, ok)
	}
	d.forget(name("x"))
	if p, r := d.len(); p != 0 || r != 0 {
		t.Fatalf("%d pending and %d released kept after forget", p, r)
	}
}

func pendingOf(d *deletedKeys) int {
	p, _ := d.len()
	return p
}

// A record whose request was dropped as another replica's is released:
// still found, and replayed by range, for its own shorter age, under its
// own bound, and it does not count against the pending records' bound.
func TestDeletedKeysReleased(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	full := 0
	d := newDeletedKeys(clk, time.Minute, time.Second, 2, func() { full++ })
	name := func(s string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: s} }
	release := func(s string) {
		t.Helper()
		_, settle, ok := d.lookup(name(s), true)
		if !ok {
			t.Fatalf("%s not recorded", s)
		}
		settle(false)
	}
	for _, s := range []string{"x", "y", "z"} {
		d.record(name(s), "u"+s)
		release(s)
	}
	if p, r := d.len(); p != 0 || r != 2 || full != 0 {
		t.Fatalf("three released over a bound of 2: %d pending, %d released, full told %d times; want 0, 2, never", p, r, full)
	}
	if got := d.inRange(FullRange()); len(got) != 2 || got[0] != name("y") || got[1] != name("z") {
		t.Fatalf("released in the whole range: %v, want y and z", got)
	}
	if got := d.inRange(NewRange(Hash("uz"), Hash("uz")+1)); len(got) != 1 || got[0] != name("z") {
		t.Fatalf("released in z's hash: %v, want z", got)
	}
	clk.Step(time.Second / 2)
	if got := d.replay(NewRange(Hash("uy"), Hash("uy")+1)); len(got) != 1 || got[0] != name("y") {
		t.Fatalf("replayed in y's hash: %v, want y", got)
	}
	release("y") // dropped again (a replay that is another's by now): kept from now
	d.record(name("w"), "uw")
	d.record(name("v"), "uv")
	if p, r := d.len(); p != 2 || r != 2 || full != 0 {
		t.Fatalf("two pending beside two released: %d pending, %d released, full told %d times", p, r, full)
	}
	clk.Step(time.Second / 2)
	if v, _, ok := d.lookup(name("y"), true); !ok || v != "uy" {
		t.Fatalf("released again half its age ago: %q, %v; want kept", v, ok)
	}
	if _, _, ok := d.lookup(name("z"), true); ok {
		t.Fatal("released a whole age ago: still kept")
	}
	_, settle, _ := d.lookup(name("y"), true)
	settle(true) // reconciled here after a replay
	if p, r := d.len(); p != 2 || r != 0 {
		t.Fatalf("a released record reconciled here: %d pending, %d released; want the 2 others pending, none released", p, r)
	}
	if v, _, ok := d.lookup(name("y"), true); !ok || v != "uy" {
		t.Fatalf("a record reconciled here is not found for the other requests of its name: %q, %v", v, ok)
	}
	if got := d.inRange(FullRange()); len(got) != 2 {
		t.Fatalf("in the whole range: %v, want the two pending", got)
	}
}

// ObjectKey places a request whose object is not found by its namespace
// with KeyNamespace (no record needed), and reads the object without a
// deep copy.
func TestObjectKeyReads(t *testing.T) {
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithKey(KeyNamespace), WithLogger(logr.Discard()), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	reader := &optionsReader{Reader: newInformerReader()}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "gone"}}
	if v, ok, err := ObjectKey(m, reader, &corev1.ConfigMap{})(context.Background(), req); v != "team-a" || !ok || err != nil {
		t.Errorf("a deleted object with KeyNamespace: %q, %v, %v; want its namespace", v, ok, err)
	}
	if len(reader.opts) != 1 || len(reader.opts[0]) != 1 || reader.opts[0][0] != client.UnsafeDisableDeepCopy {
		t.Fatalf("ObjectKey's Get had the options %v, want client.UnsafeDisableDeepCopy", reader.opts)
	}
}

// optionsReader records the options of every Get.
type optionsReader struct {
	client.Reader
	opts [][]client.GetOption
}

func (r *optionsReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.opts = append(r.opts, opts)
	return r.Reader.Get(ctx, key, obj, opts...)
}

// A request whose object is neither in the cache nor recorded as deleted
// is retried by a Reconciler for RecordWait (its deletion may not be
// recorded yet), then unknown; outside a Reconciler it is unknown at once,
// and the names waiting are bounded.
func TestObjectKeyWaitsForTheRecordOfAMissingObject(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithClock(clk), WithLogger(logr.Discard()), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	k := newObjectKey(m, newInformerReader(), &corev1.ConfigMap{})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "never"}}
	inReconciler := context.WithValue(context.Background(), settledKey{}, &settlement{})

	if v, ok, err := k.key(context.Background(), req); v != "" || ok || err != nil {
		t.Fatalf("outside a Reconciler: %q, %v, %v; want unknown", v, ok, err)
	}
	var elapsed time.Duration
	for _, step := range []time.Duration{0, RecordWait / 2, RecordWait/2 - time.Millisecond} {
		clk.Step(step)
		elapsed += step
		if _, _, err := k.key(inReconciler, req); !errors.Is(err, errNotRecordedYet) {
			t.Fatalf("%v after the first miss: %v, want errNotRecordedYet", elapsed, err)
		}
	}
	clk.Step(time.Millisecond)
	if v, ok, err := k.key(inReconciler, req); v != "" || ok || err != nil {
		t.Fatalf("RecordWait after the first miss: %q, %v, %v; want unknown", v, ok, err)
	}

	d := newDeletedKeys(clk, time.Minute, time.Second, 2, nil)
	name := func(s string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: s} }
	if !d.miss(name("x")) || !d.miss(name("y")) || d.miss(name("z")) {
		t.Fatal("with a bound of 2, a third name waiting for its record was retried")
	}
	d.record(name("x"), "ux")
	if !d.miss(name("z")) {
		t.Fatal("a name whose record came did not free its place")
	}
}

// With KeyNamespace the request of a deletion is placed by its namespace,
// but ObjectKey still records the deletion, for the Handovers that uses it
// to replay it.
func TestObjectKeyRecordsDeletionsWithKeyNamespace(t *testing.T) {
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithKey(KeyNamespace), WithLogger(logr.Discard()), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "cm", UID: "u"}}
	reader := newInformerReader(cm.DeepCopy())
	key := ObjectKey(m, reader, &corev1.ConfigMap{})
	Handovers(m, reader, &corev1.ConfigMapList{}, key)
	reader.remove(t, cm, false)
	if got := deletionsOf(key).inRange(NewRange(Hash("team-a"), Hash("team-a")+1)); len(got) != 1 || got[0] != client.ObjectKeyFromObject(cm) {
		t.Fatalf("deletions recorded in team-a's hash: %v, want %s", got, client.ObjectKeyFromObject(cm))
	}
	var settled settlement
	ctx := context.WithValue(context.Background(), settledKey{}, &settled)
	if v, ok, err := key(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cm)}); v != "team-a" || !ok || err != nil {
		t.Fatalf("the deleted object's request: %q, %v, %v; want its namespace", v, ok, err)
	}
	settled.settle(false) // another replica's
	if pending, released := reader.deleted(t, key); pending != 0 || released != 1 {
		t.Fatalf("dropped as another's: %d pending, %d released; want 0 and 1", pending, released)
	}
}

// Handovers finds the record behind ObjectKey only: another KeyFunc has
// none, and the probe does not block it (its context is cancelled).
func TestDeletionsOf(t *testing.T) {
	if deletionsOf(RequestNamespace) != nil {
		t.Error("RequestNamespace has a record of deletions")
	}
	blocked := func(ctx context.Context, _ reconcile.Request) (string, bool, error) {
		<-ctx.Done() // a read of a cache that has not synced
		return "", false, ctx.Err()
	}
	if deletionsOf(blocked) != nil {
		t.Error("a KeyFunc of the user's has a record of deletions")
	}
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithLogger(logr.Discard()), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	key := ObjectKey(m, newInformerReader(), &corev1.ConfigMap{})
	wrapped := func(ctx context.Context, req reconcile.Request) (string, bool, error) { return key(ctx, req) }
	if deletionsOf(key) == nil || deletionsOf(wrapped) != deletionsOf(key) {
		t.Error("ObjectKey's record not found, directly or through a wrapper")
	}
	if deletionsOf(ObjectKey(m, crfake.NewClientBuilder().Build(), &corev1.ConfigMap{})) != nil {
		t.Error("ObjectKey on a reader without informers has a record")
	}
}

// Replaying a range makes its released records pending again, in the
// order of their deletions, with the age of a pending record counted from
// the deletion: a replayed deletion is kept until this replica settles it,
// and never longer than DeletedKeyTTL.
func TestDeletedKeysReplay(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	d := newDeletedKeys(clk, time.Minute, time.Second, 4, nil)
	name := func(s string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: s} }
	d.record(name("x"), "ux")
	clk.Step(10 * time.Second)
	if _, settle, ok := d.lookup(name("x"), true); ok {
		settle(false) // another replica's
	}
	d.record(name("y"), "uy")
	d.lookup(name("y"), true) // its request retried: the member is assigned its hash
	d.record(name("z"), "uz") // its request never reached a Reconciler (a predicate)
	if got := d.replay(FullRange()); len(got) != 2 || got[0] == name("z") || got[1] == name("z") {
		t.Fatalf("replayed %v, want x and y", got)
	}
	d.forget(name("z"))
	if p, r := d.len(); p != 2 || r != 0 {
		t.Fatalf("after the replay: %d pending, %d released; want 2 and 0", p, r)
	}
	clk.Step(time.Minute - 10*time.Second) // x's deletion a TTL ago, y's not
	if _, _, ok := d.lookup(name("x"), true); ok {
		t.Error("a replayed record outlived DeletedKeyTTL from its deletion")
	}
	if _, _, ok := d.lookup(name("y"), true); !ok {
		t.Error("a pending record went before its TTL: the replayed one was put after it")
	}
}

// TestObjectKeyWithKeyNamespaceRecordsOnlyForHandovers: with KeyNamespace
// the request of a deletion is placed by its namespace, and the record of
// deletions serves only Handovers' replay. A sharded primary's cache hands
// its controller a tombstone for every object that leaves the member's
// range; recording those for nothing fills the record, and past
// MaxDeletedKeys (a hand-over of a large share) ObjectKey logged an error
// saying that the requests of deletions are dropped by every replica,
// which with KeyNamespace is not so.
func TestObjectKeyWithKeyNamespaceRecordsOnlyForHandovers(t *testing.T) {
	var logs logLines
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithKey(KeyNamespace), WithLogger(logs.logger()), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	reader := newInformerReader()
	key := newObjectKey(m, reader, &corev1.ConfigMap{})
	// The relist of a range change: everything that left, as tombstones.
	for i := range MaxDeletedKeys + 1 {
		reader.deliverDelete(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-" + strconv.Itoa(i%100), Name: "cm-" + strconv.Itoa(i), UID: types.UID("u-" + strconv.Itoa(i))}}, true)
	}
	if said := logs.matching("More objects were deleted"); len(said) != 0 {
		t.Errorf("a hand-over of %d objects of a sharded primary with KeyNamespace logged %q", MaxDeletedKeys+1, said)
	}
	if pending, released := key.deleted.len(); pending != 0 || released != 0 {
		t.Errorf("without Handovers, ObjectKey with KeyNamespace kept %d pending and %d released records, want none", pending, released)
	}

	// With Handovers (an unsharded primary), the deletions are recorded.
	Handovers(m, reader, &corev1.ConfigMapList{}, key.key)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "cm", UID: "u"}}
	reader.deliverDelete(cm, false)
	if got := key.deleted.inRange(NewRange(Hash("team-a"), Hash("team-a")+1)); len(got) == 0 || got[len(got)-1] != client.ObjectKeyFromObject(cm) {
		t.Fatalf("with Handovers, the deletion of %s is not recorded", client.ObjectKeyFromObject(cm))
	}
}

// A sharded cache hands its handlers a tombstone for every object that
// leaves the member's range: ObjectKey records those as released, not
// pending, so that a large hand-over neither logs that deletions are lost
// nor pushes out the record of a real deletion in the member's own range.
func TestObjectKeyRecordsWhatLeftTheRangeAsReleased(t *testing.T) {
	var logs logLines
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithLogger(logs.logger()), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	half := NewRange(0, 1<<63)
	m.gate.assign(half)
	m.gate.set(half, time.Now().Add(time.Hour))
	reader := newInformerReader()
	key := newObjectKey(m, reader, &corev1.ConfigMap{})
	next := 0
	uid := func(inRange bool) types.UID { // the next UID in the member's range, or out of it
		for {
			next++
			if u := "u-" + strconv.Itoa(next); half.Contains(Hash(u)) == inRange {
				return types.UID(u)
			}
		}
	}
	ours := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ours", UID: uid(true)}}
	reader.deliverDelete(ours, false) // a real deletion in the member's range
	// The relist of a range change: everything that left, as tombstones.
	for n := range MaxDeletedKeys + 1 {
		reader.deliverDelete(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm-" + strconv.Itoa(n), UID: uid(false)}}, true)
	}
	if said := logs.matching("More objects were deleted"); len(said) != 0 {
		t.Errorf("a hand-over of %d objects that left the range logged %q", MaxDeletedKeys+1, said)
	}
	if v, _, ok := key.deleted.lookup(client.ObjectKeyFromObject(ours), true); !ok || v != string(ours.UID) {
		t.Errorf("the deletion in the member's range was pushed out by %d objects that left it: %q, %v", MaxDeletedKeys+1, v, ok)
	}
	if pending, released := key.deleted.len(); pending != 1 || released != MaxDeletedKeys {
		t.Errorf("%d pending and %d released records, want 1 and %d", pending, released, MaxDeletedKeys)
	}
}

// inRange returns the names of the recorded deletions, pending or
// released, whose key value hashes into r, as replay does, without
// making any pending again, whether or not a request reached them.
func (d *deletedKeys) inRange(r Range) []types.NamespacedName {
	d.mu.Lock()
	defer d.mu.Unlock()
	names, _ := d.inRangeLocked(r, false)
	return names
}

// TestObjectKeySharedByTwoControllers: one ObjectKey may serve two
// controllers: the Secrets' own, and, inside a KeyFunc of the user's, a
// ConfigMap controller that places each ConfigMap by the Secret of its
// name (and watches those Secrets). Both get a request for a deleted
// Secret; the first to reconcile it must not take its record away from
// the other, which would drop the deletion as unknown.
func TestObjectKeySharedByTwoControllers(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithClock(clk), WithLogger(testLogger(t, "A")), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	m.gate.assign(FullRange())
	m.gate.set(FullRange(), clk.Now().Add(time.Hour))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u"}}
	reader := newInformerReader(secret.DeepCopy())
	secretKey := ObjectKey(m, reader, &corev1.Secret{})
	bySecret := func(ctx context.Context, req reconcile.Request) (string, bool, error) { return secretKey(ctx, req) }
	reconciled := map[string]int{}
	inner := func(name string) reconcile.Func {
		return func(context.Context, reconcile.Request) (reconcile.Result, error) {
			reconciled[name]++
			return reconcile.Result{}, nil
		}
	}
	configMaps := Reconciler(m, bySecret, inner("configmaps"))
	secrets := Reconciler(m, secretKey, inner("secrets"))
	reader.remove(t, secret, false)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(secret)}
	for _, r := range []reconcile.Reconciler{configMaps, secrets} {
		for range 20 {
			res, err := r.Reconcile(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter == 0 {
				break
			}
			clk.Step(res.RequeueAfter)
		}
	}
	if reconciled["configmaps"] != 1 || reconciled["secrets"] != 1 {
		t.Fatalf("the Secret's deletion was reconciled %v, want once by each controller: the first to reconcile it took the record away from the other, which dropped it as unknown", reconciled)
	}
}
