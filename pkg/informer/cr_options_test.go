package informer

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/leaninformer/leaninformer/internal/testobjects"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// startGizmoCache starts a NewCacheWith cache (ListWatch: a stream needs
// bookmarks to end) with the options optsFor gives for the server's config,
// of gizmos served by a fake server holding two, lists them through it, has
// a third come by the watch and waits for it. It returns the server.
func startGizmoCache(t *testing.T, optsFor func(*rest.Config) crcache.Options) *fake.Server {
	t.Helper()
	s := fake.NewServer(&testobjects.GizmoList{})
	t.Cleanup(s.Close)
	rg := testobjects.NewRandom(7)
	create := func(i int) {
		obj := rg.Gizmo(i)
		obj.ResourceVersion = ""
		mustCreate(t, s, obj)
	}
	create(0)
	create(1)
	cfg := serveGizmos(t, s)
	opts := optsFor(cfg)
	scheme := kruntime.NewScheme()
	if err := testobjects.AddGizmo(scheme); err != nil {
		t.Fatal(err)
	}
	opts.Scheme = scheme
	withCRRegistry(t)
	c, err := NewCacheWith(WithEncodedStore(), WithStrategy(ListWatch), WithMetrics(nil))(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not start")
	}
	var l testobjects.GizmoList
	if err := c.List(ctx, &l); err != nil || len(l.Items) != 2 {
		t.Fatalf("List: %d gizmos, %v; want 2", len(l.Items), err)
	}
	create(2)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := c.List(ctx, &l); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) == 3 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache holds %d gizmos, want 3", len(l.Items))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A ByObject entry's EnableWatchBookmarks decides, for its type alone and
// over DefaultEnableWatchBookmarks, whether the informer's watches ask for
// bookmarks, as in controller-runtime's cache.
func TestNewCacheWithKeepsByObjectWatchBookmarks(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts crcache.Options
		want bool
	}{
		{"ByObject off", crcache.Options{ByObject: map[client.Object]crcache.ByObject{
			&testobjects.Gizmo{}: {EnableWatchBookmarks: ptr.To(false)},
		}}, false},
		{"ByObject on, default off", crcache.Options{DefaultEnableWatchBookmarks: ptr.To(false), ByObject: map[client.Object]crcache.ByObject{
			&testobjects.Gizmo{}: {EnableWatchBookmarks: ptr.To(true)},
		}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startGizmoCache(t, func(*rest.Config) crcache.Options { return tc.opts })
			watches := 0
			for _, r := range s.Requests() {
				if r.Verb != "watch" {
					continue
				}
				watches++
				if r.Options.AllowWatchBookmarks != tc.want {
					t.Errorf("a watch asked with allowWatchBookmarks=%v, want %v", r.Options.AllowWatchBookmarks, tc.want)
				}
			}
			if watches == 0 {
				t.Fatal("no watch reached the server")
			}
		})
	}
}

// countingTransport counts the requests that pass through it by path.
type countingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	key := r.URL.Path
	if r.URL.Query().Get("watch") == "true" {
		key += "?watch"
	}
	c.mu.Lock()
	c.n[key]++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// The cache's Options.HTTPClient carries every request of its informers:
// each LIST and watch the server saw went through its transport (and the
// RESTMapper's discovery too).
func TestNewCacheWithListsAndWatchesThroughTheHTTPClient(t *testing.T) {
	counting := &countingTransport{n: map[string]int{}}
	s := startGizmoCache(t, func(cfg *rest.Config) crcache.Options {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		counting.next = hc.Transport
		if counting.next == nil { // plain HTTP
			counting.next = http.DefaultTransport
		}
		hc.Transport = counting
		return crcache.Options{HTTPClient: hc}
	})
	var lists, watches int
	for _, r := range s.Requests() {
		switch r.Verb {
		case "list":
			lists++
		case "watch":
			watches++
		}
	}
	counting.mu.Lock()
	defer counting.mu.Unlock()
	path := "/apis/" + testobjects.GizmoGVK.GroupVersion().String() + "/gizmos"
	if lists == 0 || watches == 0 || counting.n[path] != lists || counting.n[path+"?watch"] != watches {
		t.Fatalf("the server saw %d LISTs and %d watches of gizmos; the HTTPClient's transport carried %d and %d (all its requests: %v)",
			lists, watches, counting.n[path], counting.n[path+"?watch"], counting.n)
	}
	discovery := 0
	for p, n := range counting.n {
		if p == "/api" || p == "/apis" || strings.HasPrefix(p, "/apis/") && !strings.HasSuffix(p, "/gizmos") && !strings.HasSuffix(p, "?watch") {
			discovery += n
		}
	}
	if discovery == 0 {
		t.Fatalf("no discovery request went through the HTTPClient's transport: %v", counting.n)
	}
}

// A List with a label selector of a cluster-scoped type in a cache with
// DefaultNamespaces (controller-runtime keeps such a type in one
// cluster-wide informer) returns what controller-runtime's returns, and
// NewCacheWith(WithEncodedStore()) answers it from the store's labels as it
// does without DefaultNamespaces: it allocates about as much, where going
// through controller-runtime's reader copies (decodes, for encoded kinds)
// every object of the type to match it.
func TestLabelListOfAClusterScopedTypeInAMultiNamespaceCache(t *testing.T) {
	s := fake.NewServer(&testobjects.GizmoList{})
	t.Cleanup(s.Close)
	rg := testobjects.NewRandom(11)
	const n = 300
	for i := range n {
		obj := rg.Gizmo(i)
		obj.ResourceVersion, obj.Namespace = "", ""
		obj.Labels = map[string]string{"pick": "no"}
		if i%100 == 7 {
			obj.Labels["pick"] = "yes"
		}
		mustCreate(t, s, obj)
	}
	cfg := serveGizmosScoped(t, s, false)
	scheme := kruntime.NewScheme()
	if err := testobjects.AddGizmo(scheme); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	withCRRegistry(t)
	defaultNamespaces := map[string]crcache.Config{"ns-0": {}, "ns-1": {}}
	start := func(name string, newCache crcache.NewCacheFunc, namespaces map[string]crcache.Config) crcache.Cache {
		c, err := newCache(cfg, crcache.Options{Scheme: scheme, DefaultNamespaces: namespaces})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = c.Start(ctx) }()
		if !c.WaitForCacheSync(ctx) {
			t.Fatalf("%s did not start", name)
		}
		return c
	}
	theirs := start("controller-runtime's", crcache.New, defaultNamespaces)
	ours := start("NewCacheWith(WithEncodedStore())", NewCacheWith(WithEncodedStore(), WithMetrics(nil)), defaultNamespaces)
	single := start("NewCacheWith(WithEncodedStore()), all namespaces", NewCacheWith(WithEncodedStore(), WithMetrics(nil)), nil)
	list := func(c crcache.Cache) []testobjects.Gizmo {
		t.Helper()
		var l testobjects.GizmoList
		if err := c.List(ctx, &l, client.MatchingLabels{"pick": "yes"}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(l.Items, func(a, b testobjects.Gizmo) int { return strings.Compare(a.Name, b.Name) })
		return l.Items
	}
	want := list(theirs)
	if len(want) != n/100 {
		t.Fatalf("controller-runtime's cache listed %d gizmos, want %d", len(want), n/100)
	}
	for _, c := range []crcache.Cache{ours, single} {
		if got := list(c); !reflect.DeepEqual(got, want) {
			t.Fatalf("%T listed %d gizmos, controller-runtime's %d: %s", c, len(got), len(want), objectDiff(want, got))
		}
	}
	listUnstructured := func(c crcache.Cache) []unstructured.Unstructured {
		t.Helper()
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(testobjects.GizmoGVK.GroupVersion().WithKind("GizmoList"))
		if err := c.List(ctx, l, client.MatchingLabels{"pick": "yes"}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(l.Items, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
		return l.Items
	}
	wantU := listUnstructured(theirs)
	if len(wantU) != n/100 {
		t.Fatalf("controller-runtime's cache listed %d unstructured gizmos, want %d", len(wantU), n/100)
	}
	for _, c := range []crcache.Cache{ours, single} {
		if got := listUnstructured(c); !reflect.DeepEqual(got, wantU) {
			t.Fatalf("%T listed %d unstructured gizmos, controller-runtime's %d: %s", c, len(got), len(wantU), objectDiff(wantU, got))
		}
	}
	allocs := func(c crcache.Cache) float64 { return testing.AllocsPerRun(5, func() { list(c) }) }
	if multi, one := allocs(ours), allocs(single); multi > 2*one+100 {
		t.Fatalf("a label List with DefaultNamespaces allocates %.0f times, without %.0f: it matched every object through controller-runtime's reader", multi, one)
	}
}
