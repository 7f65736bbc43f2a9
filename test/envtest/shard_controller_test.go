package envtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

// The test: a controller-runtime controller run as sharded
// replicas (each a manager on informer.NewCacheWith(informer.WithShard(m))
// with shard.Reconciler), a few thousand objects and a writer changing
// them, once with server-side filtering and once with client-side. Every
// reconcile's start and end is recorded with its replica: no two of one
// object may overlap, and every object's last write must be reconciled.

const (
	ctlLease    = 3 * time.Second
	ctlDeadline = 2 * time.Second
	ctlRenew    = 300 * time.Millisecond
	ctlObjects  = 3000
)

// reconcileLog records every reconcile by every replica.
type reconcileLog struct {
	mu    sync.Mutex
	spans map[string][]workSpan // by object UID
	seen  map[string]string     // UID -> the last resourceVersion a reconcile read
}

func (l *reconcileLog) record(uid, rv string, s workSpan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans[uid] = append(l.spans[uid], s)
	l.seen[uid] = rv
}

func (l *reconcileLog) overlaps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for uid, spans := range l.spans {
		sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
		for i := 1; i < len(spans); i++ {
			for j := range i {
				if a, b := spans[j], spans[i]; a.replica != b.replica && a.end.After(b.start) {
					out = append(out, fmt.Sprintf("%s: %s %v-%v and %s %v-%v", uid, a.replica, a.start, a.end, b.replica, b.start, b.end))
				}
			}
		}
	}
	return out
}

func (l *reconcileLog) lastSeen(uid string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[uid]
}

func (l *reconcileLog) byReplica() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, spans := range l.spans {
		for _, s := range spans {
			out[s.replica]++
		}
	}
	return out
}

// shardReplica is one replica: its member and its manager, both behind a
// fault proxy of their own.
type shardReplica struct {
	id     string
	proxy  *faultproxy.Proxy
	member *shard.Member
	mgr    ctrl.Manager
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

func (r *shardReplica) stop() error {
	r.once.Do(func() {
		r.cancel()
		select {
		case r.err = <-r.done:
		case <-time.After(time.Minute):
			r.err = fmt.Errorf("replica %s did not stop within a minute", r.id)
		}
	})
	return r.err
}

// informerStatus is the replica's ConfigMap informer's SyncStatus.
func (r *shardReplica) informerStatus(ctx context.Context) informer.SyncStatus {
	GinkgoHelper()
	inf, err := r.mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	Expect(err).NotTo(HaveOccurred())
	return inf.(*informer.SharedIndexInformer).SyncStatus()
}

// shardedController is a group of replicas of one controller.
type shardedController struct {
	cfg      *rest.Config
	client   *kubernetes.Clientset
	ns       string
	log      *reconcileLog
	replicas map[string]*shardReplica
}

func (c *shardedController) start(id string) {
	GinkgoHelper()
	proxy, err := faultproxy.New(c.cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(proxy.Close)
	pcfg := proxy.ClientConfig()
	pcfg.QPS, pcfg.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(pcfg)
	Expect(err).NotTo(HaveOccurred())
	member, err := shard.New(cs.CoordinationV1(), c.ns, "ctl", shard.WithIdentity(id), shard.WithLeaseDuration(ctlLease),
		shard.WithRenewDeadline(ctlDeadline), shard.WithRenewInterval(ctlRenew), shard.WithStopTimeout(10*time.Second),
		shard.WithLogger(klog.Background().WithName(id).V(2)), shard.WithMetrics(nil))
	Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(pcfg, ctrl.Options{
		NewCache: informer.NewCacheWith(informer.WithShard(member), informer.WithMetrics(nil)),
		// This spec's ConfigMaps only, in one informer (a namespace
		// restriction would give one informer per namespace).
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Field: fields.OneTermEqualSelector("metadata.namespace", c.ns)},
		}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
		Logger:                 klog.Background().WithName(id).V(4),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(mgr.Add(member)).To(Succeed())
	inner := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		start := time.Now()
		cm := &corev1.ConfigMap{}
		if err := mgr.GetClient().Get(ctx, req.NamespacedName, cm); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		time.Sleep(time.Millisecond) // the reconcile's work
		c.log.record(string(cm.UID), cm.ResourceVersion, workSpan{replica: id, start: start, end: time.Now()})
		return reconcile.Result{}, nil
	})
	err = ctrl.NewControllerManagedBy(mgr).Named("ctl-" + id).For(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(shard.Reconciler(member, shard.ObjectKey(member, mgr.GetCache(), &corev1.ConfigMap{}), inner))
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	r := &shardReplica{id: id, proxy: proxy, member: member, mgr: mgr, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	c.replicas[id] = r
	DeferCleanup(func() error { return r.stop() })
}

func ptrTo[T any](v T) *T { return &v }

// allReconciled checks that every object's current version has been read
// by a reconcile.
func (c *shardedController) allReconciled(ctx context.Context, g Gomega) {
	list, err := c.client.CoreV1().ConfigMaps(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=shard-ctl"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list.Items).To(HaveLen(ctlObjects))
	behind := 0
	for _, cm := range list.Items {
		if c.log.lastSeen(string(cm.UID)) != cm.ResourceVersion {
			behind++
		}
	}
	g.Expect(behind).To(BeZero(), "objects whose last write no reconcile has read")
}

// settled checks that the running replicas serve exactly their shares and
// that their informers hold them.
func (c *shardedController) settled(ctx context.Context, g Gomega) {
	var names []string
	for _, r := range c.replicas {
		names = append(names, r.member.LeaseName())
	}
	want := shard.Assign(names, shard.DefaultBuckets)
	for _, r := range c.replicas {
		g.Expect(r.member.Serving().String()).To(Equal(want[r.member.LeaseName()].String()), "replica %s serves", r.id)
		st := r.informerStatus(ctx)
		g.Expect(st.Shard.Pending).To(BeFalse(), "replica %s relists", r.id)
		g.Expect(st.Shard.Stored.String()).To(Equal(want[r.member.LeaseName()].String()), "replica %s stores", r.id)
	}
}

// writer changes random objects until stopped.
type writer struct {
	stop   context.CancelFunc
	done   chan struct{}
	writes atomic.Int64
}

func startWriter(c *shardedController) *writer {
	ctx, cancel := context.WithCancel(context.Background())
	w := &writer{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		rng := rand.New(rand.NewPCG(1, 2))
		for ctx.Err() == nil {
			name := fmt.Sprintf("cm-%05d", rng.IntN(ctlObjects))
			cm, err := c.client.CoreV1().ConfigMaps(c.ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				cm.Data = map[string]string{"gen": strconv.FormatInt(w.writes.Load(), 10)}
				if _, err = c.client.CoreV1().ConfigMaps(c.ns).Update(ctx, cm, metav1.UpdateOptions{}); err == nil {
					w.writes.Add(1)
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	DeferCleanup(func() { w.stop(); <-w.done })
	return w
}

func (w *writer) halt() { w.stop(); <-w.done }

var _ = Describe("a sharded controller-runtime controller", Label("shard"), func() {
	for _, tc := range []struct {
		filtering shard.Filtering
		plane     *controlPlane
	}{
		{shard.FilteringServer, gatedPlane},
		{shard.FilteringClient, ungatedPlane},
	} {
		It(fmt.Sprintf("reconciles every object, one replica at a time, with %s-side filtering, through stops, a join and an API server restart", tc.filtering), func(ctx context.Context) {
			tc.plane.start()
			created, err := tc.plane.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shard-ctl-"}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			c := &shardedController{cfg: tc.plane.cfg, client: tc.plane.clientset, ns: created.Name,
				log: &reconcileLog{spans: map[string][]workSpan{}, seen: map[string]string{}}, replicas: map[string]*shardReplica{}}
			DeferCleanup(func(ctx context.Context) { cleanupLeasesWith(ctx, c.client, c.ns) })
			By(fmt.Sprintf("creating %d ConfigMaps", ctlObjects))
			Expect(parallelCreate(ctx, c.client, c.ns, ctlObjects)).To(Succeed())

			By("starting three replicas and a writer")
			for _, id := range []string{"a", "b", "c"} {
				c.start(id)
			}
			w := startWriter(c)
			Eventually(func(g Gomega) { c.settled(ctx, g) }).WithTimeout(time.Minute).Should(Succeed())
			for _, r := range c.replicas {
				Expect(r.informerStatus(ctx).Shard.Filtering).To(Equal(tc.filtering), "replica %s", r.id)
			}
			checkpoint := func(what string) {
				GinkgoHelper()
				w.halt()
				Eventually(func(g Gomega) { c.allReconciled(ctx, g) }).WithTimeout(time.Minute).Should(Succeed(), what)
				Expect(c.log.overlaps()).To(BeEmpty(), what)
				w = startWriter(c)
			}
			checkpoint("three replicas")
			By("stopping replica c abruptly: its connection is cut, its Lease left to expire")
			victim := c.replicas["c"]
			lift := victim.proxy.BlackHole(faultproxy.Match{})
			cut := time.Now()
			delete(c.replicas, "c")
			Eventually(func(g Gomega) { c.settled(ctx, g) }).WithTimeout(ctlLease + 30*time.Second).Should(Succeed())
			AddReportEntry(fmt.Sprintf("%s-side: abrupt stop taken over (settled and synced) after", tc.filtering), time.Since(cut).Round(time.Millisecond).String())
			Expect(time.Since(cut)).To(BeNumerically("<", ctlLease+15*time.Second), "within the Lease duration plus a sync")
			checkpoint("after the abrupt stop")
			lift()
			Expect(victim.stop()).To(Succeed())

			By("stopping replica b cleanly: it releases at once")
			stopped := time.Now()
			Expect(c.replicas["b"].stop()).To(Succeed())
			delete(c.replicas, "b")
			Eventually(func(g Gomega) { c.settled(ctx, g) }).WithTimeout(30 * time.Second).Should(Succeed())
			AddReportEntry(fmt.Sprintf("%s-side: clean stop taken over after", tc.filtering), time.Since(stopped).Round(time.Millisecond).String())
			checkpoint("after the clean stop")

			By("two replicas joining")
			c.start("d")
			c.start("e")
			Eventually(func(g Gomega) { c.settled(ctx, g) }).WithTimeout(time.Minute).Should(Succeed())
			checkpoint("after the joins")

			By("restarting the API server while the writer writes")
			apiServer := tc.plane.env.ControlPlane.GetAPIServer()
			down := time.Now()
			Expect(apiServer.Stop()).To(Succeed())
			Expect(apiServer.Start()).To(Succeed())
			AddReportEntry(fmt.Sprintf("%s-side: API server stopped and started in", tc.filtering), time.Since(down).Round(time.Millisecond).String())
			Eventually(func(g Gomega) { c.settled(ctx, g) }).WithTimeout(2 * time.Minute).Should(Succeed())
			checkpoint("after the API server restart")
			w.halt()
			AddReportEntry(fmt.Sprintf("%s-side: reconciles by replica", tc.filtering), fmt.Sprint(c.log.byReplica()))
		})
	}
})

// parallelCreate creates n labelled ConfigMaps cm-00000... in ns.
func parallelCreate(ctx context.Context, cs *kubernetes.Clientset, ns string, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	work := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range work {
				_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Labels: map[string]string{"app": "shard-ctl"}},
					Data:       map[string]string{"payload": strings.Repeat("x", 256)},
				}, metav1.CreateOptions{})
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
