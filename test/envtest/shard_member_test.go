package envtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

// Short Leases keep these specs to seconds; the rules do not depend on the
// durations (pkg/shard's model test runs them at random).
const (
	memberLease    = 2 * time.Second
	memberDeadline = 1500 * time.Millisecond
	memberRenew    = 250 * time.Millisecond
)

// replica is one shard member, its client behind a fault proxy of its own,
// with a worker that keeps beginning short work on random hashes.
type replica struct {
	id     string
	member *shard.Member
	proxy  *faultproxy.Proxy
	cancel context.CancelFunc
	done   chan error
}

// workLog records every piece of work by every replica, by hash.
type workLog struct {
	mu    sync.Mutex
	spans map[uint64][]workSpan
}

type workSpan struct {
	replica    string
	start, end time.Time
}

func (l *workLog) add(h uint64, s workSpan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans[h] = append(l.spans[h], s)
}

// overlaps returns the pairs of spans of one hash by different replicas
// that overlap in time.
func (l *workLog) overlaps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for h, spans := range l.spans {
		sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
		for i := 1; i < len(spans); i++ {
			for j := range i {
				a, b := spans[j], spans[i]
				if a.replica != b.replica && a.end.After(b.start) {
					out = append(out, fmt.Sprintf("%016x: %s %v-%v and %s %v-%v", h, a.replica, a.start, a.end, b.replica, b.start, b.end))
				}
			}
		}
	}
	return out
}

func (l *workLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.spans {
		n += len(s)
	}
	return n
}

// memberGroup runs members of one sharded controller in namespace ns.
type memberGroup struct {
	name, ns string
	opts     []shard.Option
	hashes   []uint64
	log      *workLog
	replicas map[string]*replica
}

func newMemberGroup(ns, name string, opts ...shard.Option) *memberGroup {
	rng := rand.New(rand.NewPCG(uint64(len(ns)), 17))
	g := &memberGroup{name: name, ns: ns, opts: opts, log: &workLog{spans: map[uint64][]workSpan{}}, replicas: map[string]*replica{}}
	for range 256 {
		g.hashes = append(g.hashes, rng.Uint64())
	}
	return g
}

// start starts a member under identity id.
func (g *memberGroup) start(id string) {
	GinkgoHelper()
	proxy, err := faultproxy.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(proxy.Close)
	pcfg := proxy.ClientConfig()
	pcfg.QPS, pcfg.Burst = 1000, 2000
	client, err := kubernetes.NewForConfig(pcfg)
	Expect(err).NotTo(HaveOccurred())
	opts := append([]shard.Option{
		shard.WithIdentity(id), shard.WithLeaseDuration(memberLease), shard.WithRenewDeadline(memberDeadline),
		shard.WithRenewInterval(memberRenew), shard.WithStopTimeout(5 * time.Second),
		shard.WithLogger(klog.Background().WithName(id).V(2)), shard.WithMetrics(nil),
	}, g.opts...)
	m, err := shard.New(client.CoordinationV1(), g.ns, g.name, opts...)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{id: id, member: m, proxy: proxy, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- m.Start(ctx) }()
	go g.work(ctx, r)
	g.replicas[id] = r
	DeferCleanup(func() error { return g.stop(id) })
}

// work begins short pieces of work on random hashes until ctx is done.
func (g *memberGroup) work(ctx context.Context, r *replica) {
	rng := rand.New(rand.NewPCG(uint64(len(r.id)), uint64(time.Now().UnixNano())))
	for ctx.Err() == nil {
		h := g.hashes[rng.IntN(len(g.hashes))]
		_, done, ok := r.member.Begin(ctx, h)
		if !ok {
			time.Sleep(time.Millisecond)
			continue
		}
		start := time.Now()
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		g.log.add(h, workSpan{replica: r.id, start: start, end: time.Now()})
		done()
	}
}

// stop stops a member cleanly and returns what Start returned.
func (g *memberGroup) stop(id string) error {
	r, ok := g.replicas[id]
	if !ok {
		return nil
	}
	delete(g.replicas, id)
	r.cancel()
	select {
	case err := <-r.done:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("member %s did not stop within 30s", id)
	}
}

// leaseNames is the Lease names of the running members.
func (g *memberGroup) leaseNames() []string {
	var out []string
	for _, r := range g.replicas {
		out = append(out, r.member.LeaseName())
	}
	return out
}

// settled checks that every running member serves exactly its share of the
// assignment over the running members.
func (g *memberGroup) settled(gm Gomega) {
	want := shard.Assign(g.leaseNames(), shard.DefaultBuckets)
	var all shard.Range
	for _, r := range g.replicas {
		gm.Expect(r.member.Serving().String()).To(Equal(want[r.member.LeaseName()].String()), "member %s", r.id)
		all = all.Union(r.member.Serving())
	}
	gm.Expect(all.Equal(shard.FullRange())).To(BeTrue(), "all served: %s", all)
}

// cleanupLeases drops the finalizers of the group's Leases left behind and
// deletes them.
func cleanupLeases(ctx context.Context, ns string) { cleanupLeasesWith(ctx, clientset, ns) }

func cleanupLeasesWith(ctx context.Context, cs kubernetes.Interface, ns string) {
	leases, err := cs.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, l := range leases.Items {
		_, _ = cs.CoordinationV1().Leases(ns).Patch(ctx, l.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = cs.CoordinationV1().Leases(ns).Delete(ctx, l.Name, metav1.DeleteOptions{})
	}
}

var _ = Describe("shard members on Leases", Label("shard"), func() {
	var (
		ns string
		g  *memberGroup
	)
	BeforeEach(func(ctx context.Context) {
		ns = createNamespace(ctx, "members")
		g = newMemberGroup(ns, "ctl")
		DeferCleanup(cleanupLeases, ns)
	})
	AfterEach(func() {
		Expect(g.log.overlaps()).To(BeEmpty(), "two replicas worked on one hash at once")
	})

	It("split the hash space three ways and publish their ranges in their Leases", func(ctx context.Context) {
		for _, id := range []string{"a", "b", "c"} {
			g.start(id)
		}
		Eventually(g.settled).WithTimeout(20 * time.Second).Should(Succeed())
		leases, err := clientset.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{LabelSelector: shard.LabelController + "=ctl"})
		Expect(err).NotTo(HaveOccurred())
		Expect(leases.Items).To(HaveLen(3))
		for _, l := range leases.Items {
			r := g.replicas[l.Name[len("ctl-"):]]
			Expect(r).NotTo(BeNil(), "lease %s", l.Name)
			Expect(l.Annotations).To(HaveKeyWithValue(shard.AnnotationRange, r.member.Serving().String()))
			Expect(l.Annotations).To(HaveKeyWithValue(shard.AnnotationKey, string(shard.KeyUID)))
			Expect(l.Finalizers).To(ConsistOf(shard.Finalizer))
			Expect(*l.Spec.HolderIdentity).To(HavePrefix(r.id + "_"))
			Expect(*l.Spec.LeaseDurationSeconds).To(BeEquivalentTo(2))
		}
		Consistently(g.settled).WithTimeout(3 * memberRenew).Should(Succeed())
		Expect(g.log.count()).To(BeNumerically(">", 100), "the workers worked")
	})

	It("let a joining member take its share without overlap", func() {
		g.start("a")
		g.start("b")
		Eventually(g.settled).WithTimeout(20 * time.Second).Should(Succeed())
		before := g.log.count()
		g.start("c")
		start := time.Now()
		Eventually(g.settled).WithTimeout(20 * time.Second).Should(Succeed())
		AddReportEntry("join settled after", time.Since(start).Round(time.Millisecond).String())
		Expect(g.log.count()).To(BeNumerically(">", before), "the workers worked through the join")
	})

	It("release at once on a clean stop: the others take the range over", func(ctx context.Context) {
		for _, id := range []string{"a", "b", "c"} {
			g.start(id)
		}
		Eventually(g.settled).WithTimeout(20 * time.Second).Should(Succeed())
		start := time.Now()
		Expect(g.stop("b")).To(Succeed())
		_, err := clientset.CoordinationV1().Leases(ns).Get(ctx, "ctl-b", metav1.GetOptions{})
		Expect(err).To(MatchError(ContainSubstring("not found")), "a cleanly stopped member deletes its Lease")
		Eventually(g.settled).WithTimeout(memberLease).Should(Succeed(), "taken over before the Lease could have expired")
		AddReportEntry("clean stop taken over after", time.Since(start).Round(time.Millisecond).String())
	})

	It("take an abruptly stopped member's range over once its Lease expires", func(ctx context.Context) {
		for _, id := range []string{"a", "b", "c"} {
			g.start(id)
		}
		Eventually(g.settled).WithTimeout(20 * time.Second).Should(Succeed())
		victim := g.replicas["c"]
		lift := victim.proxy.BlackHole(faultproxy.Match{})
		killed := time.Now()
		delete(g.replicas, "c") // the others must settle without it
		Eventually(g.settled).WithTimeout(memberLease + 2*time.Second).Should(Succeed())
		pickup := time.Since(killed)
		AddReportEntry("abrupt stop taken over after", pickup.Round(time.Millisecond).String())

		lease, err := clientset.CoordinationV1().Leases(ns).Get(ctx, "ctl-c", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the dead member's Lease stays until it is collected")
		lastRenew := lease.Spec.RenewTime.Time
		Expect(killed.Add(pickup).Sub(lastRenew)).To(BeNumerically(">=", memberLease),
			"taken over %v after the victim's last renewal, before its Lease expired", killed.Add(pickup).Sub(lastRenew))
		Expect(victim.member.Serving().Empty()).To(BeTrue(), "the cut-off member fenced itself")

		By("the cut-off member, reconnected, stops cleanly")
		lift()
		g.replicas["c"] = victim
		Expect(g.stop("c")).To(Succeed())
	})
})

// With a fake clock, expiry is exact: the survivors take an abruptly
// stopped member's range over when their clocks pass its Lease duration
// after its last renewal, not a step before.
var _ = Describe("shard members on a fake clock", Label("shard"), func() {
	It("take an expired range over exactly when the Lease duration has passed", func(ctx context.Context) {
		ns := createNamespace(ctx, "members-clock")
		DeferCleanup(cleanupLeases, ns)
		clk := testingclock.NewFakeClock(time.Now())
		g := newMemberGroup(ns, "ctl", shard.WithClock(clk), shard.WithLogger(logr.Discard()))
		// Advance the clock 50 ms at a time, leaving the members time to act.
		const step = 50 * time.Millisecond
		stepClock := func(d time.Duration) {
			for end := clk.Now().Add(d); clk.Now().Before(end); {
				clk.Step(step)
				time.Sleep(10 * time.Millisecond)
			}
		}
		for _, id := range []string{"a", "b", "c"} {
			g.start(id)
		}
		Eventually(func(gm Gomega) { stepClock(step); g.settled(gm) }).WithTimeout(30 * time.Second).Should(Succeed())

		victim := g.replicas["c"]
		lift := victim.proxy.BlackHole(faultproxy.Match{})
		delete(g.replicas, "c")
		lease, err := clientset.CoordinationV1().Leases(ns).Get(ctx, "ctl-c", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		lastRenew := lease.Spec.RenewTime.Time // written from the fake clock

		var settledAt time.Time
		Eventually(func(gm Gomega) {
			stepClock(step)
			g.settled(gm)
			settledAt = clk.Now()
		}).WithTimeout(60 * time.Second).Should(Succeed())
		after := settledAt.Sub(lastRenew)
		AddReportEntry("fake clock: taken over after (clock time since the last renewal)", after.String())
		Expect(after).To(BeNumerically(">=", memberLease))
		Expect(after).To(BeNumerically("<=", memberLease+time.Second), "taken over within a second of clock time after expiry")

		lift()
		g.replicas["c"] = victim
		done := make(chan error, 1)
		go func() { done <- g.stop("c") }()
		Eventually(func() bool {
			stepClock(step)
			select {
			case err := <-done:
				Expect(err).NotTo(HaveOccurred())
				return true
			default:
				return false
			}
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		for id := range g.replicas {
			go func() { done <- g.stop(id) }()
			Eventually(func() bool {
				stepClock(step)
				select {
				case err := <-done:
					Expect(err).NotTo(HaveOccurred())
					return true
				default:
					return false
				}
			}).WithTimeout(30 * time.Second).Should(BeTrue())
		}
	})
})
