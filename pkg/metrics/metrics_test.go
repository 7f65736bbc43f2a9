package metrics

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leaninformer/leaninformer/internal/metricstest"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func TestRegisterTwiceOnTheSameRegistry(t *testing.T) {
	m := New()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(reg); err != nil {
		t.Fatalf("registering the same set again: %v", err)
	}
	err := New().Register(reg)
	if err == nil {
		t.Fatal("registering a second set with the same names: no error")
	}
	// One line that says what clashed, naming every metric.
	msg := err.Error()
	if n := len(m.Collectors()); strings.Count(msg, "\n") != 0 || !strings.Contains(msg, fmt.Sprintf("%d metrics are registered already", n)) {
		t.Errorf("error does not say in one line that the %d metrics are taken: %q", n, msg)
	}
	for _, name := range []string{"leaninformer_list_requests_total", "leaninformer_handler_pending_notifications"} {
		if !strings.Contains(msg, name) {
			t.Errorf("error does not name %s: %q", name, msg)
		}
	}
}

// A collector of another kind under one of our names is a different error
// from a second set, and is named too.
func TestRegisterBesideAForeignCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	foreign := prometheus.NewGauge(prometheus.GaugeOpts{Name: "leaninformer_list_requests_total", Help: "not ours"})
	reg.MustRegister(foreign)
	err := New().Register(reg)
	if err == nil || !strings.Contains(err.Error(), "leaninformer_list_requests_total") {
		t.Fatalf("Register beside a foreign collector of one of our names: %v", err)
	}
}

func TestGaugesSumOverInformersOfAResource(t *testing.T) {
	m := New()
	a, b := m.Informer(configMaps), m.Informer(configMaps)
	a.RestartDone(time.Second, 10, 0)
	b.RestartDone(time.Second, 5, 0)
	store := m.storeObjects.With(a.labels)
	synced := m.synced.With(a.labels)
	if got := testutil.ToFloat64(store); got != 15 {
		t.Fatalf("store_objects = %v, want 15 (10 + 5)", got)
	}
	a.AddStoreObjects(-3)
	if got := testutil.ToFloat64(store); got != 12 {
		t.Fatalf("store_objects = %v after a delete, want 12", got)
	}
	if got := testutil.ToFloat64(synced); got != 2 {
		t.Fatalf("synced = %v, want 2", got)
	}
	a.Close()
	if got := testutil.ToFloat64(store); got != 5 {
		t.Fatalf("store_objects = %v after one informer stopped, want its share gone (5)", got)
	}
	if got := testutil.ToFloat64(synced); got != 1 {
		t.Fatalf("synced = %v after one informer stopped, want 1", got)
	}
}

func TestRestartBufferGauge(t *testing.T) {
	m := New()
	r := m.Informer(configMaps)
	buffer := m.bufferObjects.With(r.labels)
	r.RestartStarted("Initial")
	r.Page("ListWatch", 500)
	r.Page("ListWatch", 1000)
	if got := testutil.ToFloat64(buffer); got != 1000 {
		t.Fatalf("restart_buffer_objects = %v, want 1000", got)
	}
	r.RestartStarted("ExpiredContinue") // the half-filled buffer is dropped
	if got := testutil.ToFloat64(buffer); got != 0 {
		t.Fatalf("restart_buffer_objects = %v after a new restart, want 0", got)
	}
	r.Page("ListWatch", 200)
	r.RestartDone(time.Second, 200, 150)
	if got := testutil.ToFloat64(buffer); got != 0 {
		t.Fatalf("restart_buffer_objects = %v after the swap, want 0", got)
	}
	if got := testutil.ToFloat64(m.reusedObjects.With(r.labels)); got != 150 {
		t.Fatalf("relist_reused_objects_total = %v, want 150", got)
	}
	if got := testutil.ToFloat64(m.restarts.With(r.with("reason", "Initial"))); got != 1 {
		t.Fatalf("restarts_total{reason=Initial} = %v, want 1", got)
	}
}

func TestHandlerPendingComesBackToZero(t *testing.T) {
	m := New()
	h := m.Informer(configMaps).Handler("pkg.Handler")
	pending := m.handlerPending.With(prometheus.Labels{"group": "", "version": "v1", "resource": "configmaps", "handler": "pkg.Handler"})
	h.Queued(3)
	h.Delivered(time.Millisecond)
	if got := testutil.ToFloat64(pending); got != 2 {
		t.Fatalf("pending = %v, want 2", got)
	}
	h.Close()
	if got := testutil.ToFloat64(pending); got != 0 {
		t.Fatalf("pending = %v after Close, want 0", got)
	}
}

func TestNilRecordersRecordNothing(t *testing.T) {
	var m *Metrics
	r := m.Informer(configMaps)
	r.RestartStarted("Initial")
	r.Event("added", "12", time.Now())
	r.Handler("h").Queued(1)
	r.Close()
}

func TestEventRecordsTheTimeItIsGiven(t *testing.T) {
	m := New()
	r := m.Informer(configMaps)
	at := time.Date(2030, 5, 6, 7, 8, 9, 500_000_000, time.UTC)
	r.Event("added", "42", at)
	if got, want := testutil.ToFloat64(m.lastEvent.With(r.labels)), float64(at.UnixNano())/1e9; got != want {
		t.Fatalf("last_event_timestamp_seconds = %v, want %v", got, want)
	}
	if got := testutil.ToFloat64(m.resourceVersion.With(r.labels)); got != 42 {
		t.Fatalf("last_resource_version = %v, want 42", got)
	}
}

func TestParseResourceVersion(t *testing.T) {
	for rv, want := range map[string]float64{"42": 42, "1234567890123456789": 567890123456789} {
		if got, ok := ParseResourceVersion(rv); !ok || got != want {
			t.Errorf("ParseResourceVersion(%q) = %v, %v; want %v", rv, got, ok, want)
		}
	}
	for _, rv := range []string{"", "abc"} {
		if _, ok := ParseResourceVersion(rv); ok {
			t.Errorf("ParseResourceVersion(%q) ok, want not a number", rv)
		}
	}
}

// The series a live event moves are looked up once and then reused; the
// counts must still land on the right type, and a series must not show
// before it is first moved.
func TestEventSeriesAreCountedByType(t *testing.T) {
	m := New()
	r := m.Informer(configMaps)
	if n := testutil.CollectAndCount(m.watchEvents); n != 0 {
		t.Fatalf("watch_events_total has %d series before any event, want 0", n)
	}
	if n := testutil.CollectAndCount(m.lastEvent); n != 0 {
		t.Fatalf("last_event_timestamp_seconds has %d series before any event, want 0", n)
	}
	for i, typ := range []string{"added", "modified", "modified", "deleted", "modified"} {
		r.Event(typ, strconv.Itoa(10+i), time.Now())
	}
	for typ, want := range map[string]float64{"added": 1, "modified": 3, "deleted": 1} {
		if got := testutil.ToFloat64(m.watchEvents.With(r.with("type", typ))); got != want {
			t.Errorf("watch_events_total{type=%q} = %v, want %v", typ, got, want)
		}
	}
	if got := testutil.ToFloat64(m.resourceVersion.With(r.labels)); got != 14 {
		t.Errorf("last_resource_version = %v, want 14", got)
	}
	r.AddStoreObjects(5)
	r.AddStoreObjects(-2)
	if got := testutil.ToFloat64(m.storeObjects.With(r.labels)); got != 3 {
		t.Errorf("store_objects = %v, want 3", got)
	}
	r.Close()
	if got := testutil.ToFloat64(m.storeObjects.With(r.labels)); got != 0 {
		t.Errorf("store_objects after Close = %v, want 0", got)
	}
}

// BenchmarkRecorderEvent is what the metrics cost an informer per live
// event (its Event and its store count).
func BenchmarkRecorderEvent(b *testing.B) {
	r := New().Informer(configMaps)
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		r.Event("modified", "123456", at)
		r.AddStoreObjects(1)
	}
}

// The last recorder of a resource to close deletes its gauge series; one
// that closes while another still writes them leaves them, and one that
// never wrote does not count.
func TestGaugesOfAResourceEndWithItsLastRecorder(t *testing.T) {
	m := New()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n, err := testutil.GatherAndCount(reg, "leaninformer_store_objects", "leaninformer_synced",
			"leaninformer_last_event_timestamp_seconds", "leaninformer_shard_informers")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b, idle := m.Informer(configMaps), m.Informer(configMaps), m.Informer(configMaps)
	a.RestartDone(time.Second, 3, 0)
	a.ResourceVersion("7", time.Unix(10, 0))
	a.ShardFiltering("server")
	b.RestartDone(time.Second, 2, 0)
	if n := count(); n != 4 {
		t.Fatalf("%d gauge series, want 4", n)
	}
	idle.Close()
	a.Close()
	if n := count(); n != 4 {
		t.Fatalf("%d gauge series with one recorder left, want 4", n)
	}
	if got := testutil.ToFloat64(m.storeObjects.With(b.labels)); got != 2 {
		t.Fatalf("store_objects = %v, want the remaining recorder's 2", got)
	}
	b.Close()
	if n := count(); n != 0 {
		t.Fatalf("%d gauge series after the last recorder closed, want none", n)
	}
}

// gauge is the value of the series of gauge name in reg with exactly the
// labels want, and whether there is one.
func gauge(t *testing.T, reg *prometheus.Registry, name string, want prometheus.Labels) (float64, bool) {
	t.Helper()
	series, err := metricstest.Find(reg, name, want)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range series {
		if len(s.Labels) == len(want) {
			return s.Value, true
		}
	}
	return 0, false
}

func registered(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	m := New()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// A handler's pending series ends with the last handler it describes: the
// handler label is the handler's type, so two informers of a resource (a
// multi-namespace cache's) running handlers of one type share a series,
// and one of them closing must leave it to the other.
func TestHandlerPendingSeriesEndWithTheirLastHandler(t *testing.T) {
	m, reg := registered(t)
	const pending = "leaninformer_handler_pending_notifications"
	labels := func(handler string) prometheus.Labels {
		return prometheus.Labels{"group": "", "version": "v1", "resource": "configmaps", "handler": handler}
	}
	a, b := m.Informer(configMaps), m.Informer(configMaps)
	ha, hb, other := a.Handler("pkg.Handler"), b.Handler("pkg.Handler"), a.Handler("pkg.Other")
	ha.Queued(2)
	hb.Queued(3)
	if v, ok := gauge(t, reg, pending, labels("pkg.Handler")); !ok || v != 5 {
		t.Fatalf("pending{pkg.Handler} = %v (series: %v), want 5", v, ok)
	}

	other.Close()
	if v, ok := gauge(t, reg, pending, labels("pkg.Other")); ok {
		t.Errorf("pending{pkg.Other} = %v after its only handler closed, want no series", v)
	}
	ha.Close()
	ha.Close() // a second Close is a no-op, not a second departure
	if v, ok := gauge(t, reg, pending, labels("pkg.Handler")); !ok || v != 3 {
		t.Fatalf("pending{pkg.Handler} = %v (series: %v) with one handler left, want its 3", v, ok)
	}
	hb.Delivered(time.Millisecond)
	if v, _ := gauge(t, reg, pending, labels("pkg.Handler")); v != 2 {
		t.Fatalf("pending{pkg.Handler} = %v after a delivery, want 2", v)
	}
	hb.Close()
	if v, ok := gauge(t, reg, pending, labels("pkg.Handler")); ok {
		t.Errorf("pending{pkg.Handler} = %v after its last handler closed, want no series", v)
	}

	// A handler added later shows in a series of its own again.
	c := a.Handler("pkg.Handler")
	c.Queued(1)
	if v, ok := gauge(t, reg, pending, labels("pkg.Handler")); !ok || v != 1 {
		t.Errorf("pending{pkg.Handler} = %v (series: %v) for a new handler, want 1", v, ok)
	}
}

// Informers of one resource share last_resource_version and
// last_event_timestamp_seconds: a relist of one that began before the
// other's last event and ended after it, or a watch lagging behind
// another's, must not move them back. They are the highest resourceVersion
// and the latest event of the informers still running.
func TestLastResourceVersionIsTheHighestOfTheLiveInformers(t *testing.T) {
	m, reg := registered(t)
	cm := prometheus.Labels{"group": "", "version": "v1", "resource": "configmaps"}
	check := func(when string, rv, at float64) {
		t.Helper()
		if v, ok := gauge(t, reg, "leaninformer_last_resource_version", cm); !ok || v != rv {
			t.Errorf("%s: last_resource_version = %v (series: %v), want %v", when, v, ok, rv)
		}
		if v, ok := gauge(t, reg, "leaninformer_last_event_timestamp_seconds", cm); !ok || v != at {
			t.Errorf("%s: last_event_timestamp_seconds = %v (series: %v), want %v", when, v, ok, at)
		}
	}
	a, b := m.Informer(configMaps), m.Informer(configMaps)
	a.Event("modified", "100", time.Unix(20, 0))
	b.ResourceVersion("90", time.Unix(10, 0)) // b's relist, listed before a's event, swapped in after it
	check("an older relist after a newer event", 100, 20)
	b.Event("added", "105", time.Unix(30, 0))
	check("a newer event", 105, 30)
	a.Event("modified", "101", time.Unix(25, 0))
	check("a lagging watch's event", 105, 30)

	// The informer that held the highest leaves: the others' figures show.
	b.Close()
	check("the highest informer stopped", 101, 25)
	a.Event("modified", "102", time.Unix(26, 0))
	check("the remaining informer's next event", 102, 26)
}

// Informers of a resource record their resourceVersions concurrently, and
// some stop meanwhile: the series ends at the highest of the survivors'.
func TestLastResourceVersionUnderConcurrentInformers(t *testing.T) {
	m, reg := registered(t)
	cm := prometheus.Labels{"group": "", "version": "v1", "resource": "configmaps"}
	const informers, events = 8, 500
	var wg sync.WaitGroup
	for i := range informers {
		r := m.Informer(configMaps)
		wg.Go(func() {
			for e := range events {
				// Informer i's resourceVersions interleave with the others'.
				r.ResourceVersion(strconv.Itoa(e*informers+i+1), time.Unix(int64(e), 0))
			}
			if i%2 == 1 { // the odd ones, whose last resourceVersions are higher, stop
				r.Close()
			}
		})
	}
	wg.Wait()
	want := float64((events-1)*informers + (informers - 2) + 1) // the last even informer's last
	if v, ok := gauge(t, reg, "leaninformer_last_resource_version", cm); !ok || v != want {
		t.Errorf("last_resource_version = %v (series: %v), want the running informers' highest %v", v, ok, want)
	}
}
