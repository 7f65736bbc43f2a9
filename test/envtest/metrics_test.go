package envtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/leaninformer/leaninformer/pkg/informer"
)

var _ = Describe("leaninformer metrics on a manager's /metrics endpoint", func() {
	It("shows the informers' store, restarts and handlers", func(ctx context.Context) {
		ns := createNamespace(ctx, "metrics")
		createConfigMaps(ctx, ns, 40, "m")

		addr := freeAddress()
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			NewCache: informer.NewCache,
			Cache:    cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
			Metrics:  metricsserver.Options{BindAddress: addr},
		})
		Expect(err).NotTo(HaveOccurred())
		mgrCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
		DeferCleanup(func() { cancel(); Eventually(done).Should(BeClosed()) })

		var list corev1.ConfigMapList
		Eventually(func() error { return mgr.GetCache().List(ctx, &list, client.InNamespace(ns)) }).Should(Succeed())
		Expect(list.Items).To(HaveLen(40))

		configMaps := map[string]string{"group": "", "version": "v1", "resource": "configmaps"}
		initial := map[string]string{"group": "", "version": "v1", "resource": "configmaps", "reason": "Initial"}
		Eventually(func(g Gomega) {
			body := scrape(g, "http://"+addr+"/metrics")
			g.Expect(sample(g, body, "leaninformer_store_objects", configMaps)).To(BeNumerically(">=", 40))
			g.Expect(sample(g, body, "leaninformer_synced", configMaps)).To(BeNumerically(">=", 1))
			g.Expect(sample(g, body, "leaninformer_restarts_total", initial)).To(BeNumerically(">=", 1))
			g.Expect(sample(g, body, "leaninformer_watches_total", configMaps)).To(BeNumerically(">=", 1))
			g.Expect(sample(g, body, "leaninformer_restart_duration_seconds_count", configMaps)).To(BeNumerically(">=", 1))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})
})

// freeAddress returns a loopback address with a port nothing listens on.
func freeAddress() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

func scrape(g Gomega, url string) string {
	resp, err := http.Get(url) //nolint:noctx // a test against a local server
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return string(body)
}

// sample returns the value of the series name{labels} in a text exposition.
func sample(g Gomega, body, name string, labels map[string]string) float64 {
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(pairs) // the exposition sorts labels by name
	series := name + "{" + strings.Join(pairs, ",") + "}"
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			g.Expect(err).NotTo(HaveOccurred())
			return f
		}
	}
	g.Expect(body).To(ContainSubstring(series), fmt.Sprintf("no series %s", series))
	return 0
}
