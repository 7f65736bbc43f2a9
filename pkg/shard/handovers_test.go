package shard

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// miniController is the part of a controller-runtime controller that
// matters here: a rate-limited queue of requests, one worker, RequeueAfter.
type miniController struct {
	queue     workqueue.TypedRateLimitingInterface[reconcile.Request]
	processed atomic.Int64
	wg        sync.WaitGroup
}

func startMiniController(r reconcile.Reconciler) *miniController {
	c := &miniController{queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())}
	c.wg.Go(func() {
		for {
			req, shutdown := c.queue.Get()
			if shutdown {
				return
			}
			res, err := r.Reconcile(context.Background(), req)
			switch {
			case err != nil:
				c.queue.AddRateLimited(req)
			case res.RequeueAfter > 0:
				c.queue.Forget(req)
				c.queue.AddAfter(req, res.RequeueAfter)
			default:
				c.queue.Forget(req)
			}
			c.queue.Done(req)
			c.processed.Add(1)
		}
	})
	return c
}

func (c *miniController) stop() {
	c.queue.ShutDown()
	c.wg.Wait()
}

// crashablePair runs members a and b on one fake clientset, with a lease
// duration of 1 s, until they share the hash space; storing true in cut
// makes b crash: none of its Lease writes lands any more.
func crashablePair(t *testing.T) (a, b *Member, cut *atomic.Bool) {
	t.Helper()
	leases := fake.NewClientset()
	cut = &atomic.Bool{}
	leases.PrependReactor("*", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if !cut.Load() {
			return false, nil, nil
		}
		name := ""
		switch action := action.(type) {
		case k8stesting.UpdateAction:
			if o, ok := action.GetObject().(client.Object); ok {
				name = o.GetName()
			}
		case k8stesting.PatchAction:
			name = action.GetName()
		case k8stesting.DeleteAction:
			name = action.GetName()
		}
		if name == "ctl-b" {
			return true, nil, apierrors.NewServiceUnavailable("b is cut off")
		}
		return false, nil, nil
	})
	opts := []Option{WithLeaseDuration(time.Second), WithRenewDeadline(500 * time.Millisecond), WithRenewInterval(100 * time.Millisecond),
		WithStopTimeout(300 * time.Millisecond), WithMetrics(nil)}
	a, err := New(leases.CoordinationV1(), "ns", "ctl", append(opts, WithIdentity("a"), WithLogger(testLogger(t, "A")))...)
	if err != nil {
		t.Fatal(err)
	}
	b, err = New(leases.CoordinationV1(), "ns", "ctl", append(opts, WithIdentity("b"), WithLogger(testLogger(t, "B")))...)
	if err != nil {
		t.Fatal(err)
	}
	cancelA, doneA := startMember(a)
	t.Cleanup(func() {
		cancelA()
		if err := <-doneA; err != nil {
			t.Errorf("a's clean stop: %v", err)
		}
	})
	cancelB, doneB := startMember(b)
	t.Cleanup(func() {
		cancelB()
		if err := <-doneB; err == nil && cut.Load() {
			t.Error("b stopped cleanly while cut off from its Lease")
		}
	})
	waitFor(t, "a and b sharing the hash space", 10*time.Second, func() bool {
		return !a.Serving().Empty() && !b.Serving().Empty() && a.Serving().Union(b.Serving()).Equal(FullRange())
	})
	return a, b, cut
}

// startWithHandovers runs r behind m's Reconciler with key, in a mini
// controller that has the source the README tells a controller of an
// unsharded primary to add: Handovers of the ConfigMaps in reader.
func startWithHandovers(t *testing.T, m *Member, reader client.Reader, key KeyFunc, r reconcile.Func) *miniController {
	t.Helper()
	ctl := startMiniController(Reconciler(m, key, r))
	t.Cleanup(ctl.stop)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before ctl.stop: cleanups run last first
	if err := Handovers(m, reader, &corev1.ConfigMapList{}, key).Start(ctx, ctl.queue); err != nil {
		t.Fatal(err)
	}
	return ctl
}

// uidServedBy returns a UID whose hash m serves.
func uidServedBy(m *Member) string {
	for i := 0; ; i++ {
		if u := "uid-" + strconv.Itoa(i); m.Serving().Contains(Hash(u)) {
			return u
		}
	}
}

// halfMemberLease is the lease duration of halfMember's member.
const halfMemberLease = 3 * time.Second

// halfMember returns a member on a fake clock that serves the lower half
// of the hash space (another member, as the tests tell it, the upper).
func halfMember(t *testing.T) (*Member, *testingclock.FakeClock, Range) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Now())
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithClock(clk), WithLeaseDuration(halfMemberLease),
		WithRenewDeadline(2*time.Second), WithRenewInterval(300*time.Millisecond), WithLogger(testLogger(t, "A")), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	half := NewRange(0, 1<<63)
	m.gate.assign(half)
	m.gate.set(half, clk.Now().Add(time.Hour))
	return m, clk, half
}

// uidsOutside returns n UIDs whose hashes r does not hold.
func uidsOutside(r Range, n int) []string {
	var uids []string
	for i := 0; len(uids) < n; i++ {
		if u := "uid-" + strconv.Itoa(i); !r.Contains(Hash(u)) {
			uids = append(uids, u)
		}
	}
	return uids
}

// takeOverAll makes m serve the whole hash space, as when the other member
// died.
func takeOverAll(m *Member, clk *testingclock.FakeClock) {
	m.gate.assign(FullRange())
	m.gate.set(FullRange(), clk.Now().Add(time.Hour))
}

// reconcileQueued hands r every request in q until q is empty.
func reconcileQueued(t *testing.T, q workqueue.TypedRateLimitingInterface[reconcile.Request], r reconcile.Reconciler) {
	t.Helper()
	for q.Len() > 0 {
		req, _ := q.Get()
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		q.Done(req)
	}
}

// TestUnshardedPrimaryUpdateDuringHandoverIsReconciled: a controller
// whose primary kind is not sharded sees every event in every replica,
// and drops those for hashes its member is not assigned. An update that
// arrives while a range moves (its owner is gone, and the survivor is not
// assigned the range until the owner's Lease expires) is dropped
// everywhere; the survivor must reconcile the object once it takes the
// range over, as the relist of a sharded primary would make it.
func TestUnshardedPrimaryUpdateDuringHandoverIsReconciled(t *testing.T) {
	a, b, cut := crashablePair(t)

	// A ConfigMap of b's range, in a's unsharded cache.
	uid := uidServedBy(b)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: types.UID(uid)}, Data: map[string]string{"v": "1"}}
	reader := crfake.NewClientBuilder().WithObjects(cm).Build()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "cm"}}
	var reconciledV2 atomic.Bool
	key := ObjectKey(a, reader, &corev1.ConfigMap{})
	ctl := startWithHandovers(t, a, reader, key, func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var got corev1.ConfigMap
		if err := reader.Get(ctx, req.NamespacedName, &got); err != nil {
			return reconcile.Result{}, err
		}
		if got.Data["v"] == "2" {
			reconciledV2.Store(true)
		}
		return reconcile.Result{}, nil
	})

	// b crashes; the object is updated, and the event reaches a while b's
	// Lease is still live: a is not assigned the object's hash, and drops it.
	cut.Store(true)
	cm.Data["v"] = "2"
	if err := reader.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	ctl.queue.Add(req)
	waitFor(t, "a handling the update", 5*time.Second, func() bool { return ctl.processed.Load() >= 1 })
	if reconciledV2.Load() || a.Serving().Contains(Hash(uid)) || a.Assigned(Hash(uid)) {
		t.Fatal("a was assigned b's range before b's Lease could expire: the test missed the hand-over")
	}

	waitFor(t, "a taking b's range over", 10*time.Second, func() bool { return a.Serving().Equal(FullRange()) })
	for deadline := time.Now().Add(3 * time.Second); !reconciledV2.Load(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the update made while b's range moved to a was never reconciled: a dropped it before it was assigned the range, and nothing sent it again once it served the range")
		}
	}
}

// TestUnshardedPrimaryDeletionDuringHandoverIsReconciled: the same for a
// deletion. Its request finds nothing in the cache, and the listing that
// replays the objects of a range taken over does not hold it either: the
// survivor must replay the deletion from ObjectKey's record, which keeps it
// although the survivor dropped its request as b's.
func TestUnshardedPrimaryDeletionDuringHandoverIsReconciled(t *testing.T) {
	a, b, cut := crashablePair(t)
	uid := uidServedBy(b)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: types.UID(uid)}}
	reader := newInformerReader(cm.DeepCopy()) // a's unsharded cache, with its informer
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "cm"}}
	var notFound atomic.Int64
	key := ObjectKey(a, reader, &corev1.ConfigMap{})
	ctl := startWithHandovers(t, a, reader, key, func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if err := reader.Get(ctx, req.NamespacedName, &corev1.ConfigMap{}); apierrors.IsNotFound(err) {
			notFound.Add(1) // the clean-up of a deleted object
		}
		return reconcile.Result{}, nil
	})

	// b crashes; the object is deleted while b's Lease is still live: a
	// drops the request, b never reconciles it.
	cut.Store(true)
	reader.remove(t, cm, false)
	ctl.queue.Add(req) // what the controller's own delete handler does
	waitFor(t, "a handling the deletion", 5*time.Second, func() bool { return ctl.processed.Load() >= 1 })
	if notFound.Load() != 0 || a.Serving().Contains(Hash(uid)) || a.Assigned(Hash(uid)) {
		t.Fatal("a was assigned b's range before b's Lease could expire: the test missed the hand-over")
	}

	waitFor(t, "a taking b's range over", 10*time.Second, func() bool { return a.Serving().Equal(FullRange()) })
	for deadline := time.Now().Add(3 * time.Second); notFound.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the deletion made while b's range moved to a was never reconciled: a dropped it before it was assigned the range, and nothing sent it again once it served the range")
		}
	}
	time.Sleep(3 * RetryAfter)
	if n := notFound.Load(); n != 1 {
		t.Fatalf("the deletion was reconciled %d times by a, want once", n)
	}
	if pending, released := reader.deleted(t, key); pending != 0 || released != 0 {
		t.Fatalf("after a reconciled the replayed deletion, its record holds %d pending and %d released, want none", pending, released)
	}
}

// A Handovers source learns every hash serving gained since it last
// looked, a hash lost and regained in between included (a fence, then a
// renewal): reading the served range before and after would miss it.
func TestGateReportsEveryGain(t *testing.T) {
	g := newGate(testingclock.NewFakeClock(time.Now()))
	sub := g.subscribeGains()
	half, rest := NewRange(0, 1<<63), NewRange(1<<63, 0)
	g.set(half, time.Now().Add(time.Hour))
	if got := g.takeGains(sub); !got.Equal(half) {
		t.Fatalf("first claim: gained %s, want %s", got, half)
	}
	g.set(FullRange(), time.Now().Add(time.Hour))
	g.fence()
	g.set(half, time.Now().Add(2*time.Hour))
	select {
	case <-sub.signal:
	default:
		t.Fatal("no signal after gains")
	}
	if got := g.takeGains(sub); !got.Equal(FullRange()) {
		t.Fatalf("after gaining %s, losing everything and regaining %s: gained %s, want everything", rest, half, got)
	}
	if got := g.takeGains(sub); !got.Empty() {
		t.Fatalf("a second take returned %s", got)
	}
	g.unsubscribeGains(sub)
	g.set(FullRange(), time.Now().Add(3*time.Hour))
	if got := g.takeGains(sub); !got.Empty() {
		t.Fatalf("an unsubscribed source was told of %s", got)
	}
}

// TestReplayedDeletionOutlivesTheReleasedAge: a deletion dropped as
// another replica's, replayed by Handovers when the member takes its hash
// over, is retried while a sharded cache of the member relists the range
// taken over. The record must last until the request is settled here: if
// it expired two lease durations after the drop, the retries would find
// nothing and drop the deletion as unknown, on every replica.
func TestReplayedDeletionOutlivesTheReleasedAge(t *testing.T) {
	const lease = halfMemberLease
	m, clk, half := halfMember(t)
	sharded := m.TrackCacheOf("*v1.Secret") // a sharded secondary cache
	sharded.Set(half)
	defer sharded.Close()

	uid := uidsOutside(half, 1)[0]
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: types.UID(uid)}}
	reader := newInformerReader(cm.DeepCopy()) // the unsharded primary's cache
	key := ObjectKey(m, reader, &corev1.ConfigMap{})
	var notFound int
	r := Reconciler(m, key, reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if err := reader.Get(ctx, req.NamespacedName, &corev1.ConfigMap{}); apierrors.IsNotFound(err) {
			notFound++
		}
		return reconcile.Result{}, nil
	}))
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cm)}

	// The deletion arrives while another member holds the hash: dropped.
	reader.remove(t, cm, false)
	if res, err := r.Reconcile(context.Background(), req); err != nil || !res.IsZero() || notFound != 0 {
		t.Fatalf("a deletion of another member's range: %+v, %v, reconciled %d times; want it dropped", res, err, notFound)
	}
	// That member dies; a lease duration later this one takes the range
	// over, and Handovers replays the deletion.
	clk.Step(lease + 500*time.Millisecond)
	takeOverAll(m, clk)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	src := Handovers(m, reader, &corev1.ConfigMapList{}, key).(*handovers)
	if _, deletions, err := src.enqueue(context.Background(), q, FullRange().Minus(half)); err != nil || deletions != 1 {
		t.Fatalf("replaying the range taken over: %d deletions, %v; want 1", deletions, err)
	}
	// The sharded cache relists the new range, which takes a while: the
	// replayed request is retried meanwhile.
	for waited := time.Duration(0); waited < 2*lease; waited += RetryAfter {
		res, err := r.Reconcile(context.Background(), req)
		if err != nil || res.RequeueAfter == 0 {
			t.Fatalf("%v into the relist: %+v, %v; want a retry", waited, res, err)
		}
		clk.Step(res.RequeueAfter)
	}
	sharded.Set(FullRange())
	for i := 0; i < 10 && notFound == 0; i++ {
		res, err := r.Reconcile(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter == 0 {
			break
		}
		clk.Step(res.RequeueAfter)
	}
	if notFound != 1 {
		t.Fatalf("the replayed deletion was reconciled %d times once the caches held its hash, want once: its record expired while the request waited for the relist", notFound)
	}
}

// TestHandoversProbeSparesTheUsersKey: Handovers looks for ObjectKey's
// record behind its key by calling the key with an empty request, which no
// controller ever hands it. A KeyFunc of the user's that assumes a
// request's name (here, objects named "<tenant>.<name>" placed by their
// tenant) must not bring the process down at setup, nor be taken for one
// with a record.
func TestHandoversProbeSparesTheUsersKey(t *testing.T) {
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithKey(KeyNamespace), WithLogger(testLogger(t, "A")), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	byTenant := func(_ context.Context, req reconcile.Request) (string, bool, error) {
		return strings.SplitN(req.Name, ".", 2)[1], true, nil // every object's name has a dot
	}
	var src source.Source
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("Handovers with a KeyFunc that reads the request's name panicked: %v", p)
			}
		}()
		src = Handovers(m, newInformerReader(), &corev1.ConfigMapList{}, byTenant)
	}()
	if h := src.(*handovers); h.deleted != nil {
		t.Fatal("a KeyFunc of the user's was taken for one with a record of deletions")
	}
}

// TestLaterDropsDoNotKeepAReleasedDeletion: the request of a deletion
// dropped as another replica's leaves a released record, kept two lease
// durations for Handovers to replay. More requests for the same name keep
// coming after the deletion (a child's deletion mapped to its owner, a
// Watches mapping to a fixed name), and each is dropped as another's too:
// they must not re-arm the record, or it lives as long as they come, and a
// hand-over long after the owner reconciled the deletion replays it.
func TestLaterDropsDoNotKeepAReleasedDeletion(t *testing.T) {
	const lease = halfMemberLease
	m, clk, half := halfMember(t)
	uid := uidsOutside(half, 1)[0]
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: types.UID(uid)}}
	reader := newInformerReader(cm.DeepCopy())
	key := ObjectKey(m, reader, &corev1.ConfigMap{})
	reconciled := 0
	r := Reconciler(m, key, reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		reconciled++
		return reconcile.Result{}, nil
	}))
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cm)}

	reader.remove(t, cm, false)
	// The deletion's request, then one every half lease duration for ten
	// lease durations: all another replica's.
	for waited := time.Duration(0); waited <= 10*lease; waited += lease / 2 {
		// Dropped, or, once the record is gone, retried for RecordWait.
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("%v after the deletion: %v", waited, err)
		}
		clk.Step(lease / 2)
	}
	if reconciled != 0 {
		t.Fatalf("another replica's deletion was reconciled %d times here", reconciled)
	}
	// The owner reconciled the deletion ten lease durations ago; now this
	// member takes its range over.
	takeOverAll(m, clk)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	src := Handovers(m, reader, &corev1.ConfigMapList{}, key).(*handovers)
	if _, deletions, err := src.enqueue(context.Background(), q, FullRange().Minus(half)); err != nil || deletions != 0 {
		t.Fatalf("a hand-over ten lease durations after the deletion was first dropped replayed %d deletions (%v); want none: the later drops kept its record", deletions, err)
	}
}

// TestHandoversProbeOfABlockingKey: Handovers calls its key once when it is
// built (a controller's setup, before the manager starts) to find
// ObjectKey's record. A KeyFunc of the user's that waits for something
// without looking at its context (a table that the manager's start fills)
// must not hang the setup: Handovers returns, without a record, and says
// why in the log.
func TestHandoversProbeOfABlockingKey(t *testing.T) {
	var logs logLines
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithLogger(logs.logger()), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	defer close(ready)
	waits := func(_ context.Context, req reconcile.Request) (string, bool, error) {
		<-ready // filled once the manager has started
		if req.Name == "" {
			return "", false, apierrors.NewBadRequest("a request without a name")
		}
		return req.Name, true, nil
	}
	built := make(chan source.Source, 1)
	go func() { built <- Handovers(m, newInformerReader(), &corev1.ConfigMapList{}, waits) }()
	select {
	case src := <-built:
		if src.(*handovers).deleted != nil {
			t.Error("a blocking KeyFunc of the user's was taken for one with a record of deletions")
		}
	case <-time.After(3 * probeWait):
		t.Fatalf("Handovers did not return in %v: its probe waits for a KeyFunc that ignores its cancelled context", 3*probeWait)
	}
	if said := logs.matching("did not return"); len(said) != 1 {
		t.Errorf("logged %q about the probe of a blocking KeyFunc, want one line", said)
	}
}

// slowInformerReader is a cache whose GetInformer takes a while, as a
// manager's does when it needs the API server's discovery for the kind.
type slowInformerReader struct {
	*informerReader
	delay time.Duration
}

func (r *slowInformerReader) GetInformer(ctx context.Context, obj client.Object, opts ...crcache.InformerGetOption) (crcache.Informer, error) {
	time.Sleep(r.delay)
	return r.informerReader.GetInformer(ctx, obj, opts...)
}

// The probe's bound is not ObjectKey's: with KeyNamespace, ObjectKey adds
// its handler when Handovers probes it, which can take longer than the
// bound, and Handovers still finds its record.
func TestHandoversProbeFindsASlowObjectKey(t *testing.T) {
	var logs logLines
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithKey(KeyNamespace), WithLogger(logs.logger()), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	reader := &slowInformerReader{informerReader: newInformerReader(), delay: 2 * probeWait}
	key := newObjectKey(m, reader, &corev1.ConfigMap{})
	if h := Handovers(m, reader, &corev1.ConfigMapList{}, key.key).(*handovers); h.deleted != key.deleted {
		t.Fatal("Handovers did not find the record of an ObjectKey that takes longer than the probe's bound to add its handler")
	}
	if said := logs.matching("did not return"); len(said) != 0 {
		t.Errorf("logged %q", said)
	}
	waitFor(t, "ObjectKey's handler added", 10*time.Second, func() bool {
		key.mu.Lock()
		defer key.mu.Unlock()
		return key.informers == nil
	})
}

// TestHandoversReplaysOnlyDeletionsTheControllerGot: ObjectKey records
// every deletion its cache sees, through a handler of its own, while the
// controller's predicates may filter the deletion out (a controller that
// cleans up with finalizers and ignores deletes, or one that watches some
// labels only). Handovers must not hand the controller, after a hand-over,
// a deletion it never wanted: it replays those whose request reached the
// Reconciler (dropped there as another replica's), as it does for one
// that got through.
func TestHandoversReplaysOnlyDeletionsTheControllerGot(t *testing.T) {
	m, clk, half := halfMember(t)
	uids := uidsOutside(half, 2)
	wanted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wanted", UID: types.UID(uids[0])}}
	filtered := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "filtered", UID: types.UID(uids[1])}}
	reader := newInformerReader(wanted.DeepCopy(), filtered.DeepCopy())
	key := ObjectKey(m, reader, &corev1.ConfigMap{})
	var reconciled []string
	r := Reconciler(m, key, reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		reconciled = append(reconciled, req.Name)
		return reconcile.Result{}, nil
	}))
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	src := Handovers(m, reader, &corev1.ConfigMapList{}, key).(*handovers)

	// Both are deleted in another member's range; the controller's
	// predicate lets only wanted's deletion through, which is dropped.
	reader.remove(t, wanted, false)
	reader.remove(t, filtered, false)
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wanted)}); err != nil || len(reconciled) != 0 {
		t.Fatalf("another replica's deletion: %v, reconciled %v", err, reconciled)
	}
	// That member dies; this one takes its range over.
	takeOverAll(m, clk)
	if _, _, err := src.enqueue(context.Background(), q, FullRange().Minus(half)); err != nil {
		t.Fatal(err)
	}
	reconcileQueued(t, q, r)
	if len(reconciled) != 1 || reconciled[0] != "wanted" {
		t.Fatalf("after the hand-over the controller reconciled %v, want [wanted]: a deletion its predicate filtered out was replayed", reconciled)
	}
}

// TestHandoversWithAKeyOfAnotherKind: a KeyFunc of the user's may place a
// controller's requests by another kind's ObjectKey (ConfigMaps placed by
// the UID of the Secret of the same name). Handovers then finds the
// Secrets' record behind it: it must replay only the Secret deletions
// whose name the ConfigMap controller was asked to reconcile (it watches
// those Secrets), not every Secret deletion as a request for a ConfigMap
// that never existed.
func TestHandoversWithAKeyOfAnotherKind(t *testing.T) {
	m, clk, half := halfMember(t)
	uids := uidsOutside(half, 2)
	paired := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "paired", UID: types.UID(uids[0])}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", UID: types.UID(uids[1])}}
	secrets := newInformerReader(paired.DeepCopy(), other.DeepCopy())
	secretKey := ObjectKey(m, secrets, &corev1.Secret{})
	bySecret := func(ctx context.Context, req reconcile.Request) (string, bool, error) { return secretKey(ctx, req) }
	configMaps := newInformerReader()
	var reconciled []string
	r := Reconciler(m, bySecret, reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		reconciled = append(reconciled, req.Name)
		return reconcile.Result{}, nil
	}))
	src := Handovers(m, configMaps, &corev1.ConfigMapList{}, bySecret).(*handovers)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()

	secrets.remove(t, paired, false)
	secrets.remove(t, other, false)
	// The controller watches the Secret "paired" (mapped to the ConfigMap
	// of its name): its deletion's request is another replica's.
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(paired)}); err != nil || len(reconciled) != 0 {
		t.Fatalf("another replica's request: %v, reconciled %v", err, reconciled)
	}
	takeOverAll(m, clk)
	if _, _, err := src.enqueue(context.Background(), q, FullRange().Minus(half)); err != nil {
		t.Fatal(err)
	}
	reconcileQueued(t, q, r)
	if len(reconciled) != 1 || reconciled[0] != "paired" {
		t.Fatalf("after the hand-over the ConfigMap controller reconciled %v, want [paired]: a Secret's deletion it was never asked about reached it as a ConfigMap's", reconciled)
	}
}

// TestHandoversNeedsItsReconcilersKey: each ObjectKey keeps its own
// record, settled by the Reconciler it is given. A user who builds
// ObjectKey twice, once for the Reconciler and once for Handovers, gets a
// Handovers whose record no Reconciler ever reaches: it replays none of the
// deletions its controller dropped (nor, as it would otherwise, deletions
// its controller already reconciled). The same value replays them.
func TestHandoversNeedsItsReconcilersKey(t *testing.T) {
	for _, tc := range []struct {
		what string
		same bool
		want int
	}{{"the Reconciler's key", true, 1}, {"a second ObjectKey", false, 0}} {
		t.Run(tc.what, func(t *testing.T) {
			m, clk, half := halfMember(t)
			uid := uidsOutside(half, 1)[0]
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: types.UID(uid)}}
			reader := newInformerReader(cm.DeepCopy())
			key := ObjectKey(m, reader, &corev1.ConfigMap{})
			handoverKey := key
			if !tc.same {
				handoverKey = ObjectKey(m, reader, &corev1.ConfigMap{})
			}
			r := Reconciler(m, key, reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }))
			src := Handovers(m, reader, &corev1.ConfigMapList{}, handoverKey).(*handovers)
			reader.remove(t, cm, false)
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cm)}); err != nil {
				t.Fatal(err)
			}
			takeOverAll(m, clk)
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			if _, deletions, err := src.enqueue(context.Background(), q, FullRange().Minus(half)); err != nil || deletions != tc.want {
				t.Fatalf("Handovers with %s replayed %d deletions (%v), want %d", tc.what, deletions, err, tc.want)
			}
		})
	}
}
