package envtest

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/internal/metricstest"
	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// Bad input from the wire that needs client-go's real decoders: the fault
// proxy answers a LIST page or a watch with a body no decoder reads
// (faultproxy.Garble). pkg/informer's wire_test.go covers what the fake
// server can send (another kind, a bookmark without resourceVersion, a watch
// going back in time).
var _ = Describe("bad input from the wire", Ordered, func() {
	const objects = 60 // three pages of 25
	var (
		ns     string
		proxy  *faultproxy.Proxy
		client *kubernetes.Clientset // through the proxy
	)

	BeforeAll(func(ctx context.Context) {
		ns = createNamespace(ctx, "wire")
		createConfigMaps(ctx, ns, objects, "cm")
		var err error
		proxy, err = faultproxy.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)
		client, err = kubernetes.NewForConfig(proxy.ClientConfig())
		Expect(err).NotTo(HaveOccurred())
	})

	// start runs a ListWatch informer (pages of 25, short backoffs) of ns
	// through the proxy, with its own metrics and logs, until it has synced.
	start := func(ctx context.Context) (*informer.SharedIndexInformer, *stateHandler, *prometheus.Registry, *lineSink) {
		GinkgoHelper()
		m := metrics.New()
		reg := prometheus.NewRegistry()
		Expect(m.Register(reg)).To(Succeed())
		lw := toolscache.NewListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
		inf := informer.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{},
			informer.WithStrategy(informer.ListWatch), informer.WithPageSize(25), informer.WithMetrics(m),
			informer.WithBackoff(informer.Backoff{Initial: 100 * time.Millisecond, Factor: 2, Cap: 500 * time.Millisecond, Jitter: 0.5, ResetAfter: time.Minute}))
		h := newStateHandler()
		_, err := inf.AddEventHandler(h)
		Expect(err).NotTo(HaveOccurred())
		logs := &lineSink{}
		runCtx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logs.logger()))
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(runCtx) }()
		DeferCleanup(func() {
			cancel()
			Eventually(done).Should(BeClosed())
		})
		Eventually(inf.HasSynced).WithTimeout(time.Minute).Should(BeTrue())
		Eventually(func(g Gomega) {
			want := freshList(ctx, g, ns)
			g.Expect(storeState(inf.GetStore())).To(Equal(want))
			g.Expect(h.state()).To(Equal(want))
		}).WithTimeout(time.Minute).Should(Succeed())
		return inf, h, reg, logs
	}

	// converged waits until the store and the handler equal a fresh LIST.
	converged := func(ctx context.Context, inf *informer.SharedIndexInformer, h *stateHandler) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			want := freshList(ctx, g, ns)
			g.Expect(storeState(inf.GetStore())).To(Equal(want))
			g.Expect(h.state()).To(Equal(want))
		}).WithTimeout(time.Minute).Should(Succeed())
	}

	It("relists after a LIST page that does not decode, keeping the store meanwhile", func(ctx context.Context) {
		inf, h, reg, logs := start(ctx)
		before := storeState(inf.GetStore())

		By("answering the relist's second page, twice, with bytes no decoder reads")
		garbled, err := proxy.Inject(faultproxy.Rule{
			Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.List}, Resource: "configmaps", Predicate: faultproxy.HasContinue},
			Fault: faultproxy.Fault{Kind: faultproxy.Garble}, Times: 2,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(garbled.Remove)
		gone, err := proxy.Inject(faultproxy.Rule{
			Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: "configmaps"},
			Fault: faultproxy.Fault{Kind: faultproxy.Gone}, Times: 1,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gone.Remove)
		proxy.CutWatches(faultproxy.Match{Resource: "configmaps"})

		By("reporting the failure while the store keeps every object")
		// The decoder's own words: protobuf's or JSON's, whichever the client asked for.
		undecodable := Or(ContainSubstring("does not appear to be a protobuf message"), ContainSubstring("json parse error"))
		Eventually(func() string {
			if err := inf.SyncStatus().LastError; err != nil {
				return err.Error()
			}
			return ""
		}).WithTimeout(time.Minute).Should(undecodable)
		Expect(inf.SyncStatus().Reason).To(Equal(listerwatcher.CauseOther.Description()))
		Expect(storeState(inf.GetStore())).To(Equal(before))
		Expect(failures(reg, listerwatcher.CauseOther)).To(BeNumerically(">=", 1))
		Eventually(func() string { return logs.find("Failed to watch", "failed to list *v1.ConfigMap") }).ShouldNot(BeEmpty())

		By("recovering once the pages decode again")
		Eventually(garbled.Done).WithTimeout(time.Minute).Should(BeTrue())
		createConfigMaps(ctx, ns, 3, "after-list")
		converged(ctx, inf, h)
		Expect(inf.SyncStatus().LastError).NotTo(HaveOccurred(), "a complete list clears it")
	})

	It("watches again from the last resourceVersion after a watch event that does not decode", func(ctx context.Context) {
		inf, h, reg, logs := start(ctx)
		rv := inf.LastSyncResourceVersion()
		listsBefore := proxy.Stats().Requests.Lists

		By("answering the next watch with bytes no decoder reads")
		garbled, err := proxy.Inject(faultproxy.Rule{
			Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: "configmaps"},
			Fault: faultproxy.Fault{Kind: faultproxy.Garble}, Times: 1,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(garbled.Remove)
		// The resourceVersions the informer's watches start from, from now on.
		// (A predicate runs under the proxy's lock: it must not call the proxy.)
		var watchedFrom sync.Map
		seen, err := proxy.Inject(faultproxy.Rule{
			Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: "configmaps", Predicate: func(r *http.Request) bool {
				watchedFrom.Store(r.URL.Query().Get("resourceVersion"), true)
				return false
			}},
			Fault: faultproxy.Fault{Kind: faultproxy.Gone},
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(seen.Remove)
		proxy.CutWatches(faultproxy.Match{Resource: "configmaps"})
		Eventually(garbled.Done).WithTimeout(time.Minute).Should(BeTrue())

		By("reporting it as an answer that could not be read")
		Eventually(func() string { return inf.SyncStatus().Reason }).WithTimeout(time.Minute).
			Should(Equal(listerwatcher.CauseDecode.Description()))
		Expect(inf.SyncStatus().LastError.Error()).To(ContainSubstring("unable to decode an event from the watch stream"))
		Expect(failures(reg, listerwatcher.CauseDecode)).To(BeNumerically(">=", 1))
		Eventually(func() string {
			return logs.find("watch ended with error", "could not be read", "watch again from the last rv")
		}).ShouldNot(BeEmpty())

		By("watching again from the last resourceVersion, without a relist")
		createConfigMaps(ctx, ns, 3, "after-watch")
		converged(ctx, inf, h)
		_, resumed := watchedFrom.Load(rv)
		Expect(resumed).To(BeTrue(), "a watch from %s, the last resourceVersion", rv)
		_, replayed := watchedFrom.Load("")
		Expect(replayed).To(BeFalse(), "a watch from \"\"")
		Expect(proxy.Stats().Requests.Lists).To(Equal(listsBefore), "no relist")
	})
})

// failures reads leaninformer_failures_total for cause.
func failures(reg *prometheus.Registry, cause listerwatcher.Cause) float64 {
	GinkgoHelper()
	series, err := metricstest.Find(reg, "leaninformer_failures_total", map[string]string{"cause": cause.String()})
	Expect(err).NotTo(HaveOccurred())
	return metricstest.Sum(series)
}

// lineSink collects an informer's log lines at every verbosity.
type lineSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *lineSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lines = append(s.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
}

// find returns the first line holding every one of parts, or "".
func (s *lineSink) find(parts ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
next:
	for _, line := range s.lines {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		return line
	}
	return ""
}
