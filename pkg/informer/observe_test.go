package informer

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// gathered reads one series of a registry: the value of metric name whose
// labels include want.
func gathered(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			return value(m)
		}
	}
	return 0
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func TestMetrics(t *testing.T) {
	s := newServer(t, 30)
	m := metrics.New()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	inf := newInformer(s, 0, WithMetrics(m), WithStrategy(ListWatch), WithPageSize(10))
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	stop := run(t, inf)
	waitSynced(t, inf)
	eventually(t, "initial list delivered", func() bool { return rec.len() == 30 })

	cm := map[string]string{"group": "", "version": "v1", "resource": "configmaps"}
	with := func(k, v string) map[string]string {
		out := map[string]string{k: v}
		for a, b := range cm {
			out[a] = b
		}
		return out
	}
	get := func(name string, labels map[string]string) float64 { return gathered(t, reg, name, labels) }
	if got := get("leaninformer_store_objects", cm); got != 30 {
		t.Fatalf("store_objects = %v, want 30", got)
	}
	if got := get("leaninformer_restarts_total", with("reason", "Initial")); got != 1 {
		t.Fatalf("restarts_total{Initial} = %v, want 1", got)
	}
	if got := get("leaninformer_list_pages_total", with("strategy", "ListWatch")); got != 3 {
		t.Fatalf("list_pages_total = %v, want 3 pages of 10", got)
	}
	if got := get("leaninformer_list_requests_total", with("result", "success")); got != 3 {
		t.Fatalf("list_requests_total{success} = %v, want 3", got)
	}
	if got := get("leaninformer_synced", cm); got != 1 {
		t.Fatalf("synced = %v, want 1", got)
	}
	if got := get("leaninformer_watches_total", cm); got < 1 {
		t.Fatalf("watches_total = %v, want at least 1", got)
	}

	mustCreate(t, s, configMap("x"))
	mustDelete(t, s, "cm-0000")
	eventually(t, "live events", func() bool { return rec.len() == 32 })
	if got := get("leaninformer_store_objects", cm); got != 30 {
		t.Fatalf("store_objects = %v after a create and a delete, want 30", got)
	}
	if got := get("leaninformer_watch_events_total", with("type", "added")); got != 1 {
		t.Fatalf("watch_events_total{added} = %v, want 1", got)
	}
	if got, want := get("leaninformer_last_resource_version", cm), s.ResourceVersion(); got == 0 || want != formatFloat(got) {
		t.Fatalf("last_resource_version = %v, want %s", got, want)
	}

	forceRelist(t, s, func() { mustUpdate(t, s, configMap("cm-0001", "changed", "yes")) })
	eventually(t, "relist", func() bool { return get("leaninformer_restarts_total", with("reason", "Expired")) == 1 })
	eventually(t, "relist delivered", func() bool { return rec.len() == 62 })
	if got := get("leaninformer_relist_reused_objects_total", cm); got != 29 {
		t.Fatalf("relist_reused_objects_total = %v, want the 29 unchanged objects", got)
	}
	handler := with("handler", "github.com/leaninformer/leaninformer/pkg/informer.recorder")
	eventually(t, "pending notifications to drain", func() bool { return get("leaninformer_handler_pending_notifications", handler) == 0 })
	if got := get("leaninformer_handler_duration_seconds", handler); got != 62 {
		t.Fatalf("handler_duration_seconds count = %v, want one per call (62)", got)
	}
	if got := get("leaninformer_restart_duration_seconds", cm); got != 2 {
		t.Fatalf("restart_duration_seconds count = %v, want 2", got)
	}

	stop()
	if got := get("leaninformer_store_objects", cm); got != 0 {
		t.Fatalf("store_objects = %v after stop, want the informer's share gone", got)
	}
	if got := get("leaninformer_synced", cm); got != 0 {
		t.Fatalf("synced = %v after stop, want 0", got)
	}
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func TestResourceLabels(t *testing.T) {
	unstructuredDeployment := &unstructured.Unstructured{}
	unstructuredDeployment.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	metadataOnly := &metav1.PartialObjectMetadata{}
	metadataOnly.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1alpha1", Kind: "Widget"})
	type notInScheme struct{ corev1.ConfigMap }
	for _, tc := range []struct {
		obj  runtime.Object
		want schema.GroupVersionResource
	}{
		{&corev1.ConfigMap{}, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
		{&networkingv1.NetworkPolicy{}, schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}},
		{&networkingv1.Ingress{}, schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}},
		{unstructuredDeployment, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
		{metadataOnly, schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}},
		{&notInScheme{}, schema.GroupVersionResource{Resource: "notinschemes"}},
		{nil, schema.GroupVersionResource{Resource: "unknown"}},
	} {
		if got := resourceOf(tc.obj, defaultScheme); got != tc.want {
			t.Errorf("resourceOf(%T) = %v, want %v", tc.obj, got, tc.want)
		}
	}
}

// logBuffer collects log lines.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) logger() klog.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.lines = append(b.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (b *logBuffer) contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// fakeProvider is a client-go InformerMetricsProvider that keeps what it is
// told.
type fakeProvider struct {
	rv, queued fakeGauge
	latency    fakeHistogram
}

type fakeGauge struct {
	mu  sync.Mutex
	v   float64
	set int
}

func (g *fakeGauge) Set(v float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.v, g.set = v, g.set+1
}

func (g *fakeGauge) get() (float64, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.v, g.set
}

type fakeHistogram struct{ n atomic.Int64 }

func (h *fakeHistogram) Observe(float64) { h.n.Add(1) }

func (p *fakeProvider) NewQueuedItemMetric(toolscache.InformerNameAndResource) toolscache.GaugeMetric {
	return &p.queued
}

func (p *fakeProvider) NewProcessingLatencyMetric(toolscache.InformerNameAndResource) toolscache.HistogramMetric {
	return &p.latency
}

func (p *fakeProvider) NewStoreResourceVersionMetric(toolscache.InformerNameAndResource) toolscache.GaugeMetric {
	return &p.rv
}

func TestClientGoInformerMetricsProvider(t *testing.T) {
	s := newServer(t, 5)
	name, err := toolscache.NewInformerName("leaninformer-test")
	if err != nil {
		t.Fatal(err)
	}
	defer name.Release()
	provider := &fakeProvider{}
	inf := NewSharedIndexInformerWithOptions(s.ListerWatcher(), &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{
		Identifier:              name.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}),
		InformerMetricsProvider: provider,
	}, WithBackoff(fastBackoff), WithMetrics(nil))
	run(t, inf)
	waitSynced(t, inf)
	mustCreate(t, s, configMap("x"))
	eventually(t, "the store resourceVersion gauge", func() bool {
		v, _ := provider.rv.get()
		return formatFloat(v) == s.ResourceVersion()
	})
	if _, n := provider.queued.get(); n == 0 {
		t.Fatal("queued items gauge never set")
	}
	if provider.latency.n.Load() == 0 {
		t.Fatal("processing latency never observed")
	}

	// Without an Identifier, nothing is published (as in client-go).
	quiet := &fakeProvider{}
	inf2 := NewSharedIndexInformerWithOptions(s.ListerWatcher(), &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{InformerMetricsProvider: quiet}, WithMetrics(nil))
	run(t, inf2)
	waitSynced(t, inf2)
	if _, n := quiet.rv.get(); n != 0 {
		t.Fatal("metrics published without an Identifier")
	}
}

func TestSyncStatusSaysWhyNotSynced(t *testing.T) {
	s := newServer(t, 3)
	var forbid atomic.Bool
	forbid.Store(true)
	s.SetFault(func(_ context.Context, req fake.Request) error {
		if forbid.Load() {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New(`User "bob" cannot list resource "configmaps"`))
		}
		return nil
	})
	buf := &logBuffer{}
	inf := newInformer(s, 0, WithStrategy(ListWatch), WithSyncWarningAfter(20*time.Millisecond))
	if st := inf.SyncStatus(); st.Running || st.Synced {
		t.Fatalf("status before Run: %+v", st)
	}
	runCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), buf.logger()))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(runCtx) }()
	defer func() { cancel(); <-done }()

	eventually(t, "a failure to be recorded", func() bool { return inf.SyncStatus().Failures > 0 })
	st := inf.SyncStatus()
	if st.Synced || !st.Running || !apierrors.IsForbidden(st.LastError) || !strings.Contains(st.Reason, "RBAC") {
		t.Fatalf("status while forbidden: %+v", st)
	}
	if !strings.Contains(st.String(), "forbidden by RBAC") {
		t.Fatalf("status string %q does not say why", st.String())
	}
	eventually(t, "the watchdog's log line", func() bool { return buf.contains("Informer has not synced yet") && buf.contains("forbidden by RBAC") })

	forbid.Store(false)
	waitSynced(t, inf)
	if st := inf.SyncStatus(); !st.Synced || st.LastError != nil || st.Failures != 0 {
		t.Fatalf("status after sync: %+v", st)
	}
	eventually(t, "the synced log line", func() bool { return buf.contains("Informer synced") })
}
