package envtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/internal/testobjects"
	"github.com/leaninformer/leaninformer/pkg/informer"
)

// Custom resources as the API server serves them, which the fake server
// does not imitate: a structural schema prunes unknown fields and applies
// defaults, a status subresource keeps spec and status writes apart,
// numbers come back as JSON decoding makes them (int64 for whole numbers,
// float64 else) and a cluster-scoped kind has keys without a namespace.
// Our informer (plain and encoded, over a dynamic client) and our
// controller-runtime caches must hold and hand out exactly what client-go's
// informer and controller-runtime's cache do.
var _ = Describe("custom resources on a real API server", Ordered, func() {
	var (
		proxies [2]*faultproxy.Proxy // ours, client-go's
		proxied [2]dynamic.Interface // through each proxy
		direct  dynamic.Interface    // straight to the API server
	)

	BeforeAll(func() {
		crdInstall(cfg)
		var err error
		for i := range proxies {
			proxies[i], err = faultproxy.New(cfg)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(proxies[i].Close)
			proxied[i], err = dynamic.NewForConfig(proxies[i].ClientConfig())
			Expect(err).NotTo(HaveOccurred())
		}
		directCfg := rest.CopyConfig(cfg)
		directCfg.WarningHandler = rest.NoWarnings{} // of the fields it prunes
		direct, err = dynamic.NewForConfig(directCfg)
		Expect(err).NotTo(HaveOccurred())
	})

	for _, tc := range []struct {
		strategy informer.Strategy
		encoded  bool
	}{{informer.Auto, false}, {informer.Auto, true}, {informer.ListWatch, true}} {
		It(fmt.Sprintf("reach our informer's handlers and store as client-go's (%v, encoded store %v)", tc.strategy, tc.encoded), func(ctx SpecContext) {
			ns := createNamespace(ctx, "crd-informer")
			run := "crd-run=" + ns // the cluster-scoped objects of this spec
			gizmos := direct.Resource(crdGizmos).Namespace(ns)
			gadgets := direct.Resource(crdGadgets)
			for i := range 12 {
				_, err := gizmos.Create(ctx, crdGizmo(ns, fmt.Sprintf("g-%02d", i), i), metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
			}
			for i := range 4 {
				crdCreateGadget(ctx, direct, crdGadget(ns, fmt.Sprintf("%s-%d", ns, i), i))
			}

			opts := []informer.Option{informer.WithStrategy(tc.strategy), informer.WithPageSize(5)}
			if tc.encoded {
				opts = append(opts, informer.WithEncodedStore())
			}
			type pair struct {
				resource          string
				ours, theirs      toolscache.SharedIndexInformer
				oursRec, theirRec *crdRecorder
				fresh             func(Gomega) map[string]map[string]any
			}
			var pairs []*pair
			for _, r := range []struct {
				gvr      schema.GroupVersionResource
				ns, sel  string
				resource string
			}{{crdGizmos, ns, "", "gizmos"}, {crdGadgets, "", run, "gadgets"}} {
				p := &pair{
					resource: r.resource,
					ours:     informer.NewSharedIndexInformerWithOptions(crdListWatch(proxied[0], r.gvr, r.ns, r.sel), &unstructured.Unstructured{}, toolscache.SharedIndexInformerOptions{}, opts...),
					theirs:   toolscache.NewSharedIndexInformer(crdListWatch(proxied[1], r.gvr, r.ns, r.sel), &unstructured.Unstructured{}, 0, toolscache.Indexers{}),
					oursRec:  newCRDRecorder(),
					theirRec: newCRDRecorder(),
					fresh: func(g Gomega) map[string]map[string]any {
						list, err := direct.Resource(r.gvr).Namespace(r.ns).List(ctx, metav1.ListOptions{LabelSelector: r.sel})
						g.Expect(err).NotTo(HaveOccurred())
						out := map[string]map[string]any{}
						for i := range list.Items {
							key, err := toolscache.MetaNamespaceKeyFunc(&list.Items[i])
							g.Expect(err).NotTo(HaveOccurred())
							out[key] = list.Items[i].Object
						}
						return out
					},
				}
				_, err := p.ours.AddEventHandler(p.oursRec)
				Expect(err).NotTo(HaveOccurred())
				_, err = p.theirs.AddEventHandler(p.theirRec)
				Expect(err).NotTo(HaveOccurred())
				pairs = append(pairs, p)
			}
			runCtx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), GinkgoLogr))
			var wg sync.WaitGroup
			for _, p := range pairs {
				for _, inf := range []toolscache.SharedIndexInformer{p.ours, p.theirs} {
					wg.Go(func() { inf.RunWithContext(runCtx) })
				}
			}
			DeferCleanup(func() { cancel(); wg.Wait() })
			for _, p := range pairs {
				Eventually(p.ours.HasSynced).WithTimeout(crTimeout).Should(BeTrue())
				Eventually(p.theirs.HasSynced).WithTimeout(crTimeout).Should(BeTrue())
			}

			By("live creates, spec updates, status updates and deletes")
			for i := 12; i < 14; i++ {
				_, err := gizmos.Create(ctx, crdGizmo(ns, fmt.Sprintf("g-%02d", i), i), metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
			}
			crdCreateGadget(ctx, direct, crdGadget(ns, ns+"-live", 7))
			crdSetStatus(ctx, gizmos, "g-01", "Ready", 1)
			crdSetStatus(ctx, gadgets, ns+"-1", "Ready", 2)
			crdSetSpec(ctx, gizmos, "g-02", map[string]any{"replicas": int64(5), "bogus": "pruned"})
			crdSetSpec(ctx, gadgets, ns+"-2", map[string]any{"level": int64(9)})
			crdSetSpec(ctx, gizmos, "g-03", map[string]any{"template": map[string]any{"weight": 3.25}})
			Expect(gizmos.Delete(ctx, "g-04", metav1.DeleteOptions{})).To(Succeed())
			Expect(gadgets.Delete(ctx, ns+"-3", metav1.DeleteOptions{})).To(Succeed())
			// A label-only update, and a no-op update (no new resourceVersion, no event).
			g5, err := gizmos.Get(ctx, "g-05", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			g5.SetLabels(map[string]string{"color": "green"})
			_, err = gizmos.Update(ctx, g5, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
			g6, err := gizmos.Get(ctx, "g-06", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			_, err = gizmos.Update(ctx, g6, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
			By("a delete held by a finalizer: an update with a deletionTimestamp, then the delete")
			fin := crdGizmo(ns, "g-finalized", 30)
			fin.SetFinalizers([]string{"example.com/hold"})
			_, err = gizmos.Create(ctx, fin, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(gizmos.Delete(ctx, "g-finalized", metav1.DeleteOptions{})).To(Succeed())
			fin, err = gizmos.Get(ctx, "g-finalized", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(fin.GetDeletionTimestamp()).NotTo(BeNil())
			fin.SetFinalizers(nil)
			_, err = gizmos.Update(ctx, fin, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
			// The last write of each resource, which every informer must have seen.
			lastGizmo := crdSetStatus(ctx, gizmos, "g-00", "Last", 3)
			lastGadget := crdSetStatus(ctx, gadgets, ns+"-0", "Last", 4)
			last := map[string]string{"gizmos": ns + "/g-00=" + lastGizmo, "gadgets": ns + "-0=" + lastGadget}

			Eventually(func() []string {
				var ops []string
				for _, c := range pairs[0].theirRec.snapshot()[ns+"/g-finalized"] {
					ops = append(ops, c.Op)
				}
				return ops
			}).WithTimeout(crTimeout).Should(Equal([]string{"add, initial false", "update", "delete, tombstone false"}),
				"removing the last finalizer deletes the object: no update of its own")
			for _, p := range pairs {
				Eventually(func(g Gomega) {
					g.Expect(p.theirRec.rvs()).To(ContainElement(last[p.resource]))
					g.Expect(p.oursRec.rvs()).To(ContainElement(last[p.resource]))
				}).WithTimeout(crTimeout).Should(Succeed(), p.resource)
				By(p.resource + ": every handler call of ours has client-go's objects, in client-go's order")
				Expect(p.oursRec.snapshot()).To(Equal(p.theirRec.snapshot()), p.resource)
				Expect(crdStoreContent(p.ours.GetStore())).To(Equal(crdStoreContent(p.theirs.GetStore())), p.resource)
				Eventually(func(g Gomega) {
					g.Expect(crdStoreContent(p.ours.GetStore())).To(Equal(p.fresh(g)))
				}).WithTimeout(crTimeout).Should(Succeed(), "%s: the store is a fresh LIST", p.resource)
			}
			gz, err := gizmos.Get(ctx, "g-02", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(gz.Object["spec"]).NotTo(HaveKey("bogus"), "the API server pruned the unknown field")

			By("a relist of each informer after a 410, with writes made while the watches were held")
			var lifts []func()
			for _, proxy := range proxies {
				lift := proxy.BlackHole(faultproxy.Match{Predicate: func(r *http.Request) bool {
					res := faultproxy.ParseRequest(r).Resource
					return res == "gizmos" || res == "gadgets"
				}})
				DeferCleanup(lift)
				lifts = append(lifts, lift)
				for _, res := range []string{"gizmos", "gadgets"} {
					Expect(proxy.CutWatches(faultproxy.Match{Resource: res})).To(Equal(1), res)
				}
			}
			Expect(gizmos.Delete(ctx, "g-07", metav1.DeleteOptions{})).To(Succeed())
			_, err = gizmos.Create(ctx, crdGizmo(ns, "g-relist", 20), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			crdSetStatus(ctx, gizmos, "g-08", "Relisted", 5)
			crdSetSpec(ctx, gizmos, "g-09", map[string]any{"extra": map[string]any{"after": 1.5, "n": int64(-7)}})
			Expect(gadgets.Delete(ctx, ns+"-2", metav1.DeleteOptions{})).To(Succeed())
			crdCreateGadget(ctx, direct, crdGadget(ns, ns+"-relist", 8))
			crdSetStatus(ctx, gadgets, ns+"-live", "Relisted", 6)
			var gones []*faultproxy.Injection
			for _, proxy := range proxies {
				for _, res := range []string{"gizmos", "gadgets"} {
					gone, err := proxy.Inject(faultproxy.Rule{
						Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: res,
							Predicate: func(r *http.Request) bool { return !faultproxy.IsStreamingList(r) }},
						Fault: faultproxy.Fault{Kind: faultproxy.Gone},
						Times: 1,
					})
					Expect(err).NotTo(HaveOccurred())
					DeferCleanup(gone.Remove)
					gones = append(gones, gone)
				}
			}
			for _, lift := range lifts {
				lift()
			}
			for i, gone := range gones {
				Eventually(gone.Done).WithTimeout(crTimeout).Should(BeTrue(), "watch %d got the 410", i)
			}
			for _, p := range pairs {
				Eventually(func(g Gomega) {
					want := p.fresh(g)
					g.Expect(crdStoreContent(p.ours.GetStore())).To(Equal(want))
					g.Expect(p.oursRec.state()).To(Equal(want))
					g.Expect(crdStoreContent(p.theirs.GetStore())).To(Equal(want))
					g.Expect(p.theirRec.state()).To(Equal(want))
				}).WithTimeout(crTimeout).Should(Succeed(), "%s: the stores and handlers after the relist are a fresh LIST", p.resource)
				By(p.resource + ": through the relist too, every handler call of ours has client-go's objects")
				Expect(p.oursRec.snapshot()).To(Equal(p.theirRec.snapshot()), p.resource)
			}
		})
	}

	It("read through our controller-runtime caches as through controller-runtime's, typed and unstructured", func(ctx SpecContext) {
		ns := createNamespace(ctx, "crd-cache")
		gizmos := direct.Resource(crdGizmos).Namespace(ns)
		for i := range 10 {
			_, err := gizmos.Create(ctx, crdGizmo(ns, fmt.Sprintf("g-%02d", i), i), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		for i := range 4 {
			crdCreateGadget(ctx, direct, crdGadget(ns, fmt.Sprintf("%s-%d", ns, i), i))
		}
		crdSetStatus(ctx, gizmos, "g-01", "Ready", 1)

		scheme := kruntime.NewScheme()
		Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
		Expect(testobjects.AddGizmo(scheme)).To(Succeed())
		caches := map[string]cache.Cache{}
		for name, newCache := range map[string]cache.NewCacheFunc{
			"controller-runtime": cache.New,
			"leaninformer":       informer.NewCacheWith(informer.WithMetrics(nil)),
			"encoded":            informer.NewCacheWith(informer.WithEncodedStore(), informer.WithMetrics(nil)),
		} {
			c, err := newCache(proxies[0].ClientConfig(), cache.Options{Scheme: scheme})
			Expect(err).NotTo(HaveOccurred())
			crStart(ctx, c)
			for _, obj := range []client.Object{&testobjects.Gizmo{}, crdUnstructured(crdGizmoGVK), crdUnstructured(crdGadgetGVK)} {
				crExpectImplementation(crInformer(ctx, c, obj), crCache{ours: name != "controller-runtime", encoded: name == "encoded"})
			}
			caches[name] = c
		}

		run := client.MatchingLabels{"crd-run": ns}
		queries := []crQuery{
			{"in the namespace", 10, []client.ListOption{client.InNamespace(ns)}},
			{"a label", 5, []client.ListOption{client.InNamespace(ns), client.MatchingLabels{"color": "red"}}},
			{"a label, cluster-wide", 5, []client.ListOption{client.MatchingLabels{"color": "blue", "crd-run": ns}}},
			{"a set-based selector", 10, []client.ListOption{client.InNamespace(ns), client.HasLabels{"color", "crd-run"}}},
			{"no match", 0, []client.ListOption{client.MatchingLabels{"color": "green", "crd-run": ns}}},
		}
		limited := []crLimitedQuery{{"Limit", []client.ListOption{client.InNamespace(ns)}, 3}}
		gizmoLists := []crListKind{
			{"typed Gizmos", func() client.ObjectList { return &testobjects.GizmoList{} }},
			{"unstructured Gizmos", func() client.ObjectList { return crdUnstructuredList(crdGizmoGVK) }},
			{"metadata-only Gizmos", func() client.ObjectList {
				l := &metav1.PartialObjectMetadataList{}
				l.SetGroupVersionKind(crdGizmoGVK.GroupVersion().WithKind("GizmoList"))
				return l
			}},
		}
		gadgetQueries := []crQuery{
			{"the spec's", 4, []client.ListOption{run}},
			{"a label", 2, []client.ListOption{run, client.MatchingLabels{"color": "red"}}},
		}
		gadgetList := crListKind{"unstructured Gadgets (cluster-scoped)", func() client.ObjectList { return crdUnstructuredList(crdGadgetGVK) }}
		compare := func() {
			for _, kind := range gizmoLists {
				crExpectSameLists(ctx, caches, kind, queries, limited)
			}
			crExpectSameLists(ctx, caches, gadgetList, gadgetQueries, nil)
			for _, key := range []types.NamespacedName{{Namespace: ns, Name: "g-01"}, {Namespace: ns, Name: "g-02"}} {
				var want testobjects.Gizmo
				Expect(caches["controller-runtime"].Get(ctx, key, &want)).To(Succeed())
				var wantUnsafe testobjects.Gizmo
				Expect(caches["controller-runtime"].Get(ctx, key, &wantUnsafe, client.UnsafeDisableDeepCopy)).To(Succeed())
				wantU := crdUnstructured(crdGizmoGVK)
				Expect(caches["controller-runtime"].Get(ctx, key, wantU)).To(Succeed())
				for name, c := range caches {
					var got testobjects.Gizmo
					Expect(c.Get(ctx, key, &got)).To(Succeed())
					Expect(&got).To(Equal(&want), "Get of a typed Gizmo, the %s cache", name)
					var unsafe testobjects.Gizmo
					Expect(c.Get(ctx, key, &unsafe, client.UnsafeDisableDeepCopy)).To(Succeed())
					wantKind := wantUnsafe.DeepCopy()
					if name == "encoded" {
						// The encoded store sets a typed object's kind for
						// every read (docs/compatibility.md).
						wantKind.SetGroupVersionKind(crdGizmoGVK)
					}
					Expect(&unsafe).To(Equal(wantKind), "Get of a typed Gizmo without DeepCopy, the %s cache", name)
					gotU := crdUnstructured(crdGizmoGVK)
					Expect(c.Get(ctx, key, gotU)).To(Succeed())
					Expect(gotU).To(Equal(wantU), "Get of an unstructured Gizmo, the %s cache", name)
					gotU = crdUnstructured(crdGizmoGVK)
					Expect(c.Get(ctx, key, gotU, client.UnsafeDisableDeepCopy)).To(Succeed())
					Expect(gotU).To(Equal(wantU), "Get of an unstructured Gizmo without DeepCopy, the %s cache", name)
				}
			}
			want := crdUnstructured(crdGadgetGVK)
			Expect(caches["controller-runtime"].Get(ctx, types.NamespacedName{Name: ns + "-1"}, want)).To(Succeed())
			for name, c := range caches {
				got := crdUnstructured(crdGadgetGVK)
				Expect(c.Get(ctx, types.NamespacedName{Name: ns + "-1"}, got)).To(Succeed())
				Expect(got).To(Equal(want), "Get of a cluster-scoped Gadget, the %s cache", name)
			}
		}
		By("the initial lists")
		compare()

		By("after spec and status updates, label changes, creates and deletes")
		crdSetStatus(ctx, gizmos, "g-02", "Ready", 2)
		crdSetSpec(ctx, gizmos, "g-01", map[string]any{"tags": []any{"x", "y"}, "template": map[string]any{"weight": int64(4)}})
		g3, err := gizmos.Get(ctx, "g-03", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		g3.SetLabels(map[string]string{"color": "red", "crd-run": ns}) // was blue
		_, err = gizmos.Update(ctx, g3, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(gizmos.Delete(ctx, "g-04", metav1.DeleteOptions{})).To(Succeed())
		_, err = gizmos.Create(ctx, crdGizmo(ns, "g-04b", 4), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		crdSetStatus(ctx, direct.Resource(crdGadgets), ns+"-1", "Ready", 3)
		last := crdSetStatus(ctx, gizmos, "g-09", "Last", 9)
		for name, c := range caches {
			Eventually(func(g Gomega) {
				var got testobjects.Gizmo
				g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "g-09"}, &got)).To(Succeed())
				g.Expect(got.ResourceVersion).To(Equal(last))
			}).WithTimeout(crTimeout).Should(Succeed(), "the %s cache saw the last write", name)
		}
		queries[1].n, queries[2].n = 6, 4
		compare()

		By("a relist of every Gizmo informer after a 410, with writes made while the watches were held")
		proxy := proxies[0]
		before := proxy.Stats().Requests
		lift := proxy.BlackHole(faultproxy.Match{Resource: "gizmos"})
		DeferCleanup(lift)
		// A typed, an unstructured and a metadata-only informer per cache.
		cut := proxy.CutWatches(faultproxy.Match{Resource: "gizmos"})
		Expect(cut).To(Equal(9))
		Expect(gizmos.Delete(ctx, "g-05", metav1.DeleteOptions{})).To(Succeed())
		_, err = gizmos.Create(ctx, crdGizmo(ns, "g-05b", 5), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		crdSetStatus(ctx, gizmos, "g-06", "Relisted", 6)
		crdSetSpec(ctx, gizmos, "g-07", map[string]any{"replicas": int64(7)})
		gone, err := proxy.Inject(faultproxy.Rule{
			Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: "gizmos",
				Predicate: func(r *http.Request) bool { return !faultproxy.IsStreamingList(r) }},
			Fault: faultproxy.Fault{Kind: faultproxy.Gone},
			Times: cut,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gone.Remove)
		lift()
		Eventually(func() int64 {
			after := proxy.Stats().Requests
			return after.Lists + after.StreamingWatches - before.Lists - before.StreamingWatches
		}).WithTimeout(crTimeout).Should(BeNumerically(">=", cut), "every informer relisted")
		compare()

		By("typed Gizmos hold what the API server defaulted, and nothing it pruned")
		var g testobjects.Gizmo
		Expect(caches["encoded"].Get(ctx, types.NamespacedName{Namespace: ns, Name: "g-00"}, &g)).To(Succeed())
		Expect(g.Spec.Replicas).To(Equal(ptr.To[int32](1)), "the schema's default")
		Expect(g.Spec.Size.String()).To(Equal("1Gi"), "the schema's default")
	})

	It("read the same through caches with a transform, selectors per object and field indices", func(ctx SpecContext) {
		ns := createNamespace(ctx, "crd-options")
		gizmos := direct.Resource(crdGizmos).Namespace(ns)
		for i := range 6 {
			_, err := gizmos.Create(ctx, crdGizmo(ns, fmt.Sprintf("g-%02d", i), i), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		for i := range 3 {
			crdCreateGadget(ctx, direct, crdGadget(ns, fmt.Sprintf("%s-%d", ns, i), i))
		}
		scheme := kruntime.NewScheme()
		Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
		Expect(testobjects.AddGizmo(scheme)).To(Succeed())
		red, err := labels.Parse("color=red,crd-run=" + ns)
		Expect(err).NotTo(HaveOccurred())
		opts := func() cache.Options {
			return cache.Options{
				Scheme:           scheme,
				DefaultTransform: cache.TransformStripManagedFields(),
				ByObject: map[client.Object]cache.ByObject{
					&testobjects.Gizmo{}:          {Label: red},
					crdUnstructured(crdGizmoGVK):  {Label: red},
					crdUnstructured(crdGadgetGVK): {Field: fields.OneTermEqualSelector("metadata.name", ns+"-1")},
				},
			}
		}
		caches := map[string]cache.Cache{}
		for name, newCache := range map[string]cache.NewCacheFunc{
			"controller-runtime": cache.New,
			"leaninformer":       informer.NewCacheWith(informer.WithMetrics(nil)),
			"encoded":            informer.NewCacheWith(informer.WithEncodedStore(), informer.WithMetrics(nil)),
		} {
			c, err := newCache(cfg, opts())
			Expect(err).NotTo(HaveOccurred())
			Expect(c.IndexField(ctx, &testobjects.Gizmo{}, "app", func(o client.Object) []string {
				return crdIndexValue(o.(*testobjects.Gizmo).Spec.Selector["app"])
			})).To(Succeed())
			Expect(c.IndexField(ctx, &testobjects.Gizmo{}, "phase", func(o client.Object) []string {
				return crdIndexValue(o.(*testobjects.Gizmo).Status.Phase)
			})).To(Succeed())
			for field, path := range map[string][]string{"app": {"spec", "selector", "app"}, "phase": {"status", "phase"}} {
				Expect(c.IndexField(ctx, crdUnstructured(crdGizmoGVK), field, func(o client.Object) []string {
					v, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, path...)
					return crdIndexValue(v)
				})).To(Succeed())
			}
			crStart(ctx, c)
			caches[name] = c
		}
		queries := []crQuery{
			{"the namespace", 3, []client.ListOption{client.InNamespace(ns)}},
			{"an indexed spec field", 1, []client.ListOption{client.InNamespace(ns), client.MatchingFields{"app": "a0"}}},
			{"an indexed status field", 0, []client.ListOption{client.InNamespace(ns), client.MatchingFields{"phase": "Ready"}}},
		}
		kinds := []crListKind{
			{"typed Gizmos", func() client.ObjectList { return &testobjects.GizmoList{} }},
			{"unstructured Gizmos", func() client.ObjectList { return crdUnstructuredList(crdGizmoGVK) }},
		}
		check := func() {
			for _, kind := range kinds {
				crExpectSameLists(ctx, caches, kind, queries, nil)
			}
			crExpectSameLists(ctx, caches, crListKind{"unstructured Gadgets", func() client.ObjectList { return crdUnstructuredList(crdGadgetGVK) }},
				[]crQuery{{"all", 1, nil}}, nil)
		}
		check()
		g1, err := gizmos.Get(ctx, "g-01", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		g1.SetLabels(map[string]string{"color": "red", "crd-run": ns}) // starts matching
		_, err = gizmos.Update(ctx, g1, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		g2, err := gizmos.Get(ctx, "g-02", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		g2.SetLabels(map[string]string{"color": "blue", "crd-run": ns}) // stops matching
		_, err = gizmos.Update(ctx, g2, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		crdSetStatus(ctx, gizmos, "g-04", "Ready", 1)
		queries[2].n = 1 // g-04's status
		check()
		var got testobjects.Gizmo
		Expect(caches["encoded"].Get(ctx, types.NamespacedName{Namespace: ns, Name: "g-04"}, &got)).To(Succeed())
		Expect(got.Status.Phase).To(Equal("Ready"))
		Expect(got.ManagedFields).To(BeEmpty())
	})

	// An operator's informers may start before its CRDs are installed: the
	// LISTs answer 404 until they are. (Deleting the CRD and making it again
	// was checked too: every informer converged at the same time as
	// client-go's, about 4.6 s later, which is too slow for every CI run.)
	It("reach an informer started before the CRD exists", func(ctx SpecContext) {
		ns := createNamespace(ctx, "crd-late")
		widgets := direct.Resource(crdWidgets).Namespace(ns)
		informers := map[string]toolscache.SharedIndexInformer{
			"client-go": toolscache.NewSharedIndexInformer(crdListWatch(direct, crdWidgets, ns, ""), &unstructured.Unstructured{}, 0, toolscache.Indexers{}),
		}
		for name, opts := range map[string][]informer.Option{
			"plain":              {},
			"encoded, paginated": {informer.WithEncodedStore(), informer.WithStrategy(informer.ListWatch)},
		} {
			informers[name] = informer.NewSharedIndexInformerWithOptions(crdListWatch(direct, crdWidgets, ns, ""), &unstructured.Unstructured{}, toolscache.SharedIndexInformerOptions{}, opts...)
		}
		recorders := crdRunRecorded(ctx, informers)
		fresh := func(g Gomega) map[string]map[string]any {
			list, err := widgets.List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			out := map[string]map[string]any{}
			for i := range list.Items {
				out[ns+"/"+list.Items[i].GetName()] = list.Items[i].Object
			}
			return out
		}
		converge := func(n int) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				want := fresh(g)
				g.Expect(want).To(HaveLen(n))
				for name, inf := range informers {
					g.Expect(inf.HasSynced()).To(BeTrue(), name)
					g.Expect(crdStoreContent(inf.GetStore())).To(Equal(want), "the %s informer's store", name)
					g.Expect(recorders[name].state()).To(Equal(want), "the %s informer's handlers", name)
				}
			}).WithTimeout(crTimeout).Should(Succeed())
		}
		create := func(names ...string) {
			GinkgoHelper()
			for _, name := range names {
				u := crdUnstructured(crdWidgetGVK)
				u.SetName(name)
				u.Object["spec"] = map[string]any{"n": int64(len(name)), "f": 0.5}
				_, err := widgets.Create(ctx, u, metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
			}
		}
		// Caches made and started before the CRD exists: their RESTMappers
		// must find the kind once it is served.
		caches := map[string]cache.Cache{}
		for name, newCache := range map[string]cache.NewCacheFunc{
			"controller-runtime": cache.New,
			"leaninformer":       informer.NewCacheWith(informer.WithMetrics(nil)),
			"encoded":            informer.NewCacheWith(informer.WithEncodedStore(), informer.WithMetrics(nil)),
		} {
			c, err := newCache(cfg, cache.Options{})
			Expect(err).NotTo(HaveOccurred())
			crStart(ctx, c)
			Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
			err = c.List(ctx, crdUnstructuredList(crdWidgetGVK), client.InNamespace(ns))
			Expect(meta.IsNoMatchError(err)).To(BeTrue(), "%s: a List before the CRD exists: %v", name, err)
			caches[name] = c
		}
		for name, inf := range informers {
			Consistently(inf.HasSynced).WithTimeout(300*time.Millisecond).Should(BeFalse(), "%s: no CRD, no sync", name)
		}
		By("the CRD appears")
		opts := envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crdWidget()}}
		_, err := envtest.InstallCRDs(cfg, opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = envtest.UninstallCRDs(cfg, opts) })
		create("w-1", "w-2", "w-3")
		converge(3)
		crExpectSameLists(ctx, caches, crListKind{"unstructured Widgets", func() client.ObjectList { return crdUnstructuredList(crdWidgetGVK) }},
			[]crQuery{{"the namespace", 3, []client.ListOption{client.InNamespace(ns)}}}, nil)
	})
})

var (
	crdGizmoGVK  = testobjects.GizmoGVK
	crdGadgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	crdGizmos    = crdGizmoGVK.GroupVersion().WithResource("gizmos")
	crdGadgets   = crdGadgetGVK.GroupVersion().WithResource("gadgets")
	crdWidgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	crdWidgets   = crdWidgetGVK.GroupVersion().WithResource("widgets")
)

// crdIndexValue is an index function's values: v, or none if v is empty.
func crdIndexValue(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}

// crdWidget is the CRD of Widgets, namespaced, whose spec keeps any field.
func crdWidget() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", ListKind: "WidgetList", Plural: "widgets", Singular: "widget"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
}

// crdInstall installs the Gizmo (namespaced) and Gadget (cluster-scoped)
// CustomResourceDefinitions, each with a structural schema, defaults and a
// status subresource, and waits until the API server serves them.
func crdInstall(restCfg *rest.Config) {
	GinkgoHelper()
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	obj := func(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	}
	free := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	status := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"observedGeneration": {Type: "integer", Format: "int64"},
		"phase":              str,
		"conditions":         {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &free}},
	})
	gizmoSpec := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"replicas": {Type: "integer", Format: "int32", Default: &apiextensionsv1.JSON{Raw: []byte("1")}},
		"paused":   {Type: "boolean"},
		"selector": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}},
		"tags":     {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
		"size": {XIntOrString: true, Default: &apiextensionsv1.JSON{Raw: []byte(`"1Gi"`)},
			AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}},
		"template": obj(map[string]apiextensionsv1.JSONSchemaProps{"weight": {Type: "number"}}),
		"extra":    free,
	})
	gadgetSpec := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"level": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
		"ratio": {Type: "number"},
		"props": free,
	})
	crd := func(kind, plural string, scope apiextensionsv1.ResourceScope, spec apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "example.com",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Scope: scope,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type:       "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": status},
					}},
				}},
			},
		}
	}
	_, err := envtest.InstallCRDs(restCfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{
		crd("Gizmo", "gizmos", apiextensionsv1.NamespaceScoped, gizmoSpec),
		crd("Gadget", "gadgets", apiextensionsv1.ClusterScoped, gadgetSpec),
	}})
	Expect(err).NotTo(HaveOccurred())
}

// crdGizmo is Gizmo name with labels color (red for even i, blue for odd)
// and crd-run, a field the schema prunes, defaults left out, and numbers of
// every form JSON decoding gives: whole numbers in a number field, floats,
// an int64 above 2^53, nulls and empty maps and slices.
func crdGizmo(ns, name string, i int) *unstructured.Unstructured {
	color := "red"
	if i%2 == 1 {
		color = "blue"
	}
	u := crdUnstructured(crdGizmoGVK)
	u.SetName(name)
	u.SetLabels(map[string]string{"color": color, "crd-run": ns})
	u.Object["spec"] = map[string]any{
		"paused":   i%3 == 0,
		"selector": map[string]any{"app": fmt.Sprint("a", i)},
		"tags":     []any{"t", fmt.Sprint(i)},
		"bogus":    map[string]any{"pruned": true},
		"template": map[string]any{"weight": float64(i) + 0.5, "unknown": "pruned"},
		"extra": map[string]any{
			"int": int64(i), "float": 1.25, "whole": 2.0, "big": int64(1<<53 + 1), "neg": int64(-1 << 62),
			"null": nil, "emptyMap": map[string]any{}, "emptyList": []any{}, "mixed": []any{int64(1), "a", true, nil, 0.1},
		},
	}
	if i%4 == 0 {
		u.Object["spec"].(map[string]any)["template"] = map[string]any{"weight": int64(i)}
	}
	return u
}

// crdGadget is cluster-scoped Gadget name, labelled as crdGizmo's.
func crdGadget(ns, name string, i int) *unstructured.Unstructured {
	color := "red"
	if i%2 == 1 {
		color = "blue"
	}
	u := crdUnstructured(crdGadgetGVK)
	u.SetName(name)
	u.SetLabels(map[string]string{"color": color, "crd-run": ns})
	u.Object["spec"] = map[string]any{"ratio": 0.5 * float64(i), "props": map[string]any{"n": int64(i), "f": 3.0}, "gone": "pruned"}
	return u
}

func crdCreateGadget(ctx context.Context, dyn dynamic.Interface, u *unstructured.Unstructured) {
	GinkgoHelper()
	_, err := dyn.Resource(crdGadgets).Create(ctx, u, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx context.Context) {
		_ = dyn.Resource(crdGadgets).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
	})
}

// crdSetStatus writes name's status through the status subresource and
// returns the new resourceVersion.
func crdSetStatus(ctx context.Context, r dynamic.ResourceInterface, name, phase string, gen int64) string {
	GinkgoHelper()
	u, err := r.Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	u.Object["status"] = map[string]any{"phase": phase, "observedGeneration": gen,
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "score": 0.75}}}
	u.Object["spec"] = map[string]any{"ignored": "the status subresource keeps the spec"}
	u, err = r.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return u.GetResourceVersion()
}

// crdSetSpec merges fields into name's spec with an update.
func crdSetSpec(ctx context.Context, r dynamic.ResourceInterface, name string, fields map[string]any) {
	GinkgoHelper()
	u, err := r.Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	spec, _ := u.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	for k, v := range fields {
		spec[k] = v
	}
	u.Object["spec"] = spec
	_, err = r.Update(ctx, u, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func crdUnstructured(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u
}

func crdUnstructuredList(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// crdListWatch lists and watches gvr with a dynamic client (in ns, with the
// label selector sel), with client-go's watch-list semantics.
func crdListWatch(dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, sel string) toolscache.ListerWatcher {
	r := dyn.Resource(gvr).Namespace(ns)
	return toolscache.ToListWatcherWithWatchListSemantics(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (kruntime.Object, error) {
			opts.LabelSelector = sel
			return r.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = sel
			return r.Watch(ctx, opts)
		},
	}, dyn)
}

func crdStoreContent(s toolscache.Store) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, obj := range s.List() {
		key, err := toolscache.MetaNamespaceKeyFunc(obj)
		Expect(err).NotTo(HaveOccurred())
		out[key] = obj.(*unstructured.Unstructured).Object
	}
	return out
}

// crdCall is one handler call: its kind, and deep copies of its objects'
// content (a tombstone's object for a delete the handler was told late).
type crdCall struct {
	Op       string
	Old, New map[string]any
}

// crdRecorder records every handler call per key, and keeps the state the
// calls build.
type crdRecorder struct {
	mu      sync.Mutex
	calls   map[string][]crdCall
	objects map[string]map[string]any
}

// crdRunRecorded gives each informer a recorder and runs them all until the
// spec ends; it returns the recorders by the informers' names.
func crdRunRecorded(ctx context.Context, informers map[string]toolscache.SharedIndexInformer) map[string]*crdRecorder {
	GinkgoHelper()
	recorders := map[string]*crdRecorder{}
	runCtx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), GinkgoLogr))
	var wg sync.WaitGroup
	for name, inf := range informers {
		recorders[name] = newCRDRecorder()
		_, err := inf.AddEventHandler(recorders[name])
		Expect(err).NotTo(HaveOccurred())
		wg.Go(func() { inf.RunWithContext(runCtx) })
	}
	DeferCleanup(func() { cancel(); wg.Wait() })
	return recorders
}

func newCRDRecorder() *crdRecorder {
	return &crdRecorder{calls: map[string][]crdCall{}, objects: map[string]map[string]any{}}
}

func crdContent(obj any) (string, map[string]any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		_, content := crdContent(t.Obj)
		return t.Key, content
	}
	u := obj.(*unstructured.Unstructured)
	key, err := toolscache.MetaNamespaceKeyFunc(u)
	if err != nil {
		panic(err)
	}
	return key, u.DeepCopy().Object
}

func (r *crdRecorder) OnAdd(obj any, isInInitialList bool) {
	key, content := crdContent(obj)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[key] = append(r.calls[key], crdCall{Op: fmt.Sprint("add, initial ", isInInitialList), New: content})
	r.objects[key] = content
}

func (r *crdRecorder) OnUpdate(old, obj any) {
	_, oldContent := crdContent(old)
	key, content := crdContent(obj)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[key] = append(r.calls[key], crdCall{Op: "update", Old: oldContent, New: content})
	r.objects[key] = content
}

func (r *crdRecorder) OnDelete(obj any) {
	_, tombstone := obj.(toolscache.DeletedFinalStateUnknown)
	key, content := crdContent(obj)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[key] = append(r.calls[key], crdCall{Op: fmt.Sprint("delete, tombstone ", tombstone), Old: content})
	delete(r.objects, key)
}

func (r *crdRecorder) snapshot() map[string][]crdCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]crdCall, len(r.calls))
	for k, v := range r.calls {
		out[k] = append([]crdCall(nil), v...)
	}
	return out
}

// rvs lists key=resourceVersion of every object a call handed over.
func (r *crdRecorder) rvs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for key, calls := range r.calls {
		for _, c := range calls {
			if c.New != nil {
				u := unstructured.Unstructured{Object: c.New}
				out = append(out, key+"="+u.GetResourceVersion())
			}
		}
	}
	return out
}

func (r *crdRecorder) state() map[string]map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]map[string]any, len(r.objects))
	for k, v := range r.objects {
		out[k] = v
	}
	return out
}
