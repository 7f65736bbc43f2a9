package informer

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/leaninformer/leaninformer/internal/testobjects"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// A Go type registered in the scheme under two versions (one struct
// serving example.com/v1 and v2, as a CRD's types can be): the informer
// controller-runtime builds for one of them, whether a GetInformerForKind,
// a List or a GetInformer made it, is handed an object of that type without
// a kind, so NewInformer cannot tell the version from it. Reads of
// NewCacheWith(WithEncodedStore()) must still carry the version asked for,
// as controller-runtime's reader gives them, and so must what the
// informer's own store hands out (as for every other typed kind).
func TestNewCacheWithReadsAMultiVersionTypeWithItsKind(t *testing.T) {
	v2 := schema.GroupVersion{Group: testobjects.GizmoGVK.Group, Version: "v2"}
	scheme := kruntime.NewScheme()
	if err := testobjects.AddGizmo(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypes(v2, &testobjects.Gizmo{}, &testobjects.GizmoList{})
	if kinds, _, err := scheme.ObjectKinds(&testobjects.Gizmo{}); err != nil || len(kinds) != 2 {
		t.Fatalf("Gizmo's kinds: %v, %v; want two", kinds, err)
	}
	listKind := testobjects.GizmoGVK.GroupVersion().WithKind("GizmoList")
	newList := func() *testobjects.GizmoList {
		l := &testobjects.GizmoList{}
		l.SetGroupVersionKind(listKind)
		return l
	}
	newGizmo := func() *testobjects.Gizmo {
		g := &testobjects.Gizmo{}
		g.SetGroupVersionKind(testobjects.GizmoGVK)
		return g
	}
	twoNamespaces := crcache.Options{DefaultNamespaces: map[string]crcache.Config{"ns-0": {}, "ns-1": {}}}
	for _, first := range []struct {
		name string
		opts crcache.Options
		do   func(ctx context.Context, c crcache.Cache) error
	}{
		{"GetInformerForKind", crcache.Options{}, func(ctx context.Context, c crcache.Cache) error {
			_, err := c.GetInformerForKind(ctx, testobjects.GizmoGVK)
			return err
		}},
		{"List", crcache.Options{}, func(ctx context.Context, c crcache.Cache) error {
			return c.List(ctx, newList())
		}},
		{"GetInformer", crcache.Options{}, func(ctx context.Context, c crcache.Cache) error {
			_, err := c.GetInformer(ctx, newGizmo())
			return err
		}},
		// controller-runtime builds the informer of ns-0 alone, without
		// the kind.
		{"List of one namespace of DefaultNamespaces", twoNamespaces, func(ctx context.Context, c crcache.Cache) error {
			return c.List(ctx, newList(), client.InNamespace("ns-0"))
		}},
	} {
		t.Run(first.name, func(t *testing.T) {
			s := fake.NewServer(&testobjects.GizmoList{})
			t.Cleanup(s.Close)
			rg := testobjects.NewRandom(41)
			create := func(i int) {
				obj := rg.Gizmo(i)
				obj.ResourceVersion = ""
				mustCreate(t, s, obj)
			}
			create(0)
			cfg := serveGizmos(t, s)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			withCRRegistry(t)
			opts := first.opts
			opts.Scheme = scheme
			theirs, err := crcache.New(cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			ours, err := NewCacheWith(WithEncodedStore(), WithMetrics(nil))(cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			caches := []struct {
				name string
				c    crcache.Cache
			}{{"controller-runtime's", theirs}, {"NewCacheWith(WithEncodedStore())", ours}}
			for _, c := range caches {
				go func() { _ = c.c.Start(ctx) }()
				if !c.c.WaitForCacheSync(ctx) {
					t.Fatalf("%s did not start", c.name)
				}
				if err := first.do(ctx, c.c); err != nil {
					t.Fatalf("%s: %s: %v", c.name, first.name, err)
				}
			}
			// The second object comes by the watch, decoded without its
			// kind by controller-runtime's typed client.
			create(1)
			for _, c := range caches {
				deadline := time.Now().Add(20 * time.Second)
				for {
					l := newList()
					if err := c.c.List(ctx, l); err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					if len(l.Items) == 2 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s holds %d gizmos, want 2", c.name, len(l.Items))
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			byKey := func(a, b testobjects.Gizmo) int { return strings.Compare(objKey(&a), objKey(&b)) }
			var all [][]kruntime.Object
			for _, c := range caches {
				l := newList()
				if err := c.c.List(ctx, l); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				slices.SortFunc(l.Items, byKey)
				var reads []kruntime.Object
				for i := range l.Items {
					reads = append(reads, &l.Items[i])
					g := newGizmo()
					if err := c.c.Get(ctx, client.ObjectKeyFromObject(&l.Items[i]), g); err != nil {
						t.Fatalf("%s: Get: %v", c.name, err)
					}
					reads = append(reads, g)
				}
				sel := newList()
				if err := c.c.List(ctx, sel, client.HasLabels{}); err != nil { // NewCacheWith's label List
					t.Errorf("%s: List with a label selector: %v", c.name, err)
				}
				slices.SortFunc(sel.Items, byKey)
				for i := range sel.Items {
					reads = append(reads, &sel.Items[i])
				}
				for i, r := range reads {
					if gvk := r.GetObjectKind().GroupVersionKind(); gvk != testobjects.GizmoGVK {
						t.Errorf("%s: read %d (%s) has kind %v, want %v", c.name, i, objKey(r), gvk, testobjects.GizmoGVK)
					}
				}
				all = append(all, reads)
			}
			// And the same objects.
			if len(all[1]) != len(all[0]) {
				t.Fatalf("ours read %d objects, controller-runtime's %d", len(all[1]), len(all[0]))
			}
			for i := range all[0] {
				if !reflect.DeepEqual(all[1][i], all[0][i]) {
					t.Errorf("read %d: ours returned another %s than controller-runtime's:\n%s", i, objKey(all[0][i]), objectDiff(all[0][i], all[1][i]))
				}
			}
			if len(opts.DefaultNamespaces) > 0 {
				return // the informers are controller-runtime's multi-namespace one
			}
			inf, err := ours.GetInformerForKind(ctx, testobjects.GizmoGVK)
			if err != nil {
				t.Fatal(err)
			}
			for _, obj := range inf.(toolscache.SharedIndexInformer).GetStore().List() {
				if gvk := obj.(kruntime.Object).GetObjectKind().GroupVersionKind(); gvk != testobjects.GizmoGVK {
					t.Errorf("ours: the informer's store hands out %s with kind %v, want %v", objKey(obj), gvk, testobjects.GizmoGVK)
				}
			}
		})
	}
}

// A List of a Go type registered under several kinds, of a kind the API
// server does not serve, costs the discovery requests of
// controller-runtime's own List and fails with its error, though
// NewCacheWith builds the informer (with its kind) before it lists.
func TestListOfAnUnknownMultiVersionKindDiscoversOnce(t *testing.T) {
	scheme := kruntime.NewScheme()
	if err := testobjects.AddGizmo(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypes(schema.GroupVersion{Group: testobjects.GizmoGVK.Group, Version: "v2"}, &testobjects.Gizmo{}, &testobjects.GizmoList{})
	list := func(c crcache.Cache) error {
		l := &testobjects.GizmoList{}
		l.SetGroupVersionKind(testobjects.GizmoGVK.GroupVersion().WithKind("GizmoList"))
		return c.List(context.Background(), l)
	}
	type result struct {
		requests map[string]int
		err      error
	}
	measure := func(newCache crcache.NewCacheFunc) result {
		d := newDiscoveryServer(t) // it serves no example.com
		c, err := newCache(d.config(), crcache.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		if err := list(c); err == nil {
			t.Fatal("a List of a kind the server does not serve: no error")
		}
		before := d.counts()
		err = list(c)
		after := d.counts()
		for path, n := range before {
			after[path] -= n
			if after[path] == 0 {
				delete(after, path)
			}
		}
		return result{after, err}
	}
	withCRRegistry(t)
	theirs := measure(crcache.New)
	ours := measure(NewCacheWith(WithEncodedStore(), WithMetrics(nil)))
	if !maps.Equal(ours.requests, theirs.requests) {
		t.Errorf("discovery requests of a second List: %v, controller-runtime's own cache sends %v", ours.requests, theirs.requests)
	}
	if ours.err == nil || ours.err.Error() != theirs.err.Error() {
		t.Errorf("List: %v, controller-runtime's: %v", ours.err, theirs.err)
	}
}
