package envtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/internal/testenv"
	"github.com/leaninformer/leaninformer/pkg/informer"
)

// The chaos suite's knobs come from the environment so that `make chaos`
// can run a longer schedule than `make test`.
const (
	chaosEnv     = "LEANINFORMER_CHAOS"      // "long" for the long schedule
	chaosSeedEnv = "LEANINFORMER_CHAOS_SEED" // the schedule's seed
	defaultSeed  = 1
)

// chaosSchedule bounds a chaos run: how many writes, over how long, with
// which gaps between faults, and the bounds the run must stay within.
type chaosSchedule struct {
	name string
	// names is the number of ConfigMap names the writers use; half exist
	// before the informers start.
	names int
	// operations is the number of creates, updates and deletes, spread
	// over duration.
	operations int
	duration   time.Duration
	// faultGap bounds the random pause between two faults.
	faultGap [2]time.Duration
	// maxRequests bounds the LISTs and WATCHes the informers may send in
	// the whole run: a retry loop without backoff would exceed it.
	maxRequests int64
	// timeout bounds the whole spec.
	timeout time.Duration
}

var (
	shortChaos = chaosSchedule{
		name: "short", names: 400, operations: 2000, duration: 40 * time.Second,
		faultGap: [2]time.Duration{300 * time.Millisecond, 1500 * time.Millisecond}, maxRequests: 1000, timeout: 4 * time.Minute,
	}
	longChaos = chaosSchedule{
		name: "long", names: 2000, operations: 30000, duration: 8 * time.Minute,
		faultGap: [2]time.Duration{300 * time.Millisecond, 1500 * time.Millisecond}, maxRequests: 15000, timeout: 20 * time.Minute,
	}
)

// chaosSettings reads the schedule and the seed from the environment.
func chaosSettings() (chaosSchedule, uint64, error) {
	schedule := shortChaos
	switch v := os.Getenv(chaosEnv); v {
	case "", "short":
	case "long":
		schedule = longChaos
	default:
		return schedule, 0, fmt.Errorf("%s=%q: want short or long", chaosEnv, v)
	}
	seed := uint64(defaultSeed)
	if v := os.Getenv(chaosSeedEnv); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			return schedule, 0, fmt.Errorf("%s=%q: %w", chaosSeedEnv, v, err)
		}
	}
	return schedule, seed, nil
}

var _ = Describe("informers under chaos", Ordered, Label("chaos"), func() {
	schedule, seed, settingsErr := chaosSettings()
	var (
		env     *envtest.Environment
		restCfg *rest.Config
		client  *kubernetes.Clientset // straight to the API server
		proxy   *faultproxy.Proxy
		ns      string
	)

	BeforeAll(func(ctx context.Context) {
		Expect(settingsErr).NotTo(HaveOccurred())
		fmt.Fprintf(GinkgoWriter, "chaos: %s schedule, seed %d (%s=%d to replay)\n", schedule.name, seed, chaosSeedEnv, seed)
		AddReportEntry("chaos seed", fmt.Sprintf("%s schedule, %s=%d", schedule.name, chaosSeedEnv, seed))

		// A control plane of its own, so that restarting its API server
		// disturbs no other spec. A fixed certificate folder makes the
		// restarted API server serve the same certificate on the same port,
		// so the proxy in front of it needs no change.
		assets, err := testenv.AssetsDir()
		Expect(err).NotTo(HaveOccurred())
		certDir, err := os.MkdirTemp("", "leaninformer-chaos-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, certDir)
		env = &envtest.Environment{
			BinaryAssetsDirectory:    assets,
			ControlPlane:             envtest.ControlPlane{APIServer: &envtest.APIServer{CertDir: certDir}},
			ControlPlaneStartTimeout: time.Minute,
			ControlPlaneStopTimeout:  time.Minute,
		}
		restCfg, err = env.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(env.Stop)
		restCfg.QPS, restCfg.Burst = 5000, 10000
		client, err = kubernetes.NewForConfig(restCfg)
		Expect(err).NotTo(HaveOccurred())
		proxy, err = faultproxy.New(restCfg)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)

		created, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "chaos-"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		ns = created.Name
	})

	It("converge on the API server's state after a random schedule of faults and an API server restart", func(ctx SpecContext) {
		rng := rand.New(rand.NewPCG(seed, 0))
		w := &chaosWriter{client: client, ns: ns, exists: make([]bool, schedule.names)}
		By(fmt.Sprintf("creating %d of %d ConfigMaps", schedule.names/2, schedule.names))
		Expect(w.populate(ctx, rng)).To(Succeed())

		By("starting a ListWatch, a StreamingList and an encoded-store StreamingList informer through the fault proxy")
		runCtx, stopInformers := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), GinkgoLogr))
		var running sync.WaitGroup
		DeferCleanup(func() {
			stopInformers()
			running.Wait()
		})
		ownGoroutines := leaninformerGoroutines()
		var subjects []*chaosSubject
		for _, subject := range []chaosSubject{{strategy: informer.ListWatch}, {strategy: informer.StreamingList}, {strategy: informer.StreamingList, encoded: true}} {
			// Each informer has its own user agent, so that faults can
			// aim at one of them.
			clientCfg := proxy.ClientConfig()
			clientCfg.UserAgent = subject.userAgent()
			proxyClient, err := kubernetes.NewForConfig(clientCfg)
			Expect(err).NotTo(HaveOccurred())
			lw := toolscache.NewListWatchFromClient(proxyClient.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
			opts := []informer.Option{
				informer.WithStrategy(subject.strategy),
				informer.WithPageSize(25), // lists really page
				// Short backoffs: the run measures convergence, not
				// client-go's 30s cap.
				informer.WithBackoff(informer.Backoff{Initial: 100 * time.Millisecond, Factor: 2, Cap: 2 * time.Second, Jitter: 0.5, ResetAfter: 30 * time.Second}),
			}
			if subject.encoded {
				opts = append(opts, informer.WithEncodedStore())
			}
			inf := informer.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{}, opts...)
			h := newStateHandler()
			_, err = inf.AddEventHandler(h)
			Expect(err).NotTo(HaveOccurred())
			running.Go(func() { inf.RunWithContext(runCtx) })
			subjects = append(subjects, &chaosSubject{strategy: subject.strategy, encoded: subject.encoded, inf: inf, handler: h})
		}
		for _, s := range subjects {
			Eventually(s.inf.HasSynced).WithTimeout(time.Minute).Should(BeTrue(), "%v informer synced", s)
		}
		before := proxy.Stats()
		started := time.Now()

		By(fmt.Sprintf("writing %d times over %v while faults are injected and the API server restarts once", schedule.operations, schedule.duration))
		faultCtx, stopFaults := context.WithCancel(ctx)
		f := &chaosFaults{proxy: proxy, rng: rand.New(rand.NewPCG(seed, 1)), gap: schedule.faultGap}
		faultsDone := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(faultsDone)
			f.run(faultCtx)
		}()
		writeErr := make(chan error, 1)
		go func() { writeErr <- w.run(ctx, schedule, seed) }()

		Eventually(w.done.Load).WithContext(ctx).WithTimeout(schedule.timeout).WithPolling(100*time.Millisecond).
			Should(BeNumerically(">=", int64(schedule.operations*2/5)), "the writers got 40% through")
		By("restarting kube-apiserver (etcd keeps running)")
		downtime := restartAPIServer(env)
		f.restarts.Add(1)

		Eventually(writeErr).WithTimeout(schedule.timeout).Should(Receive(BeNil()), "the writers finished")
		stopFaults()
		<-faultsDone
		f.clear()
		writing := time.Since(started)

		By("waiting for the informers to converge on a fresh LIST")
		quiet := time.Now()
		Eventually(func(g Gomega) {
			want := chaosList(ctx, g, client, ns)
			for _, s := range subjects {
				g.Expect(storeState(s.inf.GetStore())).To(Equal(want), "%v informer's store equals a fresh LIST", s)
				g.Expect(s.handler.state()).To(Equal(want), "%v informer's handler rebuilt the store", s)
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		converged := time.Since(quiet)

		after := proxy.Stats()
		report := chaosReport{
			schedule: schedule.name, seed: seed, writing: writing, converged: converged, downtime: downtime,
			objects: len(mustChaosList(ctx, client, ns)), ops: w.counts(), faults: f.counts(after.Faults, before.Faults),
			requests: requestsBetween(before.Requests, after.Requests),
		}
		fmt.Fprintln(GinkgoWriter, report.String())
		AddReportEntry("chaos", report, ReportEntryVisibilityAlways)

		By("checking that every fault kind was injected and requests stayed bounded")
		for kind, n := range report.faults {
			Expect(n).To(BeNumerically(">", 0), "%s injected", kind)
		}
		r := report.requests
		Expect(r.Lists+r.Watches).To(BeNumerically("<=", schedule.maxRequests), "LISTs and WATCHes through the proxy")
		Expect(r.Lists-r.ListsWithContinue).To(BeNumerically(">", 1), "the ListWatch informer relisted")
		Expect(r.StreamingWatches).To(BeNumerically(">", 1), "the StreamingList informer relisted")

		By("stopping the informers: none of their goroutines may survive")
		Expect(newGoroutines(ownGoroutines)).NotTo(BeEmpty(), "the running informers' goroutines are seen")
		stopInformers()
		running.Wait()
		Eventually(func() []string { return newGoroutines(ownGoroutines) }).WithTimeout(10 * time.Second).Should(BeEmpty())
	}, SpecTimeout(schedule.timeout))
})

func chaosUserAgent(s informer.Strategy) string {
	return "leaninformer-chaos-" + strings.ToLower(s.String())
}

// userAgent is the subject's: its strategy's, marked for the encoded store.
func (s chaosSubject) userAgent() string {
	if s.encoded {
		return chaosUserAgent(s.strategy) + "-encoded"
	}
	return chaosUserAgent(s.strategy)
}

func (s chaosSubject) String() string {
	if s.encoded {
		return s.strategy.String() + " (encoded store)"
	}
	return s.strategy.String()
}

// fromListWatchInformer matches the requests of the ListWatch informer.
func fromListWatchInformer(r *http.Request) bool {
	return r.Header.Get("User-Agent") == chaosUserAgent(informer.ListWatch)
}

// leaninformerGoroutines returns the stacks of the goroutines running
// leaninformer's packages, by goroutine header ("goroutine 42 [chan receive]").
func leaninformerGoroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/leaninformer/leaninformer/pkg/") {
			id, _, _ := strings.Cut(g, " [")
			out[id] = g
		}
	}
	return out
}

// newGoroutines returns the stacks of leaninformer goroutines not in before.
func newGoroutines(before map[string]string) []string {
	var out []string
	for id, stack := range leaninformerGoroutines() {
		if _, ok := before[id]; !ok {
			out = append(out, stack)
		}
	}
	return out
}

// chaosSubject is one informer under test and its handler.
type chaosSubject struct {
	strategy informer.Strategy
	encoded  bool // on the encoded store
	inf      *informer.SharedIndexInformer
	handler  *stateHandler
}

// restartAPIServer stops kube-apiserver and starts it again on the same port
// with the same certificates, and returns how long it was down.
func restartAPIServer(env *envtest.Environment) time.Duration {
	GinkgoHelper()
	apiServer := env.ControlPlane.GetAPIServer()
	start := time.Now()
	Expect(apiServer.Stop()).To(Succeed())
	Expect(apiServer.Start()).To(Succeed())
	return time.Since(start)
}

func chaosList(ctx context.Context, g Gomega, client *kubernetes.Clientset, ns string) map[string]string {
	list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	out := make(map[string]string, len(list.Items))
	for i := range list.Items {
		out[ns+"/"+list.Items[i].Name] = list.Items[i].ResourceVersion
	}
	return out
}

func mustChaosList(ctx context.Context, client *kubernetes.Clientset, ns string) map[string]string {
	GinkgoHelper()
	return chaosList(ctx, Default, client, ns)
}

// chaosWriter creates, updates and deletes ConfigMaps straight on the API
// server (not through the proxy). Each worker owns the names i with
// i%workers == worker, so it always knows whether a name exists.
type chaosWriter struct {
	client *kubernetes.Clientset
	ns     string
	exists []bool

	done                      atomic.Int64
	creates, updates, deletes atomic.Int64
	// retries counts writes repeated after an error (API server down,
	// timeouts): the operation counts above count each write once.
	retries atomic.Int64
}

const chaosWorkers = 4

func chaosName(i int) string { return fmt.Sprintf("chaos-%05d", i) }

func (w *chaosWriter) populate(ctx context.Context, rng *rand.Rand) error {
	for i := range len(w.exists) / 2 {
		if err := w.write(ctx, rng, i); err != nil {
			return err
		}
	}
	w.creates.Store(0)
	return nil
}

// run makes schedule.operations writes, paced over schedule.duration; it
// returns early only if ctx ends.
func (w *chaosWriter) run(ctx context.Context, schedule chaosSchedule, seed uint64) error {
	defer GinkgoRecover()
	perWorker := schedule.operations / chaosWorkers
	interval := schedule.duration / time.Duration(perWorker)
	var wg sync.WaitGroup
	errs := make(chan error, chaosWorkers)
	for worker := range chaosWorkers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(100+worker)))
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for range perWorker {
				select {
				case <-ctx.Done():
					errs <- ctx.Err()
					return
				case <-tick.C:
				}
				i := worker + chaosWorkers*rng.IntN(len(w.exists)/chaosWorkers)
				if err := w.write(ctx, rng, i); err != nil {
					errs <- err
					return
				}
				w.done.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// write creates name i if it does not exist, else updates it (3 times in 4)
// or deletes it, retrying until the API server takes the write.
func (w *chaosWriter) write(ctx context.Context, rng *rand.Rand, i int) error {
	cms := w.client.CoreV1().ConfigMaps(w.ns)
	name := chaosName(i)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		// A value of random size, so that pages and events vary in length.
		Data: map[string]string{"value": strings.Repeat("x", rng.IntN(2000))},
	}
	deleting := w.exists[i] && rng.IntN(4) == 0
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			w.retries.Add(1)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		var err error
		switch {
		case deleting:
			err = cms.Delete(ctx, name, metav1.DeleteOptions{})
			if err == nil || apierrors.IsNotFound(err) { // NotFound: an earlier attempt went through
				w.exists[i] = false
				w.deletes.Add(1)
				return nil
			}
		case w.exists[i]:
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{}) // unconditional: no conflicts
			if err == nil {
				w.updates.Add(1)
				return nil
			}
		default:
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) { // AlreadyExists: an earlier attempt went through
				w.exists[i] = true
				w.creates.Add(1)
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt == 0 {
			fmt.Fprintf(GinkgoWriter, "chaos writer: %s %s: %v; retrying\n", verbOf(deleting, w.exists[i]), name, err)
		}
	}
}

func verbOf(deleting, exists bool) string {
	switch {
	case deleting:
		return "delete"
	case exists:
		return "update"
	}
	return "create"
}

func (w *chaosWriter) counts() map[string]int64 {
	return map[string]int64{
		"creates": w.creates.Load(), "updates": w.updates.Load(), "deletes": w.deletes.Load(), "retried writes": w.retries.Load(),
	}
}

// chaosFaults injects a random schedule of the proxy's faults: first every
// kind once in a random order, then kinds at random.
type chaosFaults struct {
	proxy *faultproxy.Proxy
	rng   *rand.Rand
	gap   [2]time.Duration

	mu         sync.Mutex
	injections []*faultproxy.Injection
	continues  []*faultproxy.Injection // expired continue tokens, counted apart from other 410s
	restarts   atomic.Int64
}

type chaosFault func(f *chaosFaults, ctx context.Context)

var (
	listOrWatch = []faultproxy.Verb{faultproxy.List, faultproxy.Watch}
	chaosKinds  = []chaosFault{
		(*chaosFaults).cutWatches,
		(*chaosFaults).goneOnWatch,
		(*chaosFaults).goneOnList,
		(*chaosFaults).tooManyRequests,
		(*chaosFaults).internalError,
		(*chaosFaults).disconnect,
		(*chaosFaults).expireContinue,
		(*chaosFaults).delay,
		(*chaosFaults).blackHole,
	}
)

func (f *chaosFaults) run(ctx context.Context) {
	order := f.rng.Perm(len(chaosKinds))
	for n := 0; ; n++ {
		gap := f.gap[0] + time.Duration(f.rng.Int64N(int64(f.gap[1]-f.gap[0])))
		select {
		case <-ctx.Done():
			return
		case <-time.After(gap):
		}
		kind := f.rng.IntN(len(chaosKinds))
		if n < len(order) {
			kind = order[n]
		}
		chaosKinds[kind](f, ctx)
	}
}

func (f *chaosFaults) inject(r faultproxy.Rule) {
	GinkgoHelper()
	in, err := f.proxy.Inject(r)
	Expect(err).NotTo(HaveOccurred())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.injections = append(f.injections, in)
}

// cut drops the open watches, so that a rule just injected meets the
// informers' next requests at once.
func (f *chaosFaults) cut() { f.proxy.CutWatches(faultproxy.Match{Resource: "configmaps"}) }

func (f *chaosFaults) cutWatches(context.Context) { f.cut() }

func (f *chaosFaults) goneOnWatch(context.Context) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: "configmaps"}, Fault: faultproxy.Fault{Kind: faultproxy.Gone}, Times: 1})
	f.cut()
}

// relistListWatch makes the ListWatch informer's next watch answer 410, so
// that it lists again.
func (f *chaosFaults) relistListWatch() {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: "configmaps", Predicate: fromListWatchInformer},
		Fault: faultproxy.Fault{Kind: faultproxy.Gone}, Times: 1})
	f.cut()
}

// goneOnList answers the next LIST 410 and makes the ListWatch informer
// list to meet it.
func (f *chaosFaults) goneOnList(context.Context) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.List}, Resource: "configmaps"}, Fault: faultproxy.Fault{Kind: faultproxy.Gone}, Times: 1})
	f.relistListWatch()
}

func (f *chaosFaults) tooManyRequests(context.Context) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: listOrWatch, Resource: "configmaps"},
		Fault: faultproxy.Fault{Kind: faultproxy.TooManyRequests, RetryAfter: time.Second}, Times: 1 + f.rng.IntN(2)})
	f.cut()
}

func (f *chaosFaults) internalError(context.Context) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: listOrWatch, Resource: "configmaps"}, Fault: faultproxy.Fault{Kind: faultproxy.InternalError}, Times: 1})
	f.cut()
}

// disconnect cuts the next response (a list page, a streamed list or a
// watch) after a few kilobytes at most.
func (f *chaosFaults) disconnect(context.Context) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: listOrWatch, Resource: "configmaps"},
		Fault: faultproxy.Fault{Kind: faultproxy.Disconnect, AfterBytes: 100 + f.rng.Int64N(8000)}, Times: 1})
	f.cut()
}

// expireContinue expires the next continue token and makes the ListWatch
// informer list to carry one.
func (f *chaosFaults) expireContinue(context.Context) {
	GinkgoHelper()
	in, err := f.proxy.ExpireContinueTokens("configmaps", 1)
	Expect(err).NotTo(HaveOccurred())
	f.mu.Lock()
	f.injections = append(f.injections, in)
	f.continues = append(f.continues, in)
	f.mu.Unlock()
	f.relistListWatch()
}

func (f *chaosFaults) delay(context.Context) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: listOrWatch, Resource: "configmaps"},
		Fault: faultproxy.Fault{Kind: faultproxy.Delay, Delay: time.Duration(100+f.rng.IntN(1400)) * time.Millisecond}, Times: 1 + f.rng.IntN(3)})
	f.cut()
}

// blackHole holds every request and response of the informers for up to 4s.
func (f *chaosFaults) blackHole(ctx context.Context) {
	lift := f.proxy.BlackHole(faultproxy.Match{Resource: "configmaps"})
	defer lift()
	select {
	case <-ctx.Done():
	case <-time.After(time.Second + time.Duration(f.rng.IntN(3000))*time.Millisecond):
	}
}

// clear removes the rules not used up yet, so that the informers can
// converge.
func (f *chaosFaults) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, in := range f.injections {
		in.Remove()
	}
}

// counts returns the faults injected between two proxy snapshots by kind,
// with expired continue tokens apart from the other 410s.
func (f *chaosFaults) counts(after, before faultproxy.FaultCounts) map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var continues int64
	for _, in := range f.continues {
		continues += int64(in.Hits())
	}
	return map[string]int64{
		"watches cut":               after.WatchesCut - before.WatchesCut,
		"410 Gone":                  after.Gone - before.Gone - continues,
		"410 on a continue token":   continues,
		"429 Too Many Requests":     after.TooManyRequests - before.TooManyRequests,
		"500 Internal Server Error": after.InternalError - before.InternalError,
		"mid-body disconnects":      after.Disconnects - before.Disconnects,
		"delays":                    after.Delays - before.Delays,
		"black-holed requests":      after.BlackHoled - before.BlackHoled,
		"API server restarts":       f.restarts.Load(),
	}
}

func requestsBetween(before, after faultproxy.RequestCounts) faultproxy.RequestCounts {
	return faultproxy.RequestCounts{
		Lists:             after.Lists - before.Lists,
		ListsWithLimit:    after.ListsWithLimit - before.ListsWithLimit,
		ListsWithContinue: after.ListsWithContinue - before.ListsWithContinue,
		Watches:           after.Watches - before.Watches,
		StreamingWatches:  after.StreamingWatches - before.StreamingWatches,
		Other:             after.Other - before.Other,
	}
}

// chaosReport is what a chaos run did, for the suite's report and the README.
type chaosReport struct {
	schedule  string
	seed      uint64
	writing   time.Duration
	converged time.Duration
	downtime  time.Duration
	objects   int
	ops       map[string]int64
	faults    map[string]int64
	requests  faultproxy.RequestCounts
}

func (r chaosReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos %s schedule, seed %d: %v of writes and faults, converged %v after the last one; API server down %v for its restart; %d objects at the end\n",
		r.schedule, r.seed, r.writing.Round(time.Millisecond), r.converged.Round(time.Millisecond), r.downtime.Round(time.Millisecond), r.objects)
	fmt.Fprintf(&b, "  operations: %d creates, %d updates, %d deletes (%d writes retried)\n",
		r.ops["creates"], r.ops["updates"], r.ops["deletes"], r.ops["retried writes"])
	b.WriteString("  faults:")
	for _, k := range []string{"watches cut", "410 Gone", "410 on a continue token", "429 Too Many Requests", "500 Internal Server Error",
		"mid-body disconnects", "delays", "black-holed requests", "API server restarts"} {
		fmt.Fprintf(&b, " %s %d;", k, r.faults[k])
	}
	q := r.requests
	fmt.Fprintf(&b, "\n  relists: %d ListWatch (first LIST pages), %d StreamingList (streaming watches); requests: %d LISTs (%d with continue), %d WATCHes",
		q.Lists-q.ListsWithContinue, q.StreamingWatches, q.Lists, q.ListsWithContinue, q.Watches)
	return b.String()
}
