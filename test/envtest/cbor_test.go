package envtest

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/internal/testenv"
	"github.com/leaninformer/leaninformer/pkg/informer"
)

// cborGates are client-go's feature gates with ClientsAllowCBOR and
// ClientsPreferCBOR (alpha, off by default) turned on.
type cborGates struct{ clientfeatures.Gates }

func (g cborGates) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.ClientsAllowCBOR || f == clientfeatures.ClientsPreferCBOR {
		return true
	}
	return g.Gates.Enabled(f)
}

// mediaTypes records the media type of every configmaps and gizmos
// response, by resource and verb ("configmaps list", "gizmos watch").
type mediaTypes struct {
	mu   sync.Mutex
	seen map[string]map[string]bool
	next http.RoundTripper
}

func (m *mediaTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet {
		return resp, err
	}
	resource := faultproxy.ParseRequest(req).Resource
	if resource != "configmaps" && resource != "gizmos" {
		return resp, err
	}
	verb := resource + " list"
	if req.URL.Query().Get("watch") == "true" {
		verb = resource + " watch"
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[verb] == nil {
		m.seen[verb] = map[string]bool{}
	}
	m.seen[verb][mt] = true
	return resp, err
}

func (m *mediaTypes) get(verb string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for mt := range m.seen[verb] {
		out = append(out, mt)
	}
	return out
}

// With client-go's ClientsAllowCBOR and ClientsPreferCBOR gates on and an
// API server that serves CBOR (CBORServingAndStorage), a dynamic client
// lists and watches in CBOR; our informer, plain or with the encoded store
// (whose codec keeps unstructured objects as CBOR of its own), streaming or
// paginated, holds what client-go's informer holds.
var _ = Describe("CBOR on the wire", Ordered, func() {
	var (
		env     *envtest.Environment
		restCfg *rest.Config
		dyn     dynamic.Interface
		media   *mediaTypes
		ns      string
	)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

	BeforeAll(func(ctx context.Context) {
		orig := clientfeatures.FeatureGates()
		clientfeatures.ReplaceFeatureGates(cborGates{orig})
		DeferCleanup(func() { clientfeatures.ReplaceFeatureGates(orig) })

		assets, err := testenv.AssetsDir()
		Expect(err).NotTo(HaveOccurred())
		certDir, err := os.MkdirTemp("", "leaninformer-cbor-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = os.RemoveAll(certDir) })
		apiServer := &envtest.APIServer{CertDir: certDir}
		apiServer.Configure().Append("shutdown-watch-termination-grace-period", "2s")
		apiServer.Configure().Append("feature-gates", "CBORServingAndStorage=true")
		env = &envtest.Environment{
			BinaryAssetsDirectory:    assets,
			ControlPlane:             envtest.ControlPlane{APIServer: apiServer},
			ControlPlaneStartTimeout: time.Minute,
			ControlPlaneStopTimeout:  time.Minute,
		}
		restCfg, err = env.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		restCfg.QPS, restCfg.Burst = 2000, 4000
		media = &mediaTypes{seen: map[string]map[string]bool{}}
		restCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { media.next = rt; return media })
		restCfg.WarningHandler = rest.NoWarnings{} // of the fields a CRD's schema prunes
		dyn, err = dynamic.NewForConfig(restCfg)
		Expect(err).NotTo(HaveOccurred())

		ns = fmt.Sprintf("cbor-%d", time.Now().UnixNano()%100000)
		_, err = dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}},
			metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		for i := range 30 {
			_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, cborConfigMap(i, "v0"), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
	})

	lw := func() toolscache.ListerWatcher {
		client := dyn.Resource(gvr).Namespace(ns)
		return toolscache.ToListWatcherWithWatchListSemantics(&toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (kruntime.Object, error) {
				return client.List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return client.Watch(ctx, opts)
			},
		}, dyn)
	}

	// content is every stored object's content, by name.
	content := func(s toolscache.Store) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, obj := range s.List() {
			u := obj.(*unstructured.Unstructured)
			out[u.GetName()] = u.UnstructuredContent()
		}
		return out
	}

	for _, strategy := range []informer.Strategy{informer.Auto, informer.ListWatch} {
		for _, encoded := range []bool{false, true} {
			It(fmt.Sprintf("%v, encoded store %v: the store holds what client-go's holds", strategy, encoded), func(ctx context.Context) {
				opts := []informer.Option{informer.WithStrategy(strategy), informer.WithPageSize(10)}
				if encoded {
					opts = append(opts, informer.WithEncodedStore())
				}
				ours := informer.NewSharedIndexInformerWithOptions(lw(), &unstructured.Unstructured{}, toolscache.SharedIndexInformerOptions{}, opts...)
				theirs := toolscache.NewSharedIndexInformer(lw(), &unstructured.Unstructured{}, 0, toolscache.Indexers{})
				h := newStateHandler()
				_, err := ours.AddEventHandler(h)
				Expect(err).NotTo(HaveOccurred())
				runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
				var wg sync.WaitGroup
				for _, inf := range []toolscache.SharedIndexInformer{ours, theirs} {
					wg.Go(func() { inf.RunWithContext(runCtx) })
				}
				DeferCleanup(func() { cancel(); wg.Wait() })
				Eventually(ours.HasSynced).WithTimeout(time.Minute).Should(BeTrue())
				Eventually(theirs.HasSynced).WithTimeout(time.Minute).Should(BeTrue())

				client := dyn.Resource(gvr).Namespace(ns)
				tag := fmt.Sprintf("%v-%v", strategy, encoded)
				_, err = client.Update(ctx, cborConfigMap(1, tag), metav1.UpdateOptions{})
				Expect(err).NotTo(HaveOccurred())
				added := cborConfigMap(100, tag)
				added.SetName("added-" + strings.ToLower(tag))
				_, err = client.Create(ctx, added, metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(client.Delete(ctx, "added-"+strings.ToLower(tag), metav1.DeleteOptions{})).To(Succeed())
				_, err = client.Update(ctx, cborConfigMap(2, tag), metav1.UpdateOptions{})
				Expect(err).NotTo(HaveOccurred())

				Eventually(func(g Gomega) {
					want := content(theirs.GetStore())
					g.Expect(want["cm-2"]).To(HaveKeyWithValue("data", HaveKeyWithValue("tag", tag)))
					g.Expect(content(ours.GetStore())).To(Equal(want))
					g.Expect(h.state()).To(Equal(storeState(theirs.GetStore())))
				}).WithTimeout(time.Minute).Should(Succeed())
				// Both informers stream (Auto), or ours lists page by page.
				Expect(media.get("configmaps watch")).To(ConsistOf("application/cbor-seq"))
				if strategy == informer.ListWatch {
					Expect(media.get("configmaps list")).To(ConsistOf("application/cbor"))
				}
			})
		}
	}

	// Custom resources are served in CBOR too: their numbers, nulls and
	// empty maps and slices, as the API server defaults and prunes them,
	// must reach our stores and handlers as client-go's.
	It("custom resources: our informer, plain and encoded, holds what client-go's holds", func(ctx SpecContext) {
		// envtest's CRD client cannot write CBOR: it installs them in JSON.
		jsonCfg := rest.CopyConfig(restCfg)
		jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
		crdInstall(jsonCfg)
		gizmos := dyn.Resource(crdGizmos).Namespace(ns)
		for i := range 8 {
			_, err := gizmos.Create(ctx, crdGizmo(ns, fmt.Sprintf("g-%d", i), i), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		gizmoLW := func() toolscache.ListerWatcher { return crdListWatch(dyn, crdGizmos, ns, "") }
		theirs := toolscache.NewSharedIndexInformer(gizmoLW(), &unstructured.Unstructured{}, 0, toolscache.Indexers{})
		informers := map[string]toolscache.SharedIndexInformer{"client-go": theirs}
		for name, opts := range map[string][]informer.Option{
			"plain":              {},
			"encoded":            {informer.WithEncodedStore()},
			"encoded, paginated": {informer.WithEncodedStore(), informer.WithStrategy(informer.ListWatch), informer.WithPageSize(3)},
		} {
			informers[name] = informer.NewSharedIndexInformerWithOptions(gizmoLW(), &unstructured.Unstructured{}, toolscache.SharedIndexInformerOptions{}, opts...)
		}
		recorders := crdRunRecorded(ctx, informers)
		for _, inf := range informers {
			Eventually(inf.HasSynced).WithTimeout(time.Minute).Should(BeTrue())
		}

		crdSetStatus(ctx, gizmos, "g-1", "Ready", 1)
		crdSetSpec(ctx, gizmos, "g-2", map[string]any{"template": map[string]any{"weight": 2.0}, "extra": map[string]any{"f": 0.5, "n": nil}})
		Expect(gizmos.Delete(ctx, "g-3", metav1.DeleteOptions{})).To(Succeed())
		_, err := gizmos.Create(ctx, crdGizmo(ns, "g-new", 12), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		last := ns + "/g-0=" + crdSetStatus(ctx, gizmos, "g-0", "Last", 2)
		for name, rec := range recorders {
			Eventually(rec.rvs).WithTimeout(time.Minute).Should(ContainElement(last), name)
		}
		want := crdStoreContent(theirs.GetStore())
		Expect(want).To(HaveLen(8))
		for name, inf := range informers {
			Expect(crdStoreContent(inf.GetStore())).To(Equal(want), "the %s informer's store", name)
			Expect(recorders[name].snapshot()).To(Equal(recorders["client-go"].snapshot()), "the %s informer's handler calls", name)
		}
		Expect(media.get("gizmos watch")).To(ConsistOf("application/cbor-seq"))
		Expect(media.get("gizmos list")).To(ConsistOf("application/cbor"))
	})
})

// cborConfigMap is ConfigMap cm-i with values of every JSON type, as an
// unstructured object.
func cborConfigMap(i int, tag string) *unstructured.Unstructured {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Labels: map[string]string{"i": fmt.Sprint(i)}},
		Data:       map[string]string{"tag": tag, "empty": ""},
		BinaryData: map[string][]byte{"bin": {0, 1, 2, byte(i)}},
	}
	obj, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(cm)
	Expect(err).NotTo(HaveOccurred())
	return &unstructured.Unstructured{Object: obj}
}
