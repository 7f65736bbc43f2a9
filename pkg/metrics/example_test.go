package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// A plain client-go program registers the informers' metrics once, on the
// registry its /metrics endpoint serves (prometheus.DefaultRegisterer and
// promhttp.Handler() in most programs; a registry of its own here). Every
// informer records into metrics.Default unless told otherwise, labelled by
// its resource. controller-runtime programs skip this: informer.NewCache
// registers them on the manager's registry.
func ExampleMetrics_Register() {
	reg := prometheus.NewRegistry()
	if err := metrics.Default.Register(reg); err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux() // or http.DefaultServeMux
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	server := fake.NewServer(&corev1.ConfigMapList{}) // in a program, the API server
	defer server.Close()
	for _, name := range []string{"a", "b", "c"} {
		_, _ = server.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}
	inf := informer.NewSharedIndexInformer(server.ListerWatcher(), &corev1.ConfigMap{}, 0, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced)

	for _, line := range scrape(mux, "leaninformer_restarts_total", "leaninformer_store_objects", "leaninformer_synced") {
		fmt.Println(line)
	}
	cancel()
	<-done
	// Output:
	// leaninformer_restarts_total{group="",reason="Initial",resource="configmaps",version="v1"} 1
	// leaninformer_store_objects{group="",resource="configmaps",version="v1"} 3
	// leaninformer_synced{group="",resource="configmaps",version="v1"} 1
}

// A registry holds one set of leaninformer metrics: registering Default
// again does nothing, and registering a second set (one made with New for
// some informers, say) says which names are taken. Give such informers
// their set with informer.WithMetrics and register it on another registry.
func ExampleMetrics_Register_secondSet() {
	reg := prometheus.NewRegistry()
	fmt.Println(metrics.Default.Register(reg))
	fmt.Println(metrics.Default.Register(reg))

	err := metrics.New().Register(reg)
	summary, names, _ := strings.Cut(fmt.Sprint(err), ": ")
	fmt.Println(summary)
	fmt.Println("first taken:", strings.Split(names, ", ")[0])
	fmt.Println(metrics.New().Register(prometheus.NewRegistry()))
	// Output:
	// <nil>
	// <nil>
	// 31 metrics are registered already, by collectors of another set (is another metrics set, or Default, registered on this registerer?)
	// first taken: leaninformer_list_requests_total
	// <nil>
}

// scrape gets h's /metrics as a Prometheus server would and returns its
// sample lines of the named metrics, sorted by name as the exposition is.
func scrape(h http.Handler, names ...string) []string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var lines []string
	for sc := bufio.NewScanner(rec.Body); sc.Scan(); {
		for _, name := range names {
			if strings.HasPrefix(sc.Text(), name+"{") || strings.HasPrefix(sc.Text(), name+" ") {
				lines = append(lines, sc.Text())
			}
		}
	}
	return lines
}
