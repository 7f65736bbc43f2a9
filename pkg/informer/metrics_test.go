package informer

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/leaninformer/leaninformer/internal/metricstest"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
	"github.com/leaninformer/leaninformer/pkg/metrics"

	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/codec"
)

// series says whether reg has a series of metric name whose labels
// include want, and the first one's value.
func series(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) (float64, bool) {
	t.Helper()
	if ms := find(t, reg, name, want); len(ms) > 0 {
		return ms[0].Value, true
	}
	return 0, false
}

// gathered is series' value, 0 when there is none.
func gathered(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	v, _ := series(t, reg, name, want)
	return v
}

// sumOf adds up every series of metric name whose labels include want.
func sumOf(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	return metricstest.Sum(find(t, reg, name, want))
}

func find(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) []metricstest.Series {
	t.Helper()
	ms, err := metricstest.Find(reg, name, want)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// registeredMetrics returns a metrics set registered on a registry of its
// own.
func registeredMetrics(t *testing.T) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	m := metrics.New()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func TestMetrics(t *testing.T) {
	s := newServer(t, 30)
	m, reg := registeredMetrics(t)
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
	// The watch opens after the list has synced the informer.
	eventually(t, "watches_total to count the watch", func() bool { return get("leaninformer_watches_total", cm) >= 1 })

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

// fakeProvider is a client-go InformerMetricsProvider that keeps what it is
// told.
type fakeProvider struct {
	rv, queued fakeGauge
	latency    fakeHistogram
}

type fakeGauge struct {
	mu  sync.Mutex
	v   float64
	max float64 // the largest value ever set
	set int
}

func (g *fakeGauge) Set(v float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.v, g.set, g.max = v, g.set+1, max(g.max, v)
}

func (g *fakeGauge) largest() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max
}

func (g *fakeGauge) get() (float64, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.v, g.set
}

type fakeHistogram struct {
	mu sync.Mutex
	v  []float64
}

func (h *fakeHistogram) Observe(v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.v = append(h.v, v)
}

func (h *fakeHistogram) values() []float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.v)
}

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
	if len(provider.latency.values()) == 0 {
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

// histogram reads one histogram series of a registry: its sample count and
// sum.
func histogram(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) (count uint64, sum float64) {
	t.Helper()
	if ms := find(t, reg, name, want); len(ms) > 0 {
		return ms[0].Count, ms[0].Sum
	}
	return 0, 0
}

// A restart's duration and the last-event timestamp are read from the
// informer's clock.
func TestRestartDurationComesFromTheClock(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	s := newServer(t, 30)
	// Each continue page (two of them: 30 objects in pages of 10) takes 2s.
	s.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Verb == "list" && req.Options.Continue != "" {
			clk.Step(2 * time.Second)
		}
		return nil
	})
	m, reg := registeredMetrics(t)
	inf := newInformer(s, 0, WithStrategy(ListWatch), WithPageSize(10), WithClock(clk), WithMetrics(m), WithSyncWarningAfter(0))
	run(t, inf)
	waitSynced(t, inf)

	cm := map[string]string{"group": "", "version": "v1", "resource": "configmaps"}
	if count, sum := histogram(t, reg, "leaninformer_restart_duration_seconds", cm); count != 1 || sum != 4 {
		t.Fatalf("restart_duration_seconds: %d samples summing to %vs, want one of 4s", count, sum)
	}
	at := func() float64 { return gathered(t, reg, "leaninformer_last_event_timestamp_seconds", cm) }
	if got, want := at(), float64(t0.Add(4*time.Second).Unix()); got != want {
		t.Fatalf("last_event_timestamp_seconds = %v after the restart, want %v", got, want)
	}
	clk.Step(time.Minute)
	mustCreate(t, s, configMap("later"))
	want := float64(t0.Add(4*time.Second + time.Minute).Unix())
	eventually(t, "the live event's timestamp", func() bool { return at() == want })
}

// The time a handler takes is measured on the informer's clock.
func TestHandlerLatencyComesFromTheClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	s := newServer(t, 4)
	m, reg := registeredMetrics(t)
	inf := newInformer(s, 0, WithStrategy(ListWatch), WithClock(clk), WithMetrics(m), WithSyncWarningAfter(0))
	rec := newRecorder()
	rec.onCall = func(call) { clk.Step(250 * time.Millisecond) }
	reg1, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf, reg1)

	labels := map[string]string{"resource": "configmaps", "handler": "github.com/leaninformer/leaninformer/pkg/informer.recorder"}
	eventually(t, "four calls measured", func() bool {
		count, _ := histogram(t, reg, "leaninformer_handler_duration_seconds", labels)
		return count == 4
	})
	if _, sum := histogram(t, reg, "leaninformer_handler_duration_seconds", labels); sum != 1 {
		t.Fatalf("handler_duration_seconds sums to %vs, want 4 calls of 250ms", sum)
	}
}

// client-go's processing latency (the time to handle one watcher event) is
// measured on the informer's clock too.
func TestClientGoProcessingLatencyComesFromTheClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	s := newServer(t, 3)
	name, err := toolscache.NewInformerName("leaninformer-latency-test")
	if err != nil {
		t.Fatal(err)
	}
	defer name.Release()
	provider := &fakeProvider{}
	inf := NewSharedIndexInformerWithOptions(s.ListerWatcher(), &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{
		Identifier:              name.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}),
		InformerMetricsProvider: provider,
	}, WithBackoff(fastBackoff), WithMetrics(nil), WithStrategy(ListWatch), WithClock(clk), WithSyncWarningAfter(0))
	// The transform runs while the store writer handles the list's page:
	// one second per object.
	if err := inf.SetTransform(func(obj any) (any, error) {
		clk.Step(time.Second)
		return obj, nil
	}); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	if got := provider.latency.values(); !slices.Contains(got, 3.0) {
		t.Fatalf("processing latencies %v, want the page of 3 objects at 3s", got)
	}
}

// TestShortWatchesAreWatchesDropped: leaninformer_short_watches_total counts
// watches that something closed within a second without an event, not
// those the informer ended itself, as it does when it stops.
func TestShortWatchesAreWatchesDropped(t *testing.T) {
	cm := map[string]string{"group": "", "version": "v1", "resource": "configmaps"}
	for _, dropped := range []bool{false, true} {
		s := newServer(t, 3)
		m, reg := registeredMetrics(t)
		inf := newInformer(s, 0, WithMetrics(m), WithStrategy(ListWatch))
		stop := run(t, inf)
		waitSynced(t, inf)
		eventually(t, "a watch", func() bool { return s.OpenWatches() == 1 })
		if dropped {
			s.CloseWatches()
			eventually(t, "the dropped watch counted", func() bool {
				return gathered(t, reg, "leaninformer_short_watches_total", cm) == 1
			})
		}
		stop()
		want := map[bool]float64{false: 0, true: 1}[dropped]
		if got := gathered(t, reg, "leaninformer_short_watches_total", cm); got != want {
			t.Errorf("dropped by the server: %v; short_watches_total = %v after the informer stopped, want %v", dropped, got, want)
		}
	}
}

// TestRestartEventsAreNotWatchEvents: leaninformer_watch_events_total
// counts live watch events only; a list's restart and pages are not counted
// (they were, under type="", for a while).
func TestRestartEventsAreNotWatchEvents(t *testing.T) {
	s := newServer(t, 30)
	m, reg := registeredMetrics(t)
	inf := newInformer(s, 0, WithMetrics(m), WithStrategy(ListWatch), WithPageSize(10))
	stop := run(t, inf)
	waitSynced(t, inf)
	stop()
	for _, series := range find(t, reg, "leaninformer_watch_events_total", nil) {
		if series.Value != 0 {
			t.Errorf("leaninformer_watch_events_total %v = %v after a list and no live event, want nothing", series.Labels, series.Value)
		}
	}
}

// TestCanceledListsAreNotFailures: a LIST cut short by the informer
// stopping is counted as canceled, not as an error, whether the client
// wraps the context's error (client-go's REST client returns a *url.Error)
// or the call is a context-less one the pipeline gave up waiting for.
func TestCanceledListsAreNotFailures(t *testing.T) {
	for _, contextLess := range []bool{false, true} {
		s := newServer(t, 3)
		listing := make(chan struct{}, 1)
		hung := make(chan struct{})
		s.SetFault(func(ctx context.Context, req fake.Request) error {
			if req.Verb != "list" {
				return nil
			}
			listing <- struct{}{}
			select {
			case <-ctx.Done():
			case <-hung:
			}
			return &url.Error{Op: "Get", URL: "https://apiserver/api/v1/configmaps", Err: context.Canceled}
		})
		m, reg := registeredMetrics(t)
		lw := toolscache.ListerWatcher(s.ListerWatcher())
		if contextLess {
			lw = &toolscache.ListWatch{ListFunc: s.ListerWatcher().List, WatchFunc: s.ListerWatcher().Watch} //nolint:staticcheck // SA1019: the context-less path is under test
		}
		inf := NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{}, WithMetrics(m), WithStrategy(ListWatch), WithBackoff(fastBackoff))
		stop := run(t, inf)
		<-listing
		stop()
		close(hung)
		for result, want := range map[string]float64{"canceled": 1, "error": 0} {
			if got := gathered(t, reg, "leaninformer_list_requests_total", map[string]string{"result": result}); got != want {
				t.Errorf("context-less: %v; list_requests_total{result=%q} = %v after the informer stopped during its LIST, want %v", contextLess, result, got, want)
			}
		}
	}
}

// client-go's FIFO drops a live object its transform fails on before its
// store sees it, so its store resourceVersion gauge stays where the store
// is; ours must not move it either.
func TestClientGoStoreResourceVersionStaysWithTheStore(t *testing.T) {
	s := newServer(t, 3)
	failBad := func(obj any) (any, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == "bad" {
			return nil, errors.New("refused")
		}
		return obj, nil
	}
	gauges := map[string]*fakeProvider{}
	informers := map[string]toolscache.SharedIndexInformer{}
	for _, who := range []string{"ours", "client-go"} {
		name, err := toolscache.NewInformerName("leaninformer-rv-test-" + who)
		if err != nil {
			t.Fatal(err)
		}
		defer name.Release()
		gauges[who] = &fakeProvider{}
		opts := toolscache.SharedIndexInformerOptions{
			Identifier:              name.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}),
			InformerMetricsProvider: gauges[who],
		}
		if who == "ours" {
			informers[who] = NewSharedIndexInformerWithOptions(s.ListerWatcher(), &corev1.ConfigMap{}, opts, WithBackoff(fastBackoff), WithMetrics(nil))
		} else {
			informers[who] = toolscache.NewSharedIndexInformerWithOptions(s.ListerWatcher(), &corev1.ConfigMap{}, opts)
		}
		if err := informers[who].SetTransform(failBad); err != nil {
			t.Fatal(err)
		}
		run(t, informers[who])
	}
	waitSynced(t, informers["ours"], informers["client-go"])
	mustCreate(t, s, configMap("good"))
	good := s.ResourceVersion()
	mustCreate(t, s, configMap("bad"))
	for who, inf := range informers {
		eventually(t, who+" past the bad event", func() bool { return inf.LastSyncResourceVersion() == s.ResourceVersion() })
	}
	for who, p := range gauges {
		if v, _ := p.rv.get(); formatFloat(v) != good {
			t.Errorf("%s: store resourceVersion gauge %s after an event the transform refused, want %s (the store's)", who, formatFloat(v), good)
		}
	}
}

// leaninformer_watch_events_total counts every live event handled, one whose
// object could not be stored included (docs/observability.md), which
// leaninformer_dropped_objects_total counts as well.
func TestDroppedEventsAreWatchEventsAndDrops(t *testing.T) {
	s := newServer(t, 3)
	m, reg := registeredMetrics(t)
	inf := newInformer(s, 0, WithMetrics(m))
	if err := inf.SetTransform(func(obj any) (any, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == "bad" {
			return nil, errors.New("refused")
		}
		return obj, nil
	}); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	mustCreate(t, s, configMap("bad"))
	mustCreate(t, s, configMap("later"))
	eventually(t, "both events", func() bool { return inf.LastSyncResourceVersion() == s.ResourceVersion() })
	cm := map[string]string{"resource": "configmaps"}
	if got := gathered(t, reg, "leaninformer_dropped_objects_total", cm); got != 1 {
		t.Errorf("dropped_objects_total = %v, want 1", got)
	}
	if got := gathered(t, reg, "leaninformer_watch_events_total", map[string]string{"resource": "configmaps", "type": "added"}); got != 2 {
		t.Errorf("watch_events_total{added} = %v after a dropped and a stored add, want 2", got)
	}
}

// decodeRefuser is a codec that cannot decode the ConfigMap named
// "undecodable", as a broken codec would fail.
type decodeRefuser struct{ cache.Codec }

func (d decodeRefuser) Decode(data []byte) (any, error) {
	obj, err := d.Codec.Decode(data)
	if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == "undecodable" {
		return nil, errors.New("cannot decode")
	}
	return obj, err
}

// An added object the store holds counts in store_objects even when its
// notification cannot be decoded (only a broken codec fails there).
func TestStoreObjectsCountsObjectsWhoseNotificationFailed(t *testing.T) {
	s := newServer(t, 3)
	m, reg := registeredMetrics(t)
	inf := newInformer(s, 0, WithMetrics(m), WithEncodedStore())
	inf.indexer = cache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
		cache.WithCodec(decodeRefuser{codec.New()}))
	run(t, inf)
	waitSynced(t, inf)
	mustCreate(t, s, configMap("undecodable"))
	eventually(t, "the add", func() bool { return inf.LastSyncResourceVersion() == s.ResourceVersion() })
	stored := len(inf.GetStore().ListKeys())
	if got := gathered(t, reg, "leaninformer_store_objects", map[string]string{"resource": "configmaps"}); got != float64(stored) || stored != 4 {
		t.Fatalf("store_objects = %v with %d objects stored, want 4 and 4", got, stored)
	}
}

// leaninformer_restarts_total counts the full lists begun, as
// docs/observability.md says: a restart is counted when its first page
// arrives, and again, under the failure's reason, each time a failure after
// that starts it over from its first page. A request retried where it
// failed, or a first page that failed, begins nothing. So restarts_total
// less the restart_duration_seconds count is the restarts abandoned.
func TestRestartsCountListsBegun(t *testing.T) {
	throttled := apierrors.NewTooManyRequests("slow down", 0)
	internal := apierrors.NewInternalError(errors.New("etcd hiccup"))
	for _, tc := range []struct {
		name string
		// fail says whether the n-th LIST (from 1) of the initial list,
		// continue pages included, fails, and with what.
		fail func(n int, continued bool) error
		want map[string]float64
	}{
		{"no fault", func(int, bool) error { return nil }, map[string]float64{"Initial": 1}},
		{"a continue page throttled, then retried", func(n int, continued bool) error {
			if continued && n == 2 {
				return throttled
			}
			return nil
		}, map[string]float64{"Initial": 1}},
		{"the first page fails, then the list starts over", func(n int, _ bool) error {
			if n == 1 {
				return internal
			}
			return nil
		}, map[string]float64{"Initial": 1}},
		{"a continue page fails, then the list starts over", func(n int, continued bool) error {
			if continued && n == 2 {
				return internal
			}
			return nil
		}, map[string]float64{"Initial": 1, "Error": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, 30)
			var mu sync.Mutex
			lists := 0
			s.SetFault(func(_ context.Context, req fake.Request) error {
				if req.Verb != "list" {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				lists++
				return tc.fail(lists, req.Options.Continue != "")
			})
			m, reg := registeredMetrics(t)
			inf := newInformer(s, 0, WithMetrics(m), WithStrategy(ListWatch), WithPageSize(10))
			run(t, inf)
			waitSynced(t, inf)
			cm := map[string]string{"group": "", "version": "v1", "resource": "configmaps"}
			var total float64
			for reason, want := range tc.want {
				labels := map[string]string{"reason": reason}
				for k, v := range cm {
					labels[k] = v
				}
				if got := gathered(t, reg, "leaninformer_restarts_total", labels); got != want {
					t.Errorf("restarts_total{reason=%q} = %v, want %v", reason, got, want)
				}
				total += want
			}
			if got := sumOf(t, reg, "leaninformer_restarts_total", cm); got != total {
				t.Errorf("restarts_total = %v over every reason, want %v", got, total)
			}
			if got := gathered(t, reg, "leaninformer_restart_duration_seconds", cm); got != 1 {
				t.Errorf("restart_duration_seconds count = %v, want the 1 restart completed", got)
			}
		})
	}
}

// The informers of one resource (a multi-namespace cache's, one per
// namespace; a typed and a metadata-only one) share its gauge series: one
// stopping takes its share back and leaves the others' figures; the last
// one stopping (controller-runtime's RemoveInformer) takes the resource's
// gauges off /metrics, where a synced of 0 and a last event that never
// moves again would stand for an informer that no longer exists.
func TestGaugesOfAResourceEndWithItsLastInformer(t *testing.T) {
	m, reg := registeredMetrics(t)
	a, b := newServer(t, 3), newServer(t, 5) // two namespaces, say
	infA, infB := newInformer(a, 0, WithMetrics(m)), newInformer(b, 0, WithMetrics(m))
	stopA, stopB := run(t, infA), run(t, infB)
	waitSynced(t, infA, infB)
	mustCreate(t, b, configMap("live"))
	cm := map[string]string{"group": "", "version": "v1", "resource": "configmaps"}
	get := func(name string) (float64, bool) { return series(t, reg, name, cm) }
	eventually(t, "the live event", func() bool { v, _ := get("leaninformer_store_objects"); return v == 9 })
	gauges := []string{
		"leaninformer_store_objects", "leaninformer_restart_buffer_objects", "leaninformer_synced",
		"leaninformer_last_resource_version", "leaninformer_last_event_timestamp_seconds",
	}
	for _, name := range gauges {
		if _, ok := get(name); !ok {
			t.Fatalf("%s: no series while the informers run", name)
		}
	}

	stopA()
	if v, _ := get("leaninformer_store_objects"); v != 6 {
		t.Errorf("store_objects = %v with one informer stopped, want the other's 6", v)
	}
	if v, _ := get("leaninformer_synced"); v != 1 {
		t.Errorf("synced = %v with one informer stopped, want 1", v)
	}
	if _, ok := get("leaninformer_last_event_timestamp_seconds"); !ok {
		t.Error("last_event_timestamp_seconds gone while an informer of the resource runs")
	}

	stopB()
	for _, name := range gauges {
		if v, ok := get(name); ok {
			t.Errorf("%s = %v after the resource's last informer stopped, want no series", name, v)
		}
	}

	// A new informer of the resource shows its figures again.
	infC := newInformer(a, 0, WithMetrics(m))
	run(t, infC)
	waitSynced(t, infC)
	if v, _ := get("leaninformer_store_objects"); v != 3 {
		t.Errorf("store_objects = %v for a new informer, want 3", v)
	}
	if v, _ := get("leaninformer_synced"); v != 1 {
		t.Errorf("synced = %v for a new informer, want 1", v)
	}
}

// A handler's pending series ends with the handler: removed
// (RemoveEventHandler), or its informer stopped. Handlers of one type on
// two informers of a resource share the series, and the first to go leaves
// it to the other.
func TestHandlerPendingSeriesEndWithTheHandler(t *testing.T) {
	m, reg := registeredMetrics(t)
	s := newServer(t, 3)
	infA, infB := newInformer(s, 0, WithMetrics(m)), newInformer(s, 0, WithMetrics(m))
	recA, recB := newRecorder(), newRecorder()
	var funcsCalls sync.WaitGroup
	funcsCalls.Add(3)
	funcs := toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { funcsCalls.Done() }}
	funcsReg, err := infA.AddEventHandler(funcs)
	if err != nil {
		t.Fatal(err)
	}
	for inf, rec := range map[*SharedIndexInformer]*recorder{infA: recA, infB: recB} {
		if _, err := inf.AddEventHandler(rec); err != nil {
			t.Fatal(err)
		}
	}
	stopA, stopB := run(t, infA), run(t, infB)
	waitSynced(t, infA, infB)
	eventually(t, "initial lists delivered", func() bool { return recA.len() == 3 && recB.len() == 3 })
	funcsCalls.Wait()

	cm := map[string]string{"group": "", "version": "v1", "resource": "configmaps"}
	handler := func(name string) map[string]string {
		out := map[string]string{"handler": name}
		for k, v := range cm {
			out[k] = v
		}
		return out
	}
	recorderLabels := handler("github.com/leaninformer/leaninformer/pkg/informer.recorder")
	funcsLabels := handler(handlerName(funcs))
	pending := func(labels map[string]string) (float64, bool) {
		return series(t, reg, "leaninformer_handler_pending_notifications", labels)
	}
	for _, l := range []map[string]string{recorderLabels, funcsLabels} {
		if _, ok := pending(l); !ok {
			t.Fatalf("no pending series for %s while it is registered", l["handler"])
		}
	}

	if err := infA.RemoveEventHandler(funcsReg); err != nil {
		t.Fatal(err)
	}
	<-funcsReg.(*listener).ShutdownChan()
	if v, ok := pending(funcsLabels); ok {
		t.Errorf("pending{%s} = %v after RemoveEventHandler, want no series", funcsLabels["handler"], v)
	}

	stopA()
	if _, ok := pending(recorderLabels); !ok {
		t.Error("pending series of the recorder handlers gone while informer B's runs")
	}
	mustCreate(t, s, configMap("live"))
	eventually(t, "B's live notification", func() bool { return recB.len() == 4 })
	eventually(t, "B's pending notifications to drain", func() bool { v, _ := pending(recorderLabels); return v == 0 })

	stopB()
	if v, ok := pending(recorderLabels); ok {
		t.Errorf("pending{recorder} = %v after both informers stopped, want no series", v)
	}
}

// Informers of one resource share last_resource_version: one whose events
// come at an older resourceVersion than the other's (its watch lags, or its
// relist listed before the other's last event) must not move it back. Two
// fake servers stand for the two streams: b's resourceVersions run ahead of
// a's.
func TestLastResourceVersionIsTheHighestOfTheResourcesInformers(t *testing.T) {
	m, reg := registeredMetrics(t)
	a, b := newServer(t, 3), newServer(t, 50)
	infA, infB := newInformer(a, 0, WithMetrics(m)), newInformer(b, 0, WithMetrics(m))
	run(t, infA)
	stopB := run(t, infB)
	waitSynced(t, infA, infB)
	cm := map[string]string{"group": "", "version": "v1", "resource": "configmaps"}
	rv := func() float64 { return gathered(t, reg, "leaninformer_last_resource_version", cm) }

	mustCreate(t, b, configMap("ahead"))
	ahead, _ := strconv.ParseFloat(b.ResourceVersion(), 64)
	eventually(t, "B's event", func() bool { return rv() == ahead })

	// A applies two events older than B's; once its store holds the second,
	// the first has been recorded.
	mustCreate(t, a, configMap("behind-1"))
	mustCreate(t, a, configMap("behind-2"))
	behind, _ := strconv.ParseFloat(a.ResourceVersion(), 64)
	eventually(t, "A's events", func() bool {
		_, ok, _ := infA.GetStore().GetByKey(key("behind-2"))
		return ok
	})
	if got := rv(); got != ahead {
		t.Errorf("last_resource_version = %v after A applied older events, want B's %v", got, ahead)
	}

	// B stops: A's figure is the resource's.
	stopB()
	eventually(t, "A's resourceVersion once B stopped", func() bool { return rv() == behind })
}
