package shard_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	lwfake "github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

// Assign is deterministic: every replica that sees the same members
// computes the same split, and a member that leaves frees about its own
// share only.
func ExampleAssign() {
	three := shard.Assign([]string{"ctl-a", "ctl-b", "ctl-c"}, shard.DefaultBuckets)
	two := shard.Assign([]string{"ctl-a", "ctl-b"}, shard.DefaultBuckets)
	for _, m := range []string{"ctl-a", "ctl-b", "ctl-c"} {
		fmt.Printf("%s: %.3f of the space\n", m, three[m].Fraction())
	}
	kept := three["ctl-a"].Intersect(two["ctl-a"]).Union(three["ctl-b"].Intersect(two["ctl-b"]))
	fmt.Printf("ctl-c leaves: %.3f of the space changes owner\n", 1-kept.Fraction())
	// Output:
	// ctl-a: 0.332 of the space
	// ctl-b: 0.336 of the space
	// ctl-c: 0.332 of the space
	// ctl-c leaves: 0.344 of the space changes owner
}

// A member serves its share of the hash space while it runs; work on an
// object is bracketed with Begin so that the object is not handed over
// before the work ends. Here one member runs alone on a fake clientset; in
// a program the Lease client is a clientset's CoordinationV1().
func ExampleMember() {
	m, err := shard.New(fake.NewClientset().CoordinationV1(), "default", "my-controller",
		shard.WithIdentity("replica-0"), shard.WithLogger(logr.Discard()))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- m.Start(ctx) }()

	for served, changed := m.Watch(); !served.Equal(shard.FullRange()); served, changed = m.Watch() {
		<-changed
	}
	fmt.Println("alone, the member serves everything:", m.Serving().Fraction())

	uid := "5c7a1e9e-0a4b-4c1e-9b3e-3f2a1d0c9b8a"
	if workCtx, done, ok := m.Begin(ctx, shard.Hash(uid)); ok {
		_ = workCtx // reconcile the object with workCtx
		done()
	}

	cancel() // a clean stop: serve nothing, publish that, delete the Lease
	fmt.Println("stopped:", <-stopped)
	// Output:
	// alone, the member serves everything: 1
	// stopped: <nil>
}

// Reconciler wraps a controller's reconciler so that each replica
// reconciles only the objects its member serves. Here two replicas run,
// each with a cache that holds the same three ConfigMaps (a kind every
// replica holds whole), and each ConfigMap is reconciled by one replica.
// In a program the wrapped reconciler goes to the controller builder:
//
//	Complete(shard.Reconciler(member, shard.ObjectKey(member, mgr.GetCache(), &corev1.ConfigMap{}), r))
func ExampleReconciler() {
	replicas, stop := startReplicas([]string{"replica-0", "replica-1"}) // members of my-controller
	defer stop()

	configMaps := []client.Object{
		configMap("app-config", "e88e1bee-5e30-4686-9601-db3e9edf2427"),
		configMap("db-config", "1b4c22ac-a6e8-4f61-a87d-ed16aa9f3666"),
		configMap("web-config", "241f11cc-d575-408b-8ccb-18fb9cb75c6b"),
	}
	for _, member := range replicas {
		cache := crfake.NewClientBuilder().WithObjects(configMaps...).Build() // the replica's mgr.GetCache()
		r := shard.Reconciler(member, shard.ObjectKey(member, cache, &corev1.ConfigMap{}),
			reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				fmt.Println(member.LeaseName(), "reconciles", req.Name)
				return reconcile.Result{}, nil
			}))
		for _, cm := range configMaps { // the requests of the replica's controller
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cm)}
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				fmt.Println(err)
			}
		}
	}
	// Output:
	// my-controller-replica-0 reconciles db-config
	// my-controller-replica-0 reconciles web-config
	// my-controller-replica-1 reconciles app-config
}

// ObjectKey places a request by the UID of its object, read from the
// replica's cache. The request of a deletion finds nothing there: ObjectKey
// then answers the UID the object had, which a handler it added to the
// cache's informer recorded, so the replica whose range held the object
// reconciles its deletion and the other replica drops it.
func ExampleObjectKey() {
	replicas, stop := startReplicas([]string{"replica-0", "replica-1"})
	defer stop()

	cm := configMap("app-config", "e88e1bee-5e30-4686-9601-db3e9edf2427")
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "app-config"}}
	for _, member := range replicas {
		cache := newReplicaCache(cm) // the replica's mgr.GetCache()
		key := shard.ObjectKey(member, cache, &corev1.ConfigMap{})
		r := shard.Reconciler(member, key, reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			err := cache.Get(ctx, req.NamespacedName, &corev1.ConfigMap{})
			if apierrors.IsNotFound(err) {
				fmt.Println(member.LeaseName(), "cleans up after", req.Name)
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, err
		}))

		uid, found, err := key(context.Background(), req)
		fmt.Println(member.LeaseName()+":", req.Name, "has UID", uid, found, err)
		cache.delete(cm) // the informer hands over the deletion, then the controller its request
		uid, found, err = key(context.Background(), req)
		fmt.Println(member.LeaseName()+":", req.Name, "deleted, had UID", uid, found, err)
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// my-controller-replica-0: app-config has UID e88e1bee-5e30-4686-9601-db3e9edf2427 true <nil>
	// my-controller-replica-0: app-config deleted, had UID e88e1bee-5e30-4686-9601-db3e9edf2427 true <nil>
	// my-controller-replica-1: app-config has UID e88e1bee-5e30-4686-9601-db3e9edf2427 true <nil>
	// my-controller-replica-1: app-config deleted, had UID e88e1bee-5e30-4686-9601-db3e9edf2427 true <nil>
	// my-controller-replica-1 cleans up after app-config
}

// With KeyNamespace, a namespace's objects all go to one replica: a
// controller that reads several objects of a namespace together places its
// requests by their namespace, known without a read (RequestNamespace).
// Every member of the group has the same key.
func ExampleRequestNamespace() {
	replicas, stop := startReplicas([]string{"replica-0", "replica-1"}, shard.WithKey(shard.KeyNamespace))
	defer stop()

	requests := []types.NamespacedName{
		{Namespace: "payments", Name: "ledger"},
		{Namespace: "payments", Name: "refunds"},
		{Namespace: "shipping", Name: "labels"},
		{Namespace: "billing", Name: "invoices"},
	}
	for _, member := range replicas {
		r := shard.Reconciler(member, shard.RequestNamespace,
			reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				fmt.Println(member.LeaseName(), "reconciles", req.Namespace+"/"+req.Name)
				return reconcile.Result{}, nil
			}))
		for _, name := range requests {
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: name}); err != nil {
				fmt.Println(err)
			}
		}
	}
	// Output:
	// my-controller-replica-0 reconciles payments/ledger
	// my-controller-replica-0 reconciles payments/refunds
	// my-controller-replica-1 reconciles shipping/labels
	// my-controller-replica-1 reconciles billing/invoices
}

// A sharded cache of your own (informer.WithShard's informers do this
// themselves) registers with the member, and says which range it holds each
// time it has listed one: Reconciler retries a request until every
// registered cache holds its hash, so that a reconciler never reads a cache
// that is still listing a range just taken over.
func ExampleMember_TrackCache() {
	replicas, stop := startReplicas([]string{"replica-0"})
	defer stop()
	member := replicas[0]
	cache := member.TrackCache()
	defer cache.Close() // when the cache stops

	reader := crfake.NewClientBuilder().WithObjects(configMap("app-config", "e88e1bee-5e30-4686-9601-db3e9edf2427")).Build()
	r := shard.Reconciler(member, shard.ObjectKey(member, reader, &corev1.ConfigMap{}),
		reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			fmt.Println("reconciles", req.Name)
			return reconcile.Result{}, nil
		}))
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "app-config"}}

	res, _ := r.Reconcile(context.Background(), req)
	fmt.Println("while the cache lists: retry after", res.RequeueAfter)
	cache.Set(member.Serving()) // the cache has listed the member's range
	res, _ = r.Reconcile(context.Background(), req)
	fmt.Println("once it holds the range: retry after", res.RequeueAfter)
	// Output:
	// while the cache lists: retry after 200ms
	// reconciles app-config
	// once it holds the range: retry after 0s
}

// Handovers is the source a controller whose primary kind is not sharded
// adds next to it: each time the member starts serving hashes it did not
// serve, Handovers enqueues the objects of the cache whose key falls in
// them. Here a lone member's first claim (everything) enqueues every
// ConfigMap; a controller starts the source itself, given in a program as
//
//	WatchesRawSource(shard.Handovers(member, mgr.GetCache(), &corev1.ConfigMapList{}, key))
func ExampleHandovers() {
	member := newMember("replica-0")
	cache := crfake.NewClientBuilder().WithObjects( // the manager's cache
		configMap("app-config", "e88e1bee-5e30-4686-9601-db3e9edf2427"),
		configMap("db-config", "1b4c22ac-a6e8-4f61-a87d-ed16aa9f3666"),
	).Build()
	key := shard.ObjectKey(member, cache, &corev1.ConfigMap{})
	src := shard.Handovers(member, cache, &corev1.ConfigMapList{}, key)

	ctx, cancel := context.WithCancel(context.Background())
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	if err := src.Start(ctx, queue); err != nil { // what the controller does as it starts
		fmt.Println(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- member.Start(ctx) }()

	var enqueued []string
	for range 2 {
		req, _ := queue.Get()
		enqueued = append(enqueued, req.Name)
		queue.Done(req)
	}
	slices.Sort(enqueued) // the cache lists in no particular order
	fmt.Println("enqueued:", enqueued)

	cancel()
	queue.ShutDown()
	fmt.Println("member stopped:", <-stopped)
	// Output:
	// enqueued: [app-config db-config]
	// member stopped: <nil>
}

// NewListerWatcher restricts a ListerWatcher to a range of the hash space:
// its LISTs and WATCHes carry the range's shard selector, and it drops
// what the server sends outside the range. informer.WithShard builds one
// and keeps its range the member's; this is for a list/watch pipeline of
// your own. The in-memory API server here ignores shard selectors, as an
// API server without the ShardedListAndWatch gate does, so the objects
// outside the range are dropped on the client.
func ExampleNewListerWatcher() {
	server := lwfake.NewServer(&corev1.ConfigMapList{})
	defer server.Close()
	for _, cm := range []*corev1.ConfigMap{
		configMap("app-config", "e88e1bee-5e30-4686-9601-db3e9edf2427"),
		configMap("db-config", "1b4c22ac-a6e8-4f61-a87d-ed16aa9f3666"),
		configMap("web-config", "241f11cc-d575-408b-8ccb-18fb9cb75c6b"),
		configMap("cache-config", "4d827a8b-9326-4cbc-9193-a0a6a0fb6030"),
	} {
		if _, err := server.Create(cm); err != nil {
			fmt.Println(err)
		}
	}
	member := newMember("replica-0") // the ListerWatcher takes its key (the UID) only
	lw := shard.NewListerWatcher(server.ListerWatcher(), member, func(f shard.Filtering, reason string) {
		fmt.Println("filtered on the", f)
	})

	lw.SetRange(shard.NewRange(0, 1<<63)) // the lower half of the hash space
	list, err := lw.List(metav1.ListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, cm := range list.(*corev1.ConfigMapList).Items {
		fmt.Printf("listed %s (hash %#016x)\n", cm.Name, shard.Hash(string(cm.UID)))
	}
	fmt.Println("selector sent:", server.Requests()[0].Options.ShardSelector)
	// Output:
	// filtered on the client
	// listed cache-config (hash 0x1e2555cf2fe9e483)
	// listed db-config (hash 0x582229fcf26e3e9e)
	// selector sent: shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
}

// A Range is a set of hashes. Its String is what a member publishes in its
// Lease, and its Selector what a sharded informer sends to the API server.
func ExampleRange() {
	r := shard.NewRange(0, 1<<62).Union(shard.NewRange(3<<62, 0)) // end 0: the top of the space
	fmt.Println(r.Fraction(), "of the space in", r.Terms(), "terms")
	fmt.Println(r)
	fmt.Println(r.Selector(shard.KeyUID))

	parsed, err := shard.ParseRange(r.String())
	fmt.Println("parsed back:", parsed.Equal(r), err)
	h := shard.Hash("e88e1bee-5e30-4686-9601-db3e9edf2427")
	fmt.Printf("%#016x in it: %v\n", h, r.Contains(h))
	// Output:
	// 0.5 of the space in 2 terms
	// 0x0000000000000000-0x4000000000000000,0xc000000000000000-0x10000000000000000
	// shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')
	// parsed back: true <nil>
	// 0xd6799f92953ca6ba in it: true
}

// A Key says which field of an object places it: its UID (the default)
// spreads every object on its own, its namespace keeps a namespace's
// objects on one replica.
func ExampleKey_HashOf() {
	a := configMap("app-config", "e88e1bee-5e30-4686-9601-db3e9edf2427")
	b := configMap("db-config", "1b4c22ac-a6e8-4f61-a87d-ed16aa9f3666")
	for _, key := range []shard.Key{shard.KeyUID, shard.KeyNamespace} {
		ha, _ := key.HashOf(a)
		hb, _ := key.HashOf(b)
		fmt.Printf("%s: %#016x %#016x\n", key, ha, hb)
	}
	// Output:
	// object.metadata.uid: 0xd6799f92953ca6ba 0x582229fcf26e3e9e
	// object.metadata.namespace: 0xebada5168620c5fe 0xebada5168620c5fe
}

// configMap is a ConfigMap of the default namespace.
func configMap(name, uid string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)}}
}

// newMember returns a member of my-controller on a fake clientset of its
// own, not started.
func newMember(id string) *shard.Member {
	m, err := shard.New(fake.NewClientset().CoordinationV1(), "default", "my-controller",
		shard.WithIdentity(id), shard.WithLogger(logr.Discard()), shard.WithMetrics(nil))
	if err != nil {
		panic(err)
	}
	return m
}

// startReplicas runs a member of my-controller per identity, with opts,
// all on one
// fake clientset, until each serves what Assign gives it; stop stops them
// cleanly. They renew often, so that a lost claim race is retried soon,
// and keep the default lease duration and renew deadline, so that a
// loaded machine does not fence them.
func startReplicas(ids []string, opts ...shard.Option) (members []*shard.Member, stop func()) {
	leases := fake.NewClientset().CoordinationV1()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, len(ids))
	var names []string
	for _, id := range ids {
		m, err := shard.New(leases, "default", "my-controller", append([]shard.Option{shard.WithIdentity(id),
			shard.WithLogger(logr.Discard()), shard.WithMetrics(nil), shard.WithRenewInterval(100 * time.Millisecond)}, opts...)...)
		if err != nil {
			panic(err)
		}
		go func() { stopped <- m.Start(ctx) }()
		members = append(members, m)
		names = append(names, m.LeaseName())
	}
	assigned := shard.Assign(names, shard.DefaultBuckets)
	timeout := time.After(time.Minute)
	for _, m := range members {
		for served, changed := m.Watch(); !served.Equal(assigned[m.LeaseName()]); served, changed = m.Watch() {
			select {
			case <-changed:
			case <-timeout:
				panic("the members did not settle on their assignment in a minute")
			}
		}
	}
	return members, func() {
		cancel()
		for range ids {
			if err := <-stopped; err != nil {
				fmt.Println("stopping a member:", err)
			}
		}
	}
}

// replicaCache stands for a replica's manager cache: a fake client's
// reads, and informers whose events the example sends by hand.
type replicaCache struct {
	client.Client
	informers *informertest.FakeInformers
}

func newReplicaCache(objs ...client.Object) *replicaCache {
	return &replicaCache{Client: crfake.NewClientBuilder().WithObjects(objs...).Build(), informers: &informertest.FakeInformers{}}
}

func (c *replicaCache) GetInformer(ctx context.Context, obj client.Object, opts ...crcache.InformerGetOption) (crcache.Informer, error) {
	return c.informers.GetInformer(ctx, obj, opts...)
}

// delete deletes obj from the cache and hands its informer's handlers the
// deletion.
func (c *replicaCache) delete(obj client.Object) {
	if err := c.Delete(context.Background(), obj); err != nil {
		panic(err)
	}
	inf, err := c.informers.FakeInformerFor(context.Background(), obj)
	if err != nil {
		panic(err)
	}
	inf.Delete(obj)
}
