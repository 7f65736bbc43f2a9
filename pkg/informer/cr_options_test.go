package informer

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

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
