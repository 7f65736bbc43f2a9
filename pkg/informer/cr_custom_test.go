package informer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/leaninformer/leaninformer/internal/testobjects"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// serveGizmos serves s, a fake server of testobjects.Gizmos, over HTTP as
// an API server serves a CRD's objects: discovery of example.com/v1, and
// LISTs and watches of gizmos, cluster-wide or in one namespace, as JSON
// with their kind.
func serveGizmos(t *testing.T, s *fake.Server) *rest.Config {
	return serveGizmosScoped(t, s, true)
}

// serveGizmosScoped is serveGizmos, whose discovery says gizmos are
// cluster-scoped unless namespaced.
func serveGizmosScoped(t *testing.T, s *fake.Server, namespaced bool) *rest.Config {
	gv := testobjects.GizmoGVK.GroupVersion()
	verbs := metav1.Verbs{"get", "list", "watch"}
	v1 := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	discovery := map[string]any{
		"/api": &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}},
		"/apis": &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{
			{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v1}, PreferredVersion: v1},
		}},
		"/api/v1": &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1"},
		"/apis/" + gv.String(): &metav1.APIResourceList{
			TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String(),
			APIResources: []metav1.APIResource{{Name: "gizmos", SingularName: "gizmo", Namespaced: namespaced, Kind: testobjects.GizmoGVK.Kind, Verbs: verbs}},
		},
	}
	lw := s.ListerWatcher()
	withKind := func(obj kruntime.Object) kruntime.Object {
		if g, ok := obj.(*testobjects.Gizmo); ok {
			g.SetGroupVersionKind(testobjects.GizmoGVK)
		}
		if st, ok := obj.(*metav1.Status); ok {
			st.APIVersion, st.Kind = "v1", "Status"
		}
		return obj
	}
	fail := func(w http.ResponseWriter, err error) {
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			status = apierrors.NewInternalError(err)
		}
		st := status.Status()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(st.Code))
		_ = json.NewEncoder(w).Encode(withKind(&st))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answer, ok := discovery[r.URL.Path]; ok {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(answer)
			return
		}
		namespace := ""
		if rest, ok := strings.CutPrefix(r.URL.Path, "/apis/"+gv.String()+"/namespaces/"); ok {
			var found bool
			if namespace, found = strings.CutSuffix(rest, "/gizmos"); !found || strings.Contains(namespace, "/") {
				http.NotFound(w, r)
				return
			}
		} else if r.URL.Path != "/apis/"+gv.String()+"/gizmos" {
			http.NotFound(w, r)
			return
		}
		var opts metav1.ListOptions
		if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
			fail(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		if namespace != "" {
			// One namespace's collection: the server's objects of the
			// namespace, as a field selector selects them.
			inNamespace := fields.OneTermEqualSelector("metadata.namespace", namespace)
			if opts.FieldSelector != "" {
				fs, err := fields.ParseSelector(opts.FieldSelector)
				if err != nil {
					fail(w, apierrors.NewBadRequest(err.Error()))
					return
				}
				inNamespace = fields.AndSelectors(inNamespace, fs)
			}
			opts.FieldSelector = inNamespace.String()
		}
		if !opts.Watch {
			list, err := lw.ListWithContext(r.Context(), opts)
			if err != nil {
				fail(w, err)
				return
			}
			l := list.(*testobjects.GizmoList)
			l.APIVersion, l.Kind = gv.String(), "GizmoList"
			for i := range l.Items {
				withKind(&l.Items[i])
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(l)
			return
		}
		wi, err := lw.WatchWithContext(r.Context(), opts)
		if err != nil {
			fail(w, err)
			return
		}
		defer wi.Stop()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Transfer-Encoding", "chunked")
		w.WriteHeader(http.StatusOK)
		flusher, _ := w.(http.Flusher)
		if flusher != nil {
			flusher.Flush()
		}
		enc := json.NewEncoder(w)
		for {
			select {
			case <-r.Context().Done():
				return
			case ev, ok := <-wi.ResultChan():
				if !ok {
					return
				}
				data, err := json.Marshal(withKind(ev.Object))
				if err != nil {
					return
				}
				if enc.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: kruntime.RawExtension{Raw: data}}) != nil {
					return
				}
				if flusher != nil {
					flusher.Flush()
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// crGizmoCache is a controller-runtime cache under test with its name.
type crGizmoCache struct {
	name string
	c    crcache.Cache
	ours bool // leaninformer's encoded store: reads are the caller's
}

// Random typed and unstructured custom resources read through a
// NewCacheWith(WithEncodedStore()) cache, and a NewCacheWith() one, with a
// controller-runtime client's Get and List (with and without a label
// selector, with and without UnsafeDisableDeepCopy) equal what
// controller-runtime's own cache returns, kind included, through creates,
// updates and deletes; writing into what the encoded cache returned
// changes none of its later reads.
func TestNewCacheWithReadsRandomCustomResourcesAsControllerRuntime(t *testing.T) {
	s := fake.NewServer(&testobjects.GizmoList{})
	t.Cleanup(s.Close)
	g := testobjects.NewRandom(977)
	rng := rand.New(rand.NewPCG(977, 3))
	live := map[string]*testobjects.Gizmo{}
	next := 0
	create := func() {
		obj := g.Gizmo(next)
		next++
		obj.ResourceVersion = ""
		out := mustCreate(t, s, obj).(*testobjects.Gizmo)
		live[out.Namespace+"/"+out.Name] = out
	}
	for range 8 {
		create()
	}
	cfg := serveGizmos(t, s)
	scheme := kruntime.NewScheme()
	if err := testobjects.AddGizmo(scheme); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	withCRRegistry(t)
	var caches []crGizmoCache
	for _, c := range []struct {
		name string
		new  crcache.NewCacheFunc
		ours bool
	}{
		{"controller-runtime's", crcache.New, false},
		{"NewCacheWith(WithEncodedStore())", NewCacheWith(WithEncodedStore(), WithMetrics(nil)), true},
		{"NewCacheWith()", NewCacheWith(WithMetrics(nil)), false},
	} {
		cc, err := c.new(cfg, crcache.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = cc.Start(ctx) }()
		if !cc.WaitForCacheSync(ctx) { // a read before Start fails
			t.Fatalf("%s did not start", c.name)
		}
		caches = append(caches, crGizmoCache{c.name, cc, c.ours})
	}
	unstructuredList := func() *unstructured.UnstructuredList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(testobjects.GizmoGVK.GroupVersion().WithKind("GizmoList"))
		return l
	}
	for _, c := range caches {
		// Informers for both forms before the first check.
		if err := c.c.List(ctx, &testobjects.GizmoList{}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := c.c.List(ctx, unstructuredList()); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	// waitFor waits until every cache's informers of both forms hold the
	// server's resourceVersion.
	waitFor := func(when string) {
		rv := s.ResourceVersion()
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(testobjects.GizmoGVK)
		for _, c := range caches {
			for _, obj := range []client.Object{&testobjects.Gizmo{}, u} {
				inf, err := c.c.GetInformer(ctx, obj)
				if err != nil {
					t.Fatal(err)
				}
				// The store's: client-go's informer has seen an event (its
				// LastSyncResourceVersion) before its store holds it.
				store := inf.(toolscache.SharedIndexInformer).GetStore().(interface{ LastStoreSyncResourceVersion() string })
				deadline := time.Now().Add(20 * time.Second)
				for store.LastStoreSyncResourceVersion() != rv {
					if time.Now().After(deadline) {
						t.Fatalf("%s: %s: %T informer's store at %s, want %s", when, c.name, obj, store.LastStoreSyncResourceVersion(), rv)
					}
					time.Sleep(2 * time.Millisecond)
				}
			}
		}
	}
	type read struct {
		what string
		do   func(c crcache.Cache) ([]any, error)
	}
	reads := func() []read {
		var rs []read
		var sel client.MatchingLabels
		for _, k := range slices.Sorted(maps.Keys(live)) {
			if ls := live[k].Labels; len(ls) > 0 {
				for lk, lv := range ls {
					sel = client.MatchingLabels{lk: lv}
					break
				}
				break
			}
		}
		for _, unsafe := range []bool{false, true} {
			var opts []client.ListOption
			var getOpts []client.GetOption
			if unsafe {
				opts = append(opts, client.UnsafeDisableDeepCopy)
				getOpts = append(getOpts, client.UnsafeDisableDeepCopy)
			}
			rs = append(rs,
				read{fmt.Sprintf("List (unsafe %v)", unsafe), func(c crcache.Cache) ([]any, error) {
					l := &testobjects.GizmoList{}
					err := c.List(ctx, l, opts...)
					return itemsOf(l.Items), err
				}},
				read{fmt.Sprintf("unstructured List (unsafe %v)", unsafe), func(c crcache.Cache) ([]any, error) {
					l := unstructuredList()
					err := c.List(ctx, l, opts...)
					return itemsOf(l.Items), err
				}},
			)
			if sel != nil {
				rs = append(rs,
					read{fmt.Sprintf("List %v (unsafe %v)", sel, unsafe), func(c crcache.Cache) ([]any, error) {
						l := &testobjects.GizmoList{}
						err := c.List(ctx, l, append(slices.Clone(opts), sel, client.InNamespace("ns-1"))...)
						return itemsOf(l.Items), err
					}},
					read{fmt.Sprintf("unstructured List %v (unsafe %v)", sel, unsafe), func(c crcache.Cache) ([]any, error) {
						l := unstructuredList()
						err := c.List(ctx, l, append(slices.Clone(opts), sel)...)
						return itemsOf(l.Items), err
					}},
				)
			}
			for _, k := range slices.Sorted(maps.Keys(live)) {
				ns, name, _ := strings.Cut(k, "/")
				rs = append(rs,
					read{fmt.Sprintf("Get %s (unsafe %v)", k, unsafe), func(c crcache.Cache) ([]any, error) {
						obj := &testobjects.Gizmo{}
						err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj, getOpts...)
						return []any{obj}, err
					}},
					read{fmt.Sprintf("unstructured Get %s (unsafe %v)", k, unsafe), func(c crcache.Cache) ([]any, error) {
						obj := &unstructured.Unstructured{}
						obj.SetGroupVersionKind(testobjects.GizmoGVK)
						err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj, getOpts...)
						return []any{obj}, err
					}},
				)
			}
		}
		return rs
	}
	check := func(when string) {
		t.Helper()
		waitFor(when)
		for _, r := range reads() {
			want, err := r.do(caches[0].c)
			if err != nil {
				t.Fatalf("%s: %s: %s: %v", when, caches[0].name, r.what, err)
			}
			sortByKey(want)
			for _, c := range caches[1:] {
				for pass := range 2 {
					got, err := r.do(c.c)
					if err != nil {
						t.Fatalf("%s: %s: %s: %v", when, c.name, r.what, err)
					}
					sortByKey(got)
					if len(got) != len(want) {
						t.Fatalf("%s: %s: %s returned %d objects, controller-runtime's %d", when, c.name, r.what, len(got), len(want))
					}
					for i := range want {
						w := want[i]
						if g, ok := w.(*testobjects.Gizmo); ok && c.ours {
							// controller-runtime's reads without DeepCopy
							// lack the kind, the encoded store's have it
							// (docs/compatibility.md, "Encoded store").
							g = g.DeepCopy()
							g.SetGroupVersionKind(testobjects.GizmoGVK)
							w = g
						}
						if !reflect.DeepEqual(got[i], w) {
							t.Fatalf("%s: %s: %s (pass %d) returned another %s than controller-runtime's:\n%s", when, c.name, r.what, pass, objKey(w), objectDiff(w, got[i]))
						}
					}
					if !c.ours {
						break
					}
					// The encoded store's reads are the caller's.
					for _, o := range got {
						testobjects.Poison(reflect.ValueOf(o))
					}
				}
			}
		}
	}
	check("the initial list")
	for step := range 12 {
		var what string
		switch r := rng.IntN(10); {
		case r < 3:
			what = "create"
			create()
		case r < 8:
			what = "update"
			keys := slices.Sorted(maps.Keys(live))
			k := keys[rng.IntN(len(keys))]
			obj := g.Gizmo(next)
			next++
			obj.Namespace, obj.Name, obj.UID, obj.ResourceVersion = live[k].Namespace, live[k].Name, live[k].UID, ""
			live[k] = mustUpdate(t, s, obj).(*testobjects.Gizmo)
		default:
			what = "delete"
			keys := slices.Sorted(maps.Keys(live))
			k := keys[rng.IntN(len(keys))]
			if _, err := s.Delete(live[k].Namespace, live[k].Name); err != nil {
				t.Fatal(err)
			}
			delete(live, k)
		}
		check(fmt.Sprintf("step %d (%s)", step, what))
	}
}

func itemsOf[T any](items []T) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func sortByKey(objs []any) {
	slices.SortFunc(objs, func(a, b any) int { return strings.Compare(objKey(a), objKey(b)) })
}
