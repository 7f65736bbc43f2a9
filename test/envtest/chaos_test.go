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
// which faults how often, and the bounds the run must stay within.
type chaosSchedule struct {
	name string
	// names is the number of ConfigMap names the writers use; half exist
	// before the informers start.
	names int
	// operations is the number of creates, updates and deletes, spread
	// over duration.
	operations int
	duration   time.Duration
	// lanes inject faults side by side, each pausing a random faultGap
	// between two faults; a black hole holds traffic for a random
	// blackHole.
	lanes     int
	faultGap  [2]time.Duration
	blackHole [2]time.Duration
	// minFaults is how many requests every kind of fault must have hit:
	// faults go on after the writes until they have.
	minFaults int64
	// restartsAt are the shares of the writes after which kube-apiserver
	// restarts.
	restartsAt []float64
	// copies is how many informers of each chaosInformers configuration
	// run: more informers send more requests for the faults to meet.
	copies int
	// backoffCap caps the informers' retry delays.
	backoffCap time.Duration
	// maxRequests bounds the LISTs and WATCHes the informers may send in
	// the whole run: a retry loop without backoff would exceed it.
	maxRequests int64
	// timeout bounds the whole spec.
	timeout time.Duration
}

var (
	shortChaos = chaosSchedule{
		name: "short", names: 400, operations: 2000, duration: 40 * time.Second,
		lanes: 1, faultGap: [2]time.Duration{300 * time.Millisecond, 1500 * time.Millisecond}, blackHole: [2]time.Duration{time.Second, 4 * time.Second},
		minFaults: 1, restartsAt: []float64{0.4}, copies: 1, backoffCap: 2 * time.Second,
		maxRequests: 1000, timeout: 4 * time.Minute,
	}
	longChaos = chaosSchedule{
		name: "long", names: 2000, operations: 45000, duration: 12 * time.Minute,
		lanes: 3, faultGap: [2]time.Duration{200 * time.Millisecond, 800 * time.Millisecond}, blackHole: [2]time.Duration{200 * time.Millisecond, time.Second},
		minFaults: 1000, restartsAt: []float64{0.2, 0.4, 0.6, 0.8}, copies: 2, backoffCap: 250 * time.Millisecond,
		maxRequests: 200000, timeout: 45 * time.Minute,
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

	It("converge on the API server's state after a random schedule of faults and API server restarts", func(ctx SpecContext) {
		rng := rand.New(rand.NewPCG(seed, 0))
		w := &chaosWriter{client: client, ns: ns, exists: make([]bool, schedule.names)}
		By(fmt.Sprintf("creating %d of %d ConfigMaps", schedule.names/2, schedule.names))
		Expect(w.populate(ctx, rng)).To(Succeed())

		By("starting a ListWatch, a StreamingList, an encoded-store StreamingList and an all-opt-ins informer through the fault proxy")
		runCtx, stopInformers := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), GinkgoLogr))
		var running sync.WaitGroup
		DeferCleanup(func() {
			stopInformers()
			running.Wait()
		})
		ownGoroutines := leaninformerGoroutines()
		var subjects []*chaosSubject
		for i := range len(chaosInformers) * schedule.copies {
			c := chaosInformers[i%len(chaosInformers)]
			s := &chaosSubject{name: c.name, handler: newStateHandler()}
			if schedule.copies > 1 {
				s.name += fmt.Sprintf("-%d", i/len(chaosInformers)+1)
			}
			// Each informer has its own user agent, so that faults can aim
			// at one of them, and its own request counts.
			clientCfg := proxy.ClientConfig()
			clientCfg.UserAgent = chaosUserAgent(c, s.name)
			clientCfg.Wrap(s.requests.Wrap)
			proxyClient, err := kubernetes.NewForConfig(clientCfg)
			Expect(err).NotTo(HaveOccurred())
			lw := toolscache.NewListWatchFromClient(proxyClient.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
			opts := append([]informer.Option{
				informer.WithPageSize(25), // lists really page
				// Short backoffs: the run measures convergence, not
				// client-go's 30s cap.
				informer.WithBackoff(informer.Backoff{Initial: 100 * time.Millisecond, Factor: 2, Cap: schedule.backoffCap, Jitter: 0.5, ResetAfter: 30 * time.Second}),
			}, c.options...)
			s.inf = informer.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{}, opts...)
			var h toolscache.ResourceEventHandler = s.handler
			if c.coalesce {
				h = informer.Coalesce(h)
			}
			_, err = s.inf.AddEventHandler(h)
			Expect(err).NotTo(HaveOccurred())
			running.Go(func() { s.inf.RunWithContext(runCtx) })
			subjects = append(subjects, s)
		}
		for _, s := range subjects {
			Eventually(s.inf.HasSynced).WithTimeout(time.Minute).Should(BeTrue(), "%s informer synced", s.name)
		}
		before := proxy.Stats()
		started := time.Now()

		By(fmt.Sprintf("writing %d times over %v while %d lanes inject faults and the API server restarts %d times",
			schedule.operations, schedule.duration, schedule.lanes, len(schedule.restartsAt)))
		faultCtx, stopFaults := context.WithCancel(ctx)
		f := &chaosFaults{proxy: proxy, seed: seed, schedule: schedule, before: before.Faults}
		faultsDone := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(faultsDone)
			f.run(faultCtx)
		}()
		writeErr := make(chan error, 1)
		go func() { writeErr <- w.run(ctx, schedule, seed) }()

		var downtimes []time.Duration
		for _, share := range schedule.restartsAt {
			Eventually(w.done.Load).WithContext(ctx).WithTimeout(schedule.timeout).WithPolling(100*time.Millisecond).
				Should(BeNumerically(">=", int64(float64(schedule.operations)*share)), "the writers got %.0f%% through", 100*share)
			By(fmt.Sprintf("restarting kube-apiserver (etcd keeps running) after %.0f%% of the writes", 100*share))
			downtimes = append(downtimes, restartAPIServer(env))
			f.restarts.Add(1)
		}

		Eventually(writeErr).WithTimeout(schedule.timeout).Should(Receive(BeNil()), "the writers finished")
		writing := time.Since(started)
		By(fmt.Sprintf("injecting faults until every kind has hit %d requests", schedule.minFaults))
		Eventually(f.short).WithContext(ctx).WithTimeout(schedule.timeout).WithPolling(500*time.Millisecond).Should(BeEmpty(),
			"fault kinds below %d hits", schedule.minFaults)
		stopFaults()
		<-faultsDone
		f.clear()
		faulting := time.Since(started)

		By("waiting for every informer to converge on a fresh LIST")
		quiet := time.Now()
		Eventually(func(g Gomega) {
			want := chaosList(ctx, g, client, ns)
			for _, s := range subjects {
				g.Expect(storeState(s.inf.GetStore())).To(Equal(want), "%s informer's store equals a fresh LIST", s.name)
				g.Expect(s.handler.state()).To(Equal(want), "%s informer's handler rebuilt the store", s.name)
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		converged := time.Since(quiet)

		after := proxy.Stats()
		report := chaosReport{
			schedule: schedule.name, seed: seed, writing: writing, faulting: faulting, converged: converged, downtimes: downtimes,
			objects: len(mustChaosList(ctx, client, ns)), ops: w.counts(), faults: f.counts(after.Faults),
			requests: requestsBetween(before.Requests, after.Requests),
		}
		for _, s := range subjects {
			report.informers = append(report.informers, chaosInformerReport{name: s.name, requests: s.requests.Counts()})
		}
		fmt.Fprintln(GinkgoWriter, report.String())
		AddReportEntry("chaos", report, ReportEntryVisibilityAlways)

		By(fmt.Sprintf("checking that every fault kind hit at least %d requests and requests stayed bounded", schedule.minFaults))
		for kind, n := range report.faults {
			if kind == apiServerRestarts {
				continue // the loop above restarted it once per share, or failed
			}
			Expect(n).To(BeNumerically(">=", schedule.minFaults), "%s injected", kind)
		}
		r := report.requests
		Expect(r.Lists+r.Watches).To(BeNumerically("<=", schedule.maxRequests), "LISTs and WATCHes through the proxy")
		for _, ir := range report.informers {
			Expect(ir.relists()).To(BeNumerically(">", 1), "the %s informer relisted", ir.name)
		}

		By("stopping the informers: none of their goroutines may survive")
		Expect(newGoroutines(ownGoroutines)).NotTo(BeEmpty(), "the running informers' goroutines are seen")
		stopInformers()
		running.Wait()
		Eventually(func() []string { return newGoroutines(ownGoroutines) }).WithTimeout(10 * time.Second).Should(BeEmpty())
	}, SpecTimeout(schedule.timeout))
})

// chaosInformer is one configuration of the chaos run's informers, besides
// the options every one of them has (pages of 25, short backoffs).
type chaosInformer struct {
	name    string
	options []informer.Option
	// lists marks the informers that list-only faults (410 on a LIST,
	// expired continue tokens) make relist, so that they meet a LIST.
	lists bool
	// coalesce registers the handler through informer.Coalesce.
	coalesce bool
}

var chaosInformers = []chaosInformer{
	{name: "listwatch", options: []informer.Option{informer.WithStrategy(informer.ListWatch)}, lists: true},
	{name: "streaminglist", options: []informer.Option{informer.WithStrategy(informer.StreamingList)}},
	{name: "streaminglist-encoded", options: []informer.Option{informer.WithStrategy(informer.StreamingList), informer.WithEncodedStore()}},
	// Every opt-in at once, with the default strategy.
	{name: "opt-ins", options: []informer.Option{informer.WithInterning(), informer.WithEncodedStore()}, coalesce: true},
}

// chaosUserAgent is the user agent of informer name of configuration c:
// those of informers that list-only faults aim at say so.
func chaosUserAgent(c chaosInformer, name string) string {
	if c.lists {
		return listingUserAgent + name
	}
	return "leaninformer-chaos-" + name
}

const listingUserAgent = "leaninformer-chaos-listing-"

// fromListingInformer matches the requests of the informers that list-only
// faults make relist.
func fromListingInformer(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("User-Agent"), listingUserAgent)
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

// chaosSubject is one informer under test, its handler and the requests it
// sent (counted on its side of the proxy).
type chaosSubject struct {
	name     string
	inf      *informer.SharedIndexInformer
	handler  *stateHandler
	requests faultproxy.RequestCounter
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

// chaosFaults injects a random schedule of the proxy's faults in
// schedule.lanes lanes: the first lane every kind once in a random order,
// then every lane kinds at random, among those that have not hit
// schedule.minFaults requests yet while there are any.
type chaosFaults struct {
	proxy    *faultproxy.Proxy
	seed     uint64
	schedule chaosSchedule
	before   faultproxy.FaultCounts // the proxy's counts when the faults began

	mu         sync.Mutex
	injections []*faultproxy.Injection
	continues  []*faultproxy.Injection // expired continue tokens, counted apart from other 410s
	restarts   atomic.Int64
}

// The kinds of fault, by the name the report counts their hits under.
const (
	watchesCut        = "watches cut"
	gone              = "410 Gone"
	goneContinue      = "410 on a continue token"
	tooManyRequests   = "429 Too Many Requests"
	internalError     = "500 Internal Server Error"
	disconnects       = "mid-body disconnects"
	delays            = "delays"
	blackHoled        = "black-holed requests"
	apiServerRestarts = "API server restarts"
)

// chaosKind is one way to inject a fault; count names what its hits count
// towards.
type chaosKind struct {
	count  string
	inject func(f *chaosFaults, ctx context.Context, rng *rand.Rand)
}

var (
	listOrWatch = []faultproxy.Verb{faultproxy.List, faultproxy.Watch}
	chaosKinds  = []chaosKind{
		{watchesCut, (*chaosFaults).cutWatches},
		{gone, (*chaosFaults).goneOnWatch},
		{gone, (*chaosFaults).goneOnList},
		{tooManyRequests, (*chaosFaults).tooManyRequests},
		{internalError, (*chaosFaults).internalError},
		{disconnects, (*chaosFaults).disconnect},
		{goneContinue, (*chaosFaults).expireContinue},
		{delays, (*chaosFaults).delay},
		{blackHoled, (*chaosFaults).blackHole},
	}
)

func (f *chaosFaults) run(ctx context.Context) {
	var lanes sync.WaitGroup
	lanes.Go(func() { // progress, for a long run
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Minute):
				fmt.Fprintf(GinkgoWriter, "chaos %s: faults so far %v\n", time.Now().Format(time.TimeOnly), f.counts(f.proxy.Stats().Faults))
			}
		}
	})
	for lane := range f.schedule.lanes {
		rng := rand.New(rand.NewPCG(f.seed, uint64(1+lane)))
		var order []int
		if lane == 0 {
			order = rng.Perm(len(chaosKinds))
		}
		lanes.Go(func() {
			defer GinkgoRecover()
			gap := f.schedule.faultGap
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-time.After(gap[0] + time.Duration(rng.Int64N(int64(gap[1]-gap[0])))):
				}
				kind := f.pick(rng)
				if n < len(order) {
					kind = order[n]
				}
				chaosKinds[kind].inject(f, ctx, rng)
			}
		})
	}
	lanes.Wait()
}

// pick returns a random kind among those below the schedule's minimum, or
// among all once every kind has reached it.
func (f *chaosFaults) pick(rng *rand.Rand) int {
	counts := f.counts(f.proxy.Stats().Faults)
	var short []int
	for i, k := range chaosKinds {
		if counts[k.count] < f.schedule.minFaults {
			short = append(short, i)
		}
	}
	if len(short) == 0 {
		return rng.IntN(len(chaosKinds))
	}
	return short[rng.IntN(len(short))]
}

// short returns the fault kinds that have hit fewer requests than the
// schedule's minimum, with their counts.
func (f *chaosFaults) short() map[string]int64 {
	out := map[string]int64{}
	for kind, n := range f.counts(f.proxy.Stats().Faults) {
		if kind != apiServerRestarts && n < f.schedule.minFaults {
			out[kind] = n
		}
	}
	return out
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

func (f *chaosFaults) cutWatches(context.Context, *rand.Rand) { f.cut() }

func (f *chaosFaults) goneOnWatch(context.Context, *rand.Rand) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: "configmaps"}, Fault: faultproxy.Fault{Kind: faultproxy.Gone}, Times: 1})
	f.cut()
}

// relistListing makes the next watch of a listing informer answer 410, so
// that it lists again.
func (f *chaosFaults) relistListing() {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: "configmaps", Predicate: fromListingInformer},
		Fault: faultproxy.Fault{Kind: faultproxy.Gone}, Times: 1})
	f.cut()
}

// goneOnList answers the next LIST 410 and makes a listing informer list
// to meet it.
func (f *chaosFaults) goneOnList(context.Context, *rand.Rand) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.List}, Resource: "configmaps"}, Fault: faultproxy.Fault{Kind: faultproxy.Gone}, Times: 1})
	f.relistListing()
}

func (f *chaosFaults) tooManyRequests(_ context.Context, rng *rand.Rand) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: listOrWatch, Resource: "configmaps"},
		Fault: faultproxy.Fault{Kind: faultproxy.TooManyRequests, RetryAfter: time.Second}, Times: 1 + rng.IntN(2)})
	f.cut()
}

func (f *chaosFaults) internalError(context.Context, *rand.Rand) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: listOrWatch, Resource: "configmaps"}, Fault: faultproxy.Fault{Kind: faultproxy.InternalError}, Times: 1})
	f.cut()
}

// disconnect cuts the next response (a list page, a streamed list or a
// watch) after a few kilobytes at most.
func (f *chaosFaults) disconnect(_ context.Context, rng *rand.Rand) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: listOrWatch, Resource: "configmaps"},
		Fault: faultproxy.Fault{Kind: faultproxy.Disconnect, AfterBytes: 100 + rng.Int64N(8000)}, Times: 1})
	f.cut()
}

// expireContinue expires the next continue token and makes a listing
// informer list to carry one.
func (f *chaosFaults) expireContinue(context.Context, *rand.Rand) {
	GinkgoHelper()
	in, err := f.proxy.ExpireContinueTokens("configmaps", 1)
	Expect(err).NotTo(HaveOccurred())
	f.mu.Lock()
	f.injections = append(f.injections, in)
	f.continues = append(f.continues, in)
	f.mu.Unlock()
	f.relistListing()
}

func (f *chaosFaults) delay(_ context.Context, rng *rand.Rand) {
	f.inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: listOrWatch, Resource: "configmaps"},
		Fault: faultproxy.Fault{Kind: faultproxy.Delay, Delay: time.Duration(100+rng.IntN(1400)) * time.Millisecond}, Times: 1 + rng.IntN(3)})
	f.cut()
}

// blackHole holds every request and response of the informers for a random
// share of the schedule's blackHole bounds.
func (f *chaosFaults) blackHole(ctx context.Context, rng *rand.Rand) {
	lift := f.proxy.BlackHole(faultproxy.Match{Resource: "configmaps"})
	defer lift()
	hold := f.schedule.blackHole
	select {
	case <-ctx.Done():
	case <-time.After(hold[0] + time.Duration(rng.Int64N(int64(hold[1]-hold[0])))):
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

// counts returns the faults injected since f.before by kind, with expired
// continue tokens apart from the other 410s, given the proxy's counts now.
func (f *chaosFaults) counts(now faultproxy.FaultCounts) map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var continues int64
	for _, in := range f.continues {
		continues += int64(in.Hits())
	}
	b := f.before
	return map[string]int64{
		watchesCut:        now.WatchesCut - b.WatchesCut,
		gone:              now.Gone - b.Gone - continues,
		goneContinue:      continues,
		tooManyRequests:   now.TooManyRequests - b.TooManyRequests,
		internalError:     now.InternalError - b.InternalError,
		disconnects:       now.Disconnects - b.Disconnects,
		delays:            now.Delays - b.Delays,
		blackHoled:        now.BlackHoled - b.BlackHoled,
		apiServerRestarts: f.restarts.Load(),
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
	writing   time.Duration // from the first write to the last
	faulting  time.Duration // from the first fault to the last
	converged time.Duration
	downtimes []time.Duration
	objects   int
	ops       map[string]int64
	faults    map[string]int64
	requests  faultproxy.RequestCounts
	informers []chaosInformerReport
}

// chaosInformerReport is what one informer sent, counted on its side.
type chaosInformerReport struct {
	name     string
	requests faultproxy.RequestCounts
}

// relists counts full lists: first LIST pages and streaming watches.
func (r chaosInformerReport) relists() int64 {
	return r.requests.Lists - r.requests.ListsWithContinue + r.requests.StreamingWatches
}

func (r chaosReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos %s schedule, seed %d: %v of writes, %v of faults, converged %v after the last fault; API server restarts down for %v; %d objects at the end\n",
		r.schedule, r.seed, r.writing.Round(time.Millisecond), r.faulting.Round(time.Millisecond), r.converged.Round(time.Millisecond), r.downtimes, r.objects)
	fmt.Fprintf(&b, "  operations: %d creates, %d updates, %d deletes (%d writes retried)\n",
		r.ops["creates"], r.ops["updates"], r.ops["deletes"], r.ops["retried writes"])
	b.WriteString("  faults:")
	for _, k := range []string{watchesCut, gone, goneContinue, tooManyRequests, internalError, disconnects, delays, blackHoled, apiServerRestarts} {
		fmt.Fprintf(&b, " %s %d;", k, r.faults[k])
	}
	q := r.requests
	fmt.Fprintf(&b, "\n  requests through the proxy: %d LISTs (%d with continue), %d WATCHes (%d streaming)", q.Lists, q.ListsWithContinue, q.Watches, q.StreamingWatches)
	for _, ir := range r.informers {
		fmt.Fprintf(&b, "\n  %s informer: %d relists (first LIST pages and streaming watches); %d LISTs, %d WATCHes", ir.name, ir.relists(), ir.requests.Lists, ir.requests.Watches)
	}
	return b.String()
}
