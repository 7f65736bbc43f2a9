package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/leaninformer/leaninformer/internal/memstat"
	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

// childFlag makes the program a replica: one controller-runtime manager
// that reconciles the bench's ConfigMaps, sharded or not, and reports its
// state on stdout, a JSON line at a time.
const childFlag = "--replica"

// impl is what a replica runs.
const (
	implClientGo  = "client-go" // controller-runtime's default cache
	implOurs      = "ours"      // informer.NewCache, unsharded
	implOursShard = "sharded"   // informer.NewCacheWith(informer.WithShard(member))
)

type childOptions struct {
	kubeconfig, impl, group, identity, leaseNamespace string
	objects, concurrency, qps, burst, verbosity       int
	work, leaseDuration, renewDeadline, renewInterval time.Duration
}

// status is a replica's report, printed every statusInterval and when asked.
type status struct {
	Identity string `json:"identity"`
	// Since the replica started (before its manager was built).
	Seconds  float64 `json:"seconds"`
	Synced   bool    `json:"synced"`
	SyncedAt float64 `json:"syncedAt"` // seconds after the start, 0 until synced
	// HeldAt: seconds after the start when the store first held the
	// replica's share (sharded: a sharded cache syncs the empty range
	// first, before its member has claimed; unsharded: SyncedAt).
	HeldAt     float64 `json:"heldAt"`
	Serving    string  `json:"serving"` // the member's range (sharded)
	Stored     string  `json:"stored"`  // the range the informer's store holds (sharded)
	Pending    bool    `json:"pending"`
	Filtering  string  `json:"filtering"`
	Objects    int     `json:"objects"`    // in the informer's store
	Reconciled int     `json:"reconciled"` // distinct objects reconciled since the start
	// StoredDone is how many objects of the store have been reconciled.
	StoredDone int `json:"storedDone"`
	// StoreHeap is the heap after GC minus the heap before the manager was
	// built; set when the parent asked for a measurement.
	StoreHeap int64 `json:"storeHeap,omitempty"`
}

const statusInterval = 100 * time.Millisecond

func childMain(args []string) int {
	var o childOptions
	fs := flag.NewFlagSet("replica", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "")
	fs.StringVar(&o.impl, "impl", implOursShard, "")
	fs.StringVar(&o.group, "group", "", "")
	fs.StringVar(&o.identity, "identity", "", "")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", "", "")
	fs.IntVar(&o.objects, "objects", 0, "")
	fs.IntVar(&o.concurrency, "concurrency", 4, "")
	fs.IntVar(&o.qps, "qps", 5, "")
	fs.IntVar(&o.burst, "burst", 10, "")
	fs.DurationVar(&o.work, "work", 2*time.Millisecond, "")
	fs.DurationVar(&o.leaseDuration, "lease-duration", shard.DefaultLeaseDuration, "")
	fs.DurationVar(&o.renewDeadline, "renew-deadline", shard.DefaultRenewDeadline, "")
	fs.DurationVar(&o.renewInterval, "renew-interval", shard.DefaultRenewInterval, "")
	fs.IntVar(&o.verbosity, "v", 0, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.verbosity > 0 {
		var klogFlags flag.FlagSet
		klog.InitFlags(&klogFlags)
		if err := klogFlags.Set("v", strconv.Itoa(o.verbosity)); err != nil {
			fmt.Fprintf(os.Stderr, "replica %s: --v: %v\n", o.identity, err)
			return 2
		}
	}
	ctrl.SetLogger(klog.NewKlogr())
	if err := runReplica(o); err != nil {
		fmt.Fprintf(os.Stderr, "replica %s: %v\n", o.identity, err)
		return 1
	}
	return 0
}

func runReplica(o childOptions) error {
	start := time.Now()
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	// The client-side rate limit the parent was given (--qps/--burst;
	// client-go's defaults unless told otherwise).
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	base := memstat.HeapAfterGC()

	opts := ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			// Only the bench's objects, not the API server's own ConfigMaps.
			ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{"app": "shardbench"})}},
		},
	}
	var member *shard.Member
	switch o.impl {
	case implClientGo:
	case implOurs:
		opts.NewCache = informer.NewCache
	case implOursShard:
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		member, err = shard.New(cs.CoordinationV1(), o.leaseNamespace, o.group, shard.WithIdentity(o.identity),
			shard.WithLeaseDuration(o.leaseDuration), shard.WithRenewDeadline(o.renewDeadline), shard.WithRenewInterval(o.renewInterval))
		if err != nil {
			return err
		}
		opts.NewCache = informer.NewCacheWith(informer.WithShard(member))
	default:
		return fmt.Errorf("unknown --impl %q", o.impl)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	rec := &benchReconciler{client: mgr.GetClient(), work: o.work, done: make([]atomic.Bool, o.objects)}
	var r reconcile.Reconciler = rec
	if member != nil {
		if err := mgr.Add(member); err != nil {
			return err
		}
		r = shard.Reconciler(member, shard.ObjectKey(member, mgr.GetCache(), &corev1.ConfigMap{}), r)
	}
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.concurrency}).Complete(r)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(ctx) }()
	rep := &reporter{o: o, start: start, base: base, mgr: mgr, member: member, rec: rec}
	go rep.syncWatch(ctx)

	// Commands on stdin: "measure" (heap after GC), "stop" (clean stop).
	commands := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			commands <- strings.TrimSpace(sc.Text())
		}
		close(commands)
	}()
	tick := time.NewTicker(statusInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			rep.print(false)
		case cmd, ok := <-commands:
			switch {
			case !ok || cmd == "stop":
				cancel()
				return <-mgrDone
			case cmd == "measure":
				rep.print(true)
			}
		case err := <-mgrDone:
			return fmt.Errorf("the manager stopped: %w", err)
		}
	}
}

// benchReconciler reads the object from the cache, waits for its work
// (standing for the requests a real reconcile makes), and marks it done.
type benchReconciler struct {
	client client.Client
	work   time.Duration
	done   []atomic.Bool
	count  atomic.Int64
}

func (b *benchReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := b.client.Get(ctx, req.NamespacedName, cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	time.Sleep(b.work)
	if i, ok := objectIndex(cm.Name); ok && i < len(b.done) && !b.done[i].Swap(true) {
		b.count.Add(1)
	}
	return reconcile.Result{}, nil
}

// objectIndex is the index in a bench object's name, cm-0001234.
func objectIndex(name string) (int, bool) {
	i, err := strconv.Atoi(strings.TrimPrefix(name, "cm-"))
	return i, err == nil
}

// reporter prints the replica's status.
type reporter struct {
	o      childOptions
	start  time.Time
	base   uint64
	mgr    manager.Manager
	member *shard.Member
	rec    *benchReconciler

	mu       sync.Mutex
	syncedAt time.Duration
	heldAt   time.Duration // 0 until the store held the share
	inf      *informer.SharedIndexInformer
	store    interface{ ListKeys() []string }
}

// syncWatch waits for the ConfigMap cache to sync and records when.
func (r *reporter) syncWatch(ctx context.Context) {
	inf, err := r.mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return
	}
	if !r.mgr.GetCache().WaitForCacheSync(ctx) {
		return
	}
	withStore, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.syncedAt = time.Since(r.start)
	r.store = withStore.GetStore()
	r.inf, _ = inf.(*informer.SharedIndexInformer)
}

func (r *reporter) print(measure bool) {
	r.mu.Lock()
	st := status{Identity: r.o.identity, Seconds: time.Since(r.start).Seconds(), Reconciled: int(r.rec.count.Load())}
	if r.store != nil {
		keys := r.store.ListKeys()
		st.Synced, st.SyncedAt, st.Objects = true, r.syncedAt.Seconds(), len(keys)
		for _, k := range keys {
			_, name, _ := strings.Cut(k, "/")
			if i, ok := objectIndex(name); ok && i < len(r.rec.done) && r.rec.done[i].Load() {
				st.StoredDone++
			}
		}
	}
	if r.member != nil {
		st.Serving = r.member.Serving().String()
	}
	if r.inf != nil {
		sh := r.inf.SyncStatus().Shard
		st.Stored, st.Pending, st.Filtering = sh.Stored.String(), sh.Pending, string(sh.Filtering)
	}
	if r.heldAt == 0 && st.Synced && (r.member == nil || (!st.Pending && st.Stored == st.Serving && r.member.Serving().Fraction() > 0)) {
		r.heldAt = time.Since(r.start)
		if r.member == nil {
			r.heldAt = r.syncedAt
		}
	}
	st.HeldAt = r.heldAt.Seconds()
	r.mu.Unlock()
	if measure {
		st.StoreHeap = int64(memstat.HeapAfterGC()) - int64(r.base)
	}
	line, _ := json.Marshal(st)
	fmt.Println(string(line))
}
