package informer

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/leaninformer/leaninformer/internal/metricstest"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// withCRRegistry gives controller-runtime's global metrics registry, where
// NewCacheWith registers its metrics set, a fresh registry for the rest of
// the test: a set other than metrics.Default registered there for good
// would make every later NewCache (ExampleNewCache's) fail to register
// Default.
func withCRRegistry(t *testing.T) {
	saved := crmetrics.Registry
	crmetrics.Registry = prometheus.NewRegistry()
	t.Cleanup(func() { crmetrics.Registry = saved })
}

// octopus is a CRD's kind whose plural is not the guessed one.
var octopus = schema.GroupVersionKind{Group: "sea.example.com", Version: "v1", Kind: "Octopus"}

// discoveryServer answers the (non-aggregated) discovery requests of a
// RESTMapper for the core group, with ConfigMaps, and for sea.example.com,
// with octopodes; it counts every request by path. Anything else is 404.
type discoveryServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string]int
}

func newDiscoveryServer(t *testing.T) *discoveryServer {
	d := &discoveryServer{requests: map[string]int{}}
	resources := func(gv string, rs ...metav1.APIResource) *metav1.APIResourceList {
		return &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv, APIResources: rs}
	}
	verbs := metav1.Verbs{"get", "list", "watch"}
	seaV1 := metav1.GroupVersionForDiscovery{GroupVersion: octopus.GroupVersion().String(), Version: "v1"}
	answers := map[string]any{
		"/api": &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}},
		"/apis": &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{
			{Name: octopus.Group, Versions: []metav1.GroupVersionForDiscovery{seaV1}, PreferredVersion: seaV1},
		}},
		"/api/v1": resources("v1",
			metav1.APIResource{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: verbs},
		),
		"/apis/sea.example.com/v1": resources(octopus.GroupVersion().String(),
			metav1.APIResource{Name: "octopodes", SingularName: "octopus", Namespaced: true, Kind: octopus.Kind, Verbs: verbs},
		),
	}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.requests[r.URL.Path]++
		d.mu.Unlock()
		answer, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(d.Close)
	return d
}

// counts returns the requests so far, by path.
func (d *discoveryServer) counts() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.requests)
}

func (d *discoveryServer) config() *rest.Config { return &rest.Config{Host: d.URL} }

// storeObjectsResources returns the resource labels of m's store_objects
// series.
func storeObjectsResources(t *testing.T, m *metrics.Metrics) []string {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	series, err := metricstest.Find(reg, "leaninformer_store_objects", nil)
	if err != nil {
		t.Fatal(err)
	}
	var resources []string
	for _, s := range series {
		resources = append(resources, s.Labels["resource"])
	}
	slices.Sort(resources)
	return resources
}

// A cache built with NewCache outside a manager (no Options.Mapper) labels
// its informers' metrics with the resources the API server names, as a
// manager's does: controller-runtime's cache.New would make a RESTMapper
// of its own that NewCache never sees, and the guessed plural of a CRD
// with its own plural ("octopuses") is wrong. The labels cost no discovery
// request beyond those of controller-runtime's own cache.
func TestNewCacheWithoutAMapperLabelsMetricsWithTheServersResources(t *testing.T) {
	ctx := context.Background()
	objects := func() []client.Object {
		octo := &metav1.PartialObjectMetadata{}
		octo.SetGroupVersionKind(octopus)
		return []client.Object{&corev1.ConfigMap{}, octo}
	}
	getInformers := func(c crcache.Cache) []crcache.Informer {
		var infs []crcache.Informer
		for _, obj := range objects() {
			inf, err := c.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
			if err != nil {
				t.Fatalf("GetInformer(%T): %v", obj, err)
			}
			infs = append(infs, inf)
		}
		return infs
	}

	theirs := newDiscoveryServer(t)
	c, err := crcache.New(theirs.config(), crcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	getInformers(c)

	ours := newDiscoveryServer(t)
	withCRRegistry(t)
	m := metrics.New()
	c, err = NewCacheWith(WithMetrics(m))(ours.config(), crcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, inf := range getInformers(c) {
		// An informer not run records nothing; one object in its store
		// shows the series its labels make.
		inf.(*SharedIndexInformer).metrics.prom.SetStoreObjects(1)
		defer inf.(*SharedIndexInformer).metrics.prom.Close()
	}
	if got, want := storeObjectsResources(t, m), []string{"configmaps", "octopodes"}; !slices.Equal(got, want) {
		t.Errorf("store_objects series of resources %q, want %q", got, want)
	}
	if got, want := ours.counts(), theirs.counts(); !maps.Equal(got, want) {
		t.Errorf("discovery requests %v, want controller-runtime's own %v", got, want)
	}
}

// A label List of a kind the RESTMapper does not know (a CRD not
// installed) costs the discovery requests of controller-runtime's own
// List, not twice as many: the label-list answer looks the informer up
// first, and a failed look-up is the List's error, as controller-runtime's
// would be from the same look-up.
func TestLabelListOfAnUnknownKindDiscoversOnce(t *testing.T) {
	squids := &metav1.PartialObjectMetadataList{}
	squids.SetGroupVersionKind(schema.GroupVersionKind{Group: "nowhere.example.com", Version: "v1", Kind: "SquidList"})
	list := func(c crcache.Cache) error {
		return c.List(context.Background(), squids, client.MatchingLabels{"app": "x"})
	}
	type result struct {
		requests map[string]int
		err      error
	}
	measure := func(newCache crcache.NewCacheFunc) result {
		d := newDiscoveryServer(t)
		c, err := newCache(d.config(), crcache.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := list(c); err == nil {
			t.Fatal("a List of a kind the server does not serve: no error")
		}
		before := d.counts()
		err = list(c) // the mapper's first look-up discovers the groups
		after := d.counts()
		for path, n := range before {
			after[path] -= n
			if after[path] == 0 {
				delete(after, path)
			}
		}
		return result{after, err}
	}
	theirs := measure(crcache.New)
	ours := measure(NewCacheWith(WithEncodedStore(), WithMetrics(nil)))
	if !maps.Equal(ours.requests, theirs.requests) {
		t.Errorf("discovery requests of a second label List: %v, controller-runtime's own cache sends %v", ours.requests, theirs.requests)
	}
	if ours.err.Error() != theirs.err.Error() {
		t.Errorf("List: %v, controller-runtime's: %v", ours.err, theirs.err)
	}
}

// NewCacheWith builds the cache's informers as this package's, each
// decoding its kind's objects with the kind set (controller-runtime's reader
// would set it on its copies, which the encoded store spares), unless the
// caller set Options.NewInformer: the caller's informers are kept.
func TestNewCacheWithBuildsItsInformersUnlessTheCallerDoes(t *testing.T) {
	ctx := context.Background()
	d := newDiscoveryServer(t)
	informerOf := func(opts crcache.Options) crcache.Informer {
		t.Helper()
		c, err := NewCacheWith(WithEncodedStore(), WithMetrics(nil))(d.config(), opts)
		if err != nil {
			t.Fatal(err)
		}
		inf, err := c.GetInformer(ctx, &corev1.ConfigMap{}, crcache.BlockUntilSynced(false))
		if err != nil {
			t.Fatal(err)
		}
		return inf
	}

	ours, ok := informerOf(crcache.Options{}).(*SharedIndexInformer)
	if !ok {
		t.Fatal("NewCacheWith's informer is not this package's")
	}
	if want := corev1.SchemeGroupVersion.WithKind("ConfigMap"); ours.cfg.readKind == nil || *ours.cfg.readKind != want {
		t.Errorf("the informer decodes with read kind %v, want %v", ours.cfg.readKind, want)
	}

	var made int
	theirs := informerOf(crcache.Options{NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		made++
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}})
	if _, isOurs := theirs.(*SharedIndexInformer); isOurs || made != 1 {
		t.Errorf("with the caller's NewInformer (called %d times) the informer is a %T, want the caller's", made, theirs)
	}
}
