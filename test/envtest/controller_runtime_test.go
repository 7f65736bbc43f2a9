package envtest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
	lcache "github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/informer"
)

// The specs below run every controller-runtime cache feature a manager relies
// on three times, with controller-runtime's own cache, with leaninformer's
// and with leaninformer's on the encoded store, so that a behavioural
// difference shows as one entry failing next to its twins.
//
// They work on Secrets: the other suites fill the cluster with thousands of
// ConfigMaps, which every cluster-wide ConfigMap informer here would list.

// crTimeout bounds every wait for a manager, a cache or a reconciler.
const crTimeout = 30 * time.Second

// crCache is one of the caches each feature runs with.
type crCache struct {
	name     string
	newCache cache.NewCacheFunc
	ours     bool
	encoded  bool // leaninformer's encoded store
}

var crCaches = []crCache{
	{name: "controller-runtime", newCache: cache.New},
	{name: "leaninformer", newCache: informer.NewCache, ours: true},
	{name: "leaninformer encoded store", newCache: informer.NewCacheWith(informer.WithEncodedStore()), ours: true, encoded: true},
}

// crEntries makes the table's entries of one feature, one per cache.
func crEntries(feature string, spec func(context.Context, crCache)) []TableEntry {
	entries := make([]TableEntry, 0, len(crCaches))
	for _, c := range crCaches {
		entries = append(entries, Entry(fmt.Sprintf("%s [%s]", feature, c.name), spec, c))
	}
	return entries
}

var _ = Describe("controller-runtime managers against a real API server", func() {
	BeforeEach(func() { ctrl.SetLogger(GinkgoLogr) })

	DescribeTable("each cache feature behaves the same with controller-runtime's cache and leaninformer's",
		func(ctx SpecContext, spec func(context.Context, crCache), c crCache) { spec(ctx, c) },
		crEntries("typed objects, reconciled by a controller", crTypedObjects),
		crEntries("unstructured.Unstructured objects", crUnstructuredObjects),
		crEntries("metadata-only objects (builder.OnlyMetadata, PartialObjectMetadata)", crMetadataOnly),
		crEntries("IndexField before and after the informer started", crIndexField),
		crEntries("DefaultTransform", crDefaultTransform),
		crEntries("TransformStripManagedFields", crStripManagedFields),
		crEntries("ByObject: selectors, transform and namespaces per type", crByObject),
		crEntries("DefaultNamespaces: a multi-namespace cache", crDefaultNamespaces),
		crEntries("DefaultLabelSelector and DefaultFieldSelector", crSelectors),
		crEntries("Get and List block until the informer synced", crGetBlocksUntilSynced),
		crEntries("WaitForCacheSync", crWaitForCacheSync),
		crEntries("RemoveInformer stops the informer", crRemoveInformer),
		crEntries("DefaultWatchErrorHandler", crWatchErrorHandler),
		crEntries("DefaultEnableWatchBookmarks=false: leaninformer falls back, client-go's informer waits", crBookmarksOff),
		crEntries("ReaderFailOnMissingInformer", crReaderFailOnMissingInformer),
		crEntries("source.Kind handlers and their HasSynced", crSourceKind),
		crEntries("a caller writing into what it read: a copy leaves the cache as it was; an UnsafeDisableDeepCopy read shares it, but for the encoded store", crMutateWhatWasRead),
		crEntries("a NewInformer of the caller's: it is used, and reads are still copies", crCallersNewInformer),
	)
})

func crTypedObjects(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-typed")
	names := crNames("s", 10)
	crCreateSecrets(ctx, ns, nil, names...)

	mgr := crNewManager(cfg, c, ctrl.Options{})
	r := crAddLabeler(mgr, ns, &corev1.Secret{})
	crStartSynced(ctx, mgr)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.Secret{}), c)

	By("reconciling every object of the initial list")
	crExpectLabeled(ctx, ns, names...)
	Expect(r.keys()).To(ConsistOf(crKeys(ns, names...)))

	By("reading typed objects, as the API server has them, from the cache")
	Eventually(func(g Gomega) {
		var list corev1.SecretList
		g.Expect(mgr.GetCache().List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(len(names)))
		for _, s := range list.Items {
			g.Expect(s.Labels).To(HaveKeyWithValue(crReconciledLabel, "true"))
			g.Expect(s.Data).To(HaveKeyWithValue("name", []byte(s.Name)))
		}
	}).WithTimeout(crTimeout).Should(Succeed())

	By("following a live create, update and delete")
	crCreateSecrets(ctx, ns, nil, "live")
	crExpectLabeled(ctx, ns, "live")
	s := crServerSecret(ctx, ns, "live")
	s.Data["name"] = []byte("changed")
	_, err := clientset.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	key := types.NamespacedName{Namespace: ns, Name: "live"}
	Eventually(func(g Gomega) {
		var got corev1.Secret
		g.Expect(mgr.GetClient().Get(ctx, key, &got)).To(Succeed())
		g.Expect(got.Data).To(HaveKeyWithValue("name", []byte("changed")))
	}).WithTimeout(crTimeout).Should(Succeed())
	Expect(clientset.CoreV1().Secrets(ns).Delete(ctx, "live", metav1.DeleteOptions{})).To(Succeed())
	Eventually(func() error {
		return mgr.GetClient().Get(ctx, key, &corev1.Secret{})
	}).WithTimeout(crTimeout).Should(Satisfy(apierrors.IsNotFound))
}

func crUnstructuredObjects(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-unstructured")
	names := crNames("s", 10)
	crCreateSecrets(ctx, ns, nil, names...)

	// Unstructured reads go to the API server unless the client caches them.
	mgr := crNewManager(cfg, c, ctrl.Options{Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}}})
	r := crAddLabeler(mgr, ns, crUnstructuredSecret())
	crStartSynced(ctx, mgr)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), crUnstructuredSecret()), c)

	crExpectLabeled(ctx, ns, names...)
	Expect(r.keys()).To(ConsistOf(crKeys(ns, names...)))

	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	Eventually(func(g Gomega) {
		g.Expect(mgr.GetCache().List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(len(names)))
		for _, u := range list.Items {
			g.Expect(u.GetKind()).To(Equal("Secret"))
			g.Expect(u.GetLabels()).To(HaveKeyWithValue(crReconciledLabel, "true"))
			data, _, err := unstructured.NestedStringMap(u.Object, "data")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(data).To(HaveKey("name")) // base64, as the API server sends it
		}
	}).WithTimeout(crTimeout).Should(Succeed())

	By("following a live create")
	crCreateSecrets(ctx, ns, nil, "live")
	crExpectLabeled(ctx, ns, "live")
	Eventually(func(g Gomega) {
		got := crUnstructuredSecret()
		g.Expect(mgr.GetCache().Get(ctx, types.NamespacedName{Namespace: ns, Name: "live"}, got)).To(Succeed())
		g.Expect(got.GetLabels()).To(HaveKeyWithValue(crReconciledLabel, "true"))
	}).WithTimeout(crTimeout).Should(Succeed())
}

func crMetadataOnly(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-metadata")
	names := crNames("s", 10)
	crCreateSecrets(ctx, ns, map[string]string{"kind": "metadata"}, names...)

	mgr := crNewManager(cfg, c, ctrl.Options{})
	// The controller watches metadata only, and so does its reconciler.
	r := &crLabeler{client: mgr.GetClient(), template: crMetadataSecret()}
	Expect(ctrl.NewControllerManagedBy(mgr).Named("labeler").
		For(&corev1.Secret{}, builder.OnlyMetadata, builder.WithPredicates(crInNamespace(ns))).
		Complete(r)).To(Succeed())
	crStartSynced(ctx, mgr)

	crExpectLabeled(ctx, ns, names...)
	Expect(r.keys()).To(ConsistOf(crKeys(ns, names...)))

	inf := crInformer(ctx, mgr.GetCache(), crMetadataSecret())
	crExpectImplementation(inf, c)
	stored := inf.(toolscache.SharedIndexInformer).GetStore().List()
	Expect(stored).NotTo(BeEmpty())
	for _, obj := range stored {
		Expect(obj).To(BeAssignableToTypeOf(&metav1.PartialObjectMetadata{}), "the informer stores metadata only")
	}

	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	Eventually(func(g Gomega) {
		g.Expect(mgr.GetCache().List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(len(names)))
		for _, m := range list.Items {
			g.Expect(m.Labels).To(HaveKeyWithValue("kind", "metadata"))
			g.Expect(m.Labels).To(HaveKeyWithValue(crReconciledLabel, "true"))
		}
	}).WithTimeout(crTimeout).Should(Succeed())
}

func crIndexField(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-index")
	reds, blues := crNames("red", 4), crNames("blue", 3)
	crCreateSecrets(ctx, ns, map[string]string{"color": "red"}, reds...)
	crCreateSecrets(ctx, ns, map[string]string{"color": "blue", "size": "big"}, blues...)
	labelIndex := func(label string) client.IndexerFunc {
		return func(o client.Object) []string {
			if v, ok := o.GetLabels()[label]; ok {
				return []string{v}
			}
			return nil
		}
	}

	mgr := crNewManager(cfg, c, ctrl.Options{})
	By("indexing before the informer starts")
	Expect(mgr.GetFieldIndexer().IndexField(ctx, &corev1.Secret{}, "color", labelIndex("color"))).To(Succeed())
	crStartSynced(ctx, mgr)
	inf := crInformer(ctx, mgr.GetCache(), &corev1.Secret{})
	crExpectImplementation(inf, c)
	list := func(field, value string) func(Gomega) []string {
		return func(g Gomega) []string {
			var l corev1.SecretList
			g.Expect(mgr.GetCache().List(ctx, &l, client.InNamespace(ns), client.MatchingFields{field: value})).To(Succeed())
			return crItemNames(l.Items)
		}
	}
	Eventually(list("color", "red")).WithTimeout(crTimeout).Should(ConsistOf(reds))
	Eventually(list("color", "blue")).WithTimeout(crTimeout).Should(ConsistOf(blues))

	By("indexing after the informer synced")
	Expect(inf.HasSynced()).To(BeTrue())
	Expect(mgr.GetFieldIndexer().IndexField(ctx, &corev1.Secret{}, "size", labelIndex("size"))).To(Succeed())
	Eventually(list("size", "big")).WithTimeout(crTimeout).Should(ConsistOf(blues))

	By("keeping both indices up to date with live changes")
	s := crServerSecret(ctx, ns, reds[0])
	s.Labels = map[string]string{"color": "blue", "size": "big"}
	_, err := clientset.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(list("color", "red")).WithTimeout(crTimeout).Should(ConsistOf(reds[1:]))
	Eventually(list("color", "blue")).WithTimeout(crTimeout).Should(ConsistOf(append([]string{reds[0]}, blues...)))
	Eventually(list("size", "big")).WithTimeout(crTimeout).Should(ConsistOf(append([]string{reds[0]}, blues...)))
}

func crDefaultTransform(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-transform")
	names := crNames("s", 5)
	crCreateSecrets(ctx, ns, nil, names...)
	transform := func(in any) (any, error) {
		obj, ok := in.(client.Object)
		if !ok {
			return in, nil // a DeletedFinalStateUnknown, say
		}
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations["transformed"] = obj.GetResourceVersion()
		obj.SetAnnotations(annotations)
		return obj, nil
	}

	mgr := crNewManager(cfg, c, ctrl.Options{Cache: cache.Options{DefaultTransform: transform}})
	crStartSynced(ctx, mgr)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.Secret{}), c)

	expectTransformed := func(names ...string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			var list corev1.SecretList
			g.Expect(mgr.GetCache().List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			g.Expect(crItemNames(list.Items)).To(ConsistOf(names))
			for _, s := range list.Items {
				g.Expect(s.Annotations).To(HaveKeyWithValue("transformed", s.ResourceVersion))
			}
		}).WithTimeout(crTimeout).Should(Succeed())
	}
	By("transforming the initial list")
	expectTransformed(names...)
	Expect(crServerSecret(ctx, ns, names[0]).Annotations).NotTo(HaveKey("transformed"))

	By("transforming live creates and updates")
	crCreateSecrets(ctx, ns, nil, "live")
	s := crServerSecret(ctx, ns, names[0])
	s.Data["name"] = []byte("changed")
	_, err := clientset.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	expectTransformed(append(names, "live")...)
	Eventually(func(g Gomega) {
		var got corev1.Secret
		g.Expect(mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(s), &got)).To(Succeed())
		g.Expect(got.Data).To(HaveKeyWithValue("name", []byte("changed")))
		g.Expect(got.Annotations).To(HaveKeyWithValue("transformed", got.ResourceVersion))
	}).WithTimeout(crTimeout).Should(Succeed())
}

func crStripManagedFields(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-strip")
	names := crNames("s", 5)
	crCreateSecrets(ctx, ns, nil, names...)
	Expect(crServerSecret(ctx, ns, names[0]).ManagedFields).NotTo(BeEmpty(), "the API server tracks managed fields")

	mgr := crNewManager(cfg, c, ctrl.Options{Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()}})
	crStartSynced(ctx, mgr)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.Secret{}), c)

	crCreateSecrets(ctx, ns, nil, "live")
	s := crServerSecret(ctx, ns, names[0])
	s.Data["name"] = []byte("changed")
	s, err := clientset.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		var list corev1.SecretList
		g.Expect(mgr.GetCache().List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		g.Expect(crItemNames(list.Items)).To(ConsistOf(append(names, "live")))
		for _, item := range list.Items {
			g.Expect(item.ManagedFields).To(BeEmpty(), item.Name)
			if item.Name == s.Name {
				g.Expect(item.ResourceVersion).To(Equal(s.ResourceVersion))
			}
		}
	}).WithTimeout(crTimeout).Should(Succeed())
}

func crByObject(ctx context.Context, c crCache) {
	nsA, nsB, nsOut := createNamespace(ctx, "cr-byobject-a"), createNamespace(ctx, "cr-byobject-b"), createNamespace(ctx, "cr-byobject-out")
	wanted := map[string]string{"app": "wanted"}
	for _, ns := range []string{nsA, nsB, nsOut} {
		crCreateSecrets(ctx, ns, wanted, "wanted")
		crCreateSecrets(ctx, ns, nil, "unlabeled")
		for _, name := range []string{"chosen", "other"} {
			_, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
	}
	annotate := func(in any) (any, error) {
		if obj, ok := in.(client.Object); ok {
			obj.SetAnnotations(map[string]string{"by-object": "secret"})
		}
		return in, nil
	}

	mgr := crNewManager(cfg, c, ctrl.Options{Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
		// Secrets: a label selector and a transform, in nsA and nsB, where
		// nsB overrides the selector.
		&corev1.Secret{}: {
			Label:     labels.SelectorFromSet(wanted),
			Transform: annotate,
			Namespaces: map[string]cache.Config{
				nsA: {},
				nsB: {LabelSelector: labels.Everything()},
			},
		},
		// ConfigMaps: a field selector, in nsA only.
		&corev1.ConfigMap{}: {
			Field:      fields.OneTermEqualSelector("metadata.name", "chosen"),
			Namespaces: map[string]cache.Config{nsA: {}},
		},
	}}})
	crStartSynced(ctx, mgr)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.Secret{}), c)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.ConfigMap{}), c)

	Eventually(func(g Gomega) {
		var secrets corev1.SecretList
		g.Expect(mgr.GetCache().List(ctx, &secrets)).To(Succeed())
		g.Expect(crItemKeys(secrets.Items)).To(ConsistOf(nsA+"/wanted", nsB+"/wanted", nsB+"/unlabeled"))
		for _, s := range secrets.Items {
			g.Expect(s.Annotations).To(Equal(map[string]string{"by-object": "secret"}))
		}
		var configMaps corev1.ConfigMapList
		g.Expect(mgr.GetCache().List(ctx, &configMaps)).To(Succeed())
		g.Expect(crItemKeys(configMaps.Items)).To(ConsistOf(nsA + "/chosen"))
	}).WithTimeout(crTimeout).Should(Succeed())
	err := mgr.GetCache().Get(ctx, types.NamespacedName{Namespace: nsOut, Name: "wanted"}, &corev1.Secret{})
	Expect(err).To(MatchError(ContainSubstring("unknown namespace")))

	By("following live changes through the selectors")
	crCreateSecrets(ctx, nsA, wanted, "live-wanted")
	crCreateSecrets(ctx, nsA, nil, "live-unlabeled")
	s := crServerSecret(ctx, nsA, "wanted")
	s.Labels = nil // no longer selected: the watch reports it deleted
	_, err = clientset.CoreV1().Secrets(nsA).Update(ctx, s, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) []string {
		var secrets corev1.SecretList
		g.Expect(mgr.GetCache().List(ctx, &secrets, client.InNamespace(nsA))).To(Succeed())
		return crItemNames(secrets.Items)
	}).WithTimeout(crTimeout).Should(ConsistOf("live-wanted"))
}

func crDefaultNamespaces(ctx context.Context, c crCache) {
	nsA, nsB, nsOut := createNamespace(ctx, "cr-namespaces-a"), createNamespace(ctx, "cr-namespaces-b"), createNamespace(ctx, "cr-namespaces-out")
	names := crNames("s", 5)
	for _, ns := range []string{nsA, nsB, nsOut} {
		crCreateSecrets(ctx, ns, nil, names...)
	}

	mgr := crNewManager(cfg, c, ctrl.Options{Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{nsA: {}, nsB: {}}}})
	r := crAddLabeler(mgr, "", &corev1.Secret{})
	crStartSynced(ctx, mgr)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.Secret{}), c)

	By("reconciling the objects of the cached namespaces")
	crExpectLabeled(ctx, nsA, names...)
	crExpectLabeled(ctx, nsB, names...)
	Eventually(func(g Gomega) {
		var list corev1.SecretList
		g.Expect(mgr.GetCache().List(ctx, &list)).To(Succeed())
		g.Expect(crItemKeys(list.Items)).To(ConsistOf(append(crKeys(nsA, names...), crKeys(nsB, names...)...)))
	}).WithTimeout(crTimeout).Should(Succeed())

	By("not seeing the objects outside")
	err := mgr.GetCache().Get(ctx, types.NamespacedName{Namespace: nsOut, Name: names[0]}, &corev1.Secret{})
	Expect(err).To(MatchError(ContainSubstring("unknown namespace")))
	var out corev1.SecretList
	Expect(mgr.GetCache().List(ctx, &out, client.InNamespace(nsOut))).NotTo(Succeed())

	By("following a live create inside while one outside goes unseen")
	crCreateSecrets(ctx, nsOut, nil, "live")
	crCreateSecrets(ctx, nsA, nil, "live")
	crExpectLabeled(ctx, nsA, "live")
	Expect(r.keys()).To(ConsistOf(append(crKeys(nsA, append(names, "live")...), crKeys(nsB, names...)...)))
	for _, s := range crServerSecrets(ctx, nsOut) {
		Expect(s.Labels).NotTo(HaveKey(crReconciledLabel), s.Name)
	}
}

func crSelectors(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-selectors")
	// The label's value is the namespace, so that the cluster-wide cache
	// selects this spec's objects only.
	selected := map[string]string{"selected-in": ns}
	crCreateSecrets(ctx, ns, selected, "a", "b", "c", "excluded")
	crCreateSecrets(ctx, ns, nil, "unlabeled-1", "unlabeled-2")

	mgr := crNewManager(cfg, c, ctrl.Options{Cache: cache.Options{
		DefaultLabelSelector: labels.SelectorFromSet(selected),
		DefaultFieldSelector: fields.OneTermNotEqualSelector("metadata.name", "excluded"),
	}})
	crStartSynced(ctx, mgr)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.Secret{}), c)
	cached := func(g Gomega) []string {
		var list corev1.SecretList
		g.Expect(mgr.GetCache().List(ctx, &list)).To(Succeed())
		return crItemKeys(list.Items)
	}
	Eventually(cached).WithTimeout(crTimeout).Should(ConsistOf(crKeys(ns, "a", "b", "c")))

	By("adding an object that starts to match and dropping one that stops")
	s := crServerSecret(ctx, ns, "unlabeled-1")
	s.Labels = selected
	_, err := clientset.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	s = crServerSecret(ctx, ns, "a")
	s.Labels = nil
	_, err = clientset.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(cached).WithTimeout(crTimeout).Should(ConsistOf(crKeys(ns, "b", "c", "unlabeled-1")))
}

func crGetBlocksUntilSynced(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-blocking")
	names := crNames("s", 30)
	crCreateSecrets(ctx, ns, nil, names...)

	mgr := crNewManager(cfg, c, ctrl.Options{})
	crStartSynced(ctx, mgr) // a cache without informers

	By("getting through an informer that does not exist yet")
	var s corev1.Secret
	Expect(mgr.GetCache().Get(ctx, types.NamespacedName{Namespace: ns, Name: names[7]}, &s)).To(Succeed())
	Expect(s.Data).To(HaveKeyWithValue("name", []byte(names[7])))
	var list corev1.SecretList
	Expect(mgr.GetCache().List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	Expect(crItemNames(list.Items)).To(ConsistOf(names), "the first read sees the whole initial list")

	By("listing through another new informer, of metadata")
	metaList := &metav1.PartialObjectMetadataList{}
	metaList.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	Expect(mgr.GetCache().List(ctx, metaList, client.InNamespace(ns))).To(Succeed())
	Expect(metaList.Items).To(HaveLen(len(names)))

	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Secret{})
	Expect(err).NotTo(HaveOccurred())
	Expect(inf.HasSynced()).To(BeTrue(), "GetInformer blocks until synced")
	crExpectImplementation(inf, c)
}

func crWaitForCacheSync(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-waitforsync")
	names := crNames("s", 20)
	crCreateSecrets(ctx, ns, nil, names...)

	mgr := crNewManager(cfg, c, ctrl.Options{})
	typed, err := mgr.GetCache().GetInformer(ctx, &corev1.Secret{})
	Expect(err).NotTo(HaveOccurred())
	metadata, err := mgr.GetCache().GetInformer(ctx, crMetadataSecret())
	Expect(err).NotTo(HaveOccurred())
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	Expect(mgr.GetCache().WaitForCacheSync(canceled)).To(BeFalse(), "a cache that never started never syncs")
	Expect(typed.HasSynced()).To(BeFalse())

	crStart(ctx, mgr)
	waitCtx, cancelWait := context.WithTimeout(ctx, crTimeout)
	defer cancelWait()
	Expect(mgr.GetCache().WaitForCacheSync(waitCtx)).To(BeTrue())
	Expect(typed.HasSynced()).To(BeTrue())
	Expect(metadata.HasSynced()).To(BeTrue())
	crExpectImplementation(typed, c)
	crExpectImplementation(metadata, c)

	var keys []string
	for _, obj := range typed.(toolscache.SharedIndexInformer).GetStore().List() {
		if s := obj.(*corev1.Secret); s.Namespace == ns {
			keys = append(keys, s.Name)
		}
	}
	Expect(keys).To(ConsistOf(names), "a synced informer holds the whole initial list")
}

func crRemoveInformer(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-remove")
	crCreateSecrets(ctx, ns, nil, "before")

	mgr := crNewManager(cfg, c, ctrl.Options{})
	crStartSynced(ctx, mgr)
	old := crInformer(ctx, mgr.GetCache(), &corev1.Secret{})
	crExpectImplementation(old, c)
	Expect(old.IsStopped()).To(BeFalse())

	Expect(mgr.GetCache().RemoveInformer(ctx, &corev1.Secret{})).To(Succeed())
	Eventually(old.IsStopped).WithTimeout(crTimeout).Should(BeTrue(), "the removed informer stops")
	_, err := old.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
	Expect(err).To(HaveOccurred(), "a stopped informer takes no handlers")

	By("starting a new informer on the next read")
	crCreateSecrets(ctx, ns, nil, "after")
	var list corev1.SecretList
	Expect(mgr.GetCache().List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	Expect(crItemNames(list.Items)).To(ConsistOf("before", "after"))
	renewed := crInformer(ctx, mgr.GetCache(), &corev1.Secret{})
	Expect(renewed).NotTo(BeIdenticalTo(old))
	Expect(renewed.IsStopped()).To(BeFalse())
	crExpectImplementation(renewed, c)
}

func crWatchErrorHandler(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-errors")
	crCreateSecrets(ctx, ns, nil, crNames("s", 5)...)
	proxy, err := faultproxy.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(proxy.Close)
	// Every list and watch of Secrets fails until the fault is removed;
	// client-go falls back from a failed streaming list to a LIST without
	// calling the handler, so a single fault would not reach it.
	fault, err := proxy.Inject(faultproxy.Rule{
		Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.List, faultproxy.Watch}, Resource: "secrets"},
		Fault: faultproxy.Fault{Kind: faultproxy.InternalError, Message: "injected by the test"},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(fault.Remove)

	var (
		mu         sync.Mutex
		errs       []error
		reflectors []*toolscache.Reflector
	)
	handler := func(_ context.Context, r *toolscache.Reflector, err error) {
		mu.Lock()
		defer mu.Unlock()
		errs, reflectors = append(errs, err), append(reflectors, r)
	}
	mgr := crNewManager(proxy.ClientConfig(), c, ctrl.Options{Cache: cache.Options{DefaultWatchErrorHandler: handler}})
	crStartSynced(ctx, mgr)
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Secret{}, cache.BlockUntilSynced(false))
	Expect(err).NotTo(HaveOccurred())
	crExpectImplementation(inf, c)

	By("calling the handler with the server's error")
	Eventually(func(g Gomega) {
		mu.Lock()
		defer mu.Unlock()
		g.Expect(errs).NotTo(BeEmpty())
		g.Expect(apierrors.IsInternalError(errs[0])).To(BeTrue(), "got %v", errs[0])
		g.Expect(errs[0]).To(MatchError(ContainSubstring("injected by the test")))
		g.Expect(reflectors[0]).NotTo(BeNil())
	}).WithTimeout(crTimeout).Should(Succeed())
	Expect(inf.HasSynced()).To(BeFalse())

	By("syncing once the server recovers")
	fault.Remove()
	Eventually(inf.HasSynced).WithTimeout(crTimeout).Should(BeTrue())
	var list corev1.SecretList
	Expect(mgr.GetCache().List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	Expect(list.Items).To(HaveLen(5))
}

func crBookmarksOff(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-nobookmarks")
	names := crNames("s", 10)
	crCreateSecrets(ctx, ns, nil, names...)
	var counter faultproxy.RequestCounter
	restCfg := rest.CopyConfig(cfg)
	restCfg.WrapTransport = counter.Wrap

	mgr := crNewManager(restCfg, c, ctrl.Options{Cache: cache.Options{DefaultEnableWatchBookmarks: ptr.To(false)}})
	crStartSynced(ctx, mgr)
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Secret{}, cache.BlockUntilSynced(false))
	Expect(err).NotTo(HaveOccurred())
	crExpectImplementation(inf, c)

	if !c.ours {
		// A known difference. controller-runtime's watch function turns
		// allowWatchBookmarks off, so the API server never ends a streaming
		// list. client-go's reflector (WatchListClient is on by default)
		// waits for the end bookmark and, when the watch times out after 5
		// to 10 minutes, opens another streaming watch: it never syncs. The
		// spec shows it still waiting after 15s, longer than leaninformer
		// needs to fall back.
		By("waiting, with client-go's reflector, for an end bookmark that never comes")
		Consistently(inf.HasSynced).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(BeFalse())
		counts := counter.Counts()
		Expect(counts.StreamingWatches).To(BeNumerically(">=", 1))
		Expect(counts.Lists).To(BeZero(), "client-go did not fall back to a LIST")
		return
	}

	By("syncing without bookmarks, by falling back to a paginated LIST")
	start := time.Now()
	Eventually(inf.HasSynced).WithTimeout(crTimeout).Should(BeTrue(), "synced within %s", crTimeout)
	counts := counter.Counts()
	GinkgoWriter.Printf("%s synced without bookmarks in %s; requests: %+v\n", c.name, time.Since(start), counts)
	Expect(counts.StreamingWatches).To(BeNumerically(">=", 1), "it tried to stream first")
	Expect(counts.ListsWithLimit).To(BeNumerically(">=", 1), "then fell back to a paginated LIST")
	var list corev1.SecretList
	Expect(mgr.GetCache().List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	Expect(crItemNames(list.Items)).To(ConsistOf(names))

	By("watching after the fallback")
	crCreateSecrets(ctx, ns, nil, "live")
	Eventually(func(g Gomega) []string {
		g.Expect(mgr.GetCache().List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		return crItemNames(list.Items)
	}).WithTimeout(crTimeout).Should(ContainElement("live"))
}

func crReaderFailOnMissingInformer(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-failmissing")
	crCreateSecrets(ctx, ns, nil, "s")

	mgr := crNewManager(cfg, c, ctrl.Options{Cache: cache.Options{ReaderFailOnMissingInformer: true}})
	crStartSynced(ctx, mgr)
	key := types.NamespacedName{Namespace: ns, Name: "s"}

	var notCached *cache.ErrResourceNotCached
	err := mgr.GetCache().Get(ctx, key, &corev1.Secret{})
	Expect(errors.As(err, &notCached)).To(BeTrue(), "got %v", err)
	Expect(notCached.GVK.Kind).To(Equal("Secret"))
	err = mgr.GetClient().List(ctx, &corev1.SecretList{}, client.InNamespace(ns))
	Expect(errors.As(err, &notCached)).To(BeTrue(), "got %v", err)

	By("reading once an informer exists")
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.Secret{}), c)
	Expect(mgr.GetCache().Get(ctx, key, &corev1.Secret{})).To(Succeed())
	err = mgr.GetCache().Get(ctx, key, crMetadataSecret())
	Expect(errors.As(err, &notCached)).To(BeTrue(), "metadata-only reads need their own informer, got %v", err)
}

func crSourceKind(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-kind")
	names := crNames("s", 20)
	crCreateSecrets(ctx, ns, nil, names...)
	newController := func(mgr manager.Manager, name string) *crLabeler {
		r := &crLabeler{client: mgr.GetClient(), template: &corev1.Secret{}, readOnly: true}
		inNamespace := predicate.NewTypedPredicateFuncs(func(s *corev1.Secret) bool { return s.Namespace == ns })
		Expect(ctrl.NewControllerManagedBy(mgr).Named(name).
			WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Secret{}, &handler.TypedEnqueueRequestForObject[*corev1.Secret]{}, inNamespace)).
			Complete(r)).To(Succeed())
		return r
	}

	mgr := crNewManager(cfg, c, ctrl.Options{})
	early := newController(mgr, "early")
	crStartSynced(ctx, mgr)

	By("a controller started with the manager reconciles every object of the initial list")
	Eventually(early.keys).WithTimeout(crTimeout).Should(ConsistOf(crKeys(ns, names...)))
	inf := crInformer(ctx, mgr.GetCache(), &corev1.Secret{})
	crExpectImplementation(inf, c)

	By("a handler added after sync has seen the whole list once its registration has synced")
	h := newStateHandler()
	reg, err := inf.AddEventHandler(h)
	Expect(err).NotTo(HaveOccurred())
	Eventually(reg.HasSynced).WithTimeout(crTimeout).Should(BeTrue())
	Expect(crKeysIn(h.state(), ns)).To(ConsistOf(crKeys(ns, names...)))
	Expect(h.adds(true)).To(BeNumerically(">=", len(names)), "initial-list adds say so")
	Expect(inf.RemoveEventHandler(reg)).To(Succeed())

	By("a controller added to the running manager reconciles every object too")
	late := newController(mgr, "late")
	Eventually(late.keys).WithTimeout(crTimeout).Should(ConsistOf(crKeys(ns, names...)))
	crCreateSecrets(ctx, ns, nil, "live")
	want := crKeys(ns, append(names, "live")...)
	Eventually(early.keys).WithTimeout(crTimeout).Should(ConsistOf(want))
	Eventually(late.keys).WithTimeout(crTimeout).Should(ConsistOf(want))
}

// crNewManager makes a manager on restCfg with c's cache, no metrics or
// probe listeners and no controller name checks (every spec names its
// controllers alike).
// crMutateWhatWasRead writes into objects read through the manager's
// client (Get and List, typed and metadata-only) and checks that the cache
// still returns them as the API server has them. controller-runtime's cache
// and leaninformer's plain store deep-copy every read; the encoded store
// decodes a fresh object instead, with controller-runtime's copy turned off.
func crMutateWhatWasRead(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-mutate")
	names := crNames("s", 5)
	crCreateSecrets(ctx, ns, map[string]string{"app": "mutate"}, names...)
	mgr := crNewManager(cfg, c, ctrl.Options{})
	crStartSynced(ctx, mgr)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.Secret{}), c)
	crInformer(ctx, mgr.GetCache(), crMetadataSecret())
	cl := mgr.GetClient()
	key := types.NamespacedName{Namespace: ns, Name: names[0]}

	By("reading, writing into and reading again a typed object")
	var first corev1.Secret
	Eventually(func() error { return cl.Get(ctx, key, &first) }).WithTimeout(crTimeout).Should(Succeed())
	Expect(first.Kind).To(Equal("Secret"), "controller-runtime's reader sets the kind")
	first.Labels["app"] = "changed"
	first.Data["name"][0] = 'X'
	var again corev1.Secret
	Expect(cl.Get(ctx, key, &again)).To(Succeed())
	Expect(again.Labels).To(HaveKeyWithValue("app", "mutate"))
	Expect(again.Data).To(HaveKeyWithValue("name", []byte(names[0])))

	By("listing, writing into every item and listing again")
	var list corev1.SecretList
	Expect(cl.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app": "mutate"})).To(Succeed())
	Expect(list.Items).To(HaveLen(len(names)))
	for i := range list.Items {
		list.Items[i].Labels["app"] = "changed"
		list.Items[i].Data["name"] = []byte("changed")
	}
	var list2 corev1.SecretList
	Expect(cl.List(ctx, &list2, client.InNamespace(ns), client.MatchingLabels{"app": "mutate"})).To(Succeed())
	Expect(crItemNames(list2.Items)).To(ConsistOf(names))
	for _, s := range list2.Items {
		Expect(s.Data).To(HaveKeyWithValue("name", []byte(s.Name)))
	}

	By("the same with metadata-only objects")
	m := crMetadataSecret()
	Expect(cl.Get(ctx, key, m)).To(Succeed())
	m.Labels["app"] = "changed"
	m2 := crMetadataSecret()
	Expect(cl.Get(ctx, key, m2)).To(Succeed())
	Expect(m2.Labels).To(HaveKeyWithValue("app", "mutate"))
	Expect(m2.GroupVersionKind()).To(Equal(corev1.SchemeGroupVersion.WithKind("Secret")))

	By("writing into what a read without DeepCopy returned")
	// controller-runtime's reader then hands out the stored object, so the
	// write reaches the cache (its own suite asserts so); the encoded store
	// hands out a fresh decode, so it never does (docs/compatibility.md).
	unsafeKey := types.NamespacedName{Namespace: ns, Name: names[1]}
	var shared corev1.Secret
	Expect(mgr.GetCache().Get(ctx, unsafeKey, &shared, client.UnsafeDisableDeepCopy)).To(Succeed())
	shared.Labels["app"] = "written into the read"
	var after corev1.Secret
	Expect(mgr.GetCache().Get(ctx, unsafeKey, &after, client.UnsafeDisableDeepCopy)).To(Succeed())
	if c.encoded {
		Expect(after.Labels).To(HaveKeyWithValue("app", "mutate"), "the encoded store's reads are its own")
	} else {
		Expect(after.Labels).To(HaveKeyWithValue("app", "written into the read"), "controller-runtime's UnsafeDisableDeepCopy shares the stored object")
	}

	if c.encoded {
		By("the store holds the objects encoded")
		sii := crInformer(ctx, mgr.GetCache(), &corev1.Secret{}).(toolscache.SharedIndexInformer)
		stats := sii.GetIndexer().(*lcache.Indexer).CodecStats()
		Expect(stats.Encoded).To(BeNumerically(">=", len(names)))
		Expect(stats.Unencoded).To(BeZero())
	}
}

// crCallersNewInformer: NewCache(With) keeps a NewInformer the caller set.
// With the encoded store, it turned controller-runtime's DeepCopy off all
// the same, so that a caller writing into what it read wrote into the
// caller's informer's store.
func crCallersNewInformer(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-newinformer")
	crCreateSecrets(ctx, ns, nil, "s")
	mgr := crNewManager(cfg, c, ctrl.Options{Cache: cache.Options{NewInformer: toolscache.NewSharedIndexInformer}})
	crStartSynced(ctx, mgr)
	inf := crInformer(ctx, mgr.GetCache(), &corev1.Secret{})
	Expect(crInformerTypes(inf)).NotTo(ContainElement(reflect.TypeFor[*informer.SharedIndexInformer]()), "the caller's informer is client-go's")

	cl := mgr.GetClient()
	key := types.NamespacedName{Namespace: ns, Name: "s"}
	var first corev1.Secret
	Eventually(func() error { return cl.Get(ctx, key, &first) }).WithTimeout(crTimeout).Should(Succeed())
	first.Data["name"] = []byte("changed by the caller")
	var again corev1.Secret
	Expect(cl.Get(ctx, key, &again)).To(Succeed())
	Expect(again.Data).To(HaveKeyWithValue("name", []byte("s")))
}

func crNewManager(restCfg *rest.Config, c crCache, opts ctrl.Options) manager.Manager {
	GinkgoHelper()
	opts.NewCache = c.newCache
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	opts.Logger = GinkgoLogr
	mgr, err := ctrl.NewManager(restCfg, opts)
	Expect(err).NotTo(HaveOccurred())
	return mgr
}

// crStart runs a manager or a cache until the spec ends and checks that it
// stops cleanly.
func crStart(ctx context.Context, r interface{ Start(context.Context) error }) {
	GinkgoHelper()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- r.Start(runCtx) }()
	DeferCleanup(func() {
		cancel()
		var err error
		Eventually(done).WithTimeout(time.Minute).Should(Receive(&err))
		Expect(err).NotTo(HaveOccurred(), "%T stopped with an error", r)
	})
}

// crStartSynced runs mgr until the spec ends and waits until it has started:
// its caches synced and its controllers running. Informers a spec adds
// before that point would hold the manager's start up until they sync, and a
// manager that is starting up cannot be stopped.
func crStartSynced(ctx context.Context, mgr manager.Manager) {
	GinkgoHelper()
	crStart(ctx, mgr)
	// Without leader election, Elected closes once startup is complete.
	Eventually(mgr.Elected()).WithTimeout(crTimeout).Should(BeClosed(), "the manager started")
}

// crInformer returns the cache's synced informer for obj.
func crInformer(ctx context.Context, c cache.Cache, obj client.Object) cache.Informer {
	GinkgoHelper()
	getCtx, cancel := context.WithTimeout(ctx, crTimeout)
	defer cancel()
	inf, err := c.GetInformer(getCtx, obj)
	Expect(err).NotTo(HaveOccurred())
	return inf
}

// crExpectImplementation asserts that inf runs on leaninformer's
// SharedIndexInformer with the ours cache and on client-go's with the other.
// A multi-namespace cache hands out a wrapper with one informer per
// namespace in an unexported map; reflection reads their dynamic types.
func crExpectImplementation(inf cache.Informer, c crCache) {
	GinkgoHelper()
	impls := crInformerTypes(inf)
	Expect(impls).NotTo(BeEmpty(), "no informer found behind %T", inf)
	ours := reflect.TypeFor[*informer.SharedIndexInformer]()
	for _, impl := range impls {
		if c.ours {
			Expect(impl).To(Equal(ours), "an informer of the leaninformer cache")
		} else {
			Expect(impl.String()).To(Equal("*cache.sharedIndexInformer"), "an informer of controller-runtime's cache")
			Expect(impl.Elem().PkgPath()).To(Equal("k8s.io/client-go/tools/cache"))
		}
	}
	if sii, ok := inf.(toolscache.SharedIndexInformer); ok && c.ours {
		Expect(sii.GetIndexer()).To(BeAssignableToTypeOf(&lcache.Indexer{}))
	}
}

func crInformerTypes(inf cache.Informer) []reflect.Type {
	if _, ok := inf.(toolscache.SharedIndexInformer); ok {
		return []reflect.Type{reflect.TypeOf(inf)}
	}
	v := reflect.ValueOf(inf)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	perNamespace := v.Elem().FieldByName("namespaceToInformer")
	if perNamespace.Kind() != reflect.Map {
		return nil
	}
	var out []reflect.Type
	for it := perNamespace.MapRange(); it.Next(); {
		out = append(out, it.Value().Elem().Type())
	}
	return out
}

const crReconciledLabel = "reconciled"

// crLabeler is a real reconciler: it reads the object through the manager's
// cache-backed client, records it and labels it reconciled=true on the API
// server (unless readOnly).
type crLabeler struct {
	client   client.Client
	template client.Object // the watched type: typed, unstructured or metadata
	readOnly bool

	mu   sync.Mutex
	seen map[string]bool
}

func (r *crLabeler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := r.template.DeepCopyObject().(client.Object)
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	r.mu.Lock()
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[req.String()] = true
	r.mu.Unlock()
	if r.readOnly || obj.GetLabels()[crReconciledLabel] == "true" {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	objLabels := obj.GetLabels()
	if objLabels == nil {
		objLabels = map[string]string{}
	}
	objLabels[crReconciledLabel] = "true"
	obj.SetLabels(objLabels)
	return reconcile.Result{}, r.client.Patch(ctx, obj, patch)
}

// keys returns the namespace/name of every object reconciled so far.
func (r *crLabeler) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.seen))
	for k := range r.seen {
		keys = append(keys, k)
	}
	return keys
}

// crAddLabeler adds a labeler controller for obj's type, limited to ns
// unless ns is empty.
func crAddLabeler(mgr manager.Manager, ns string, obj client.Object) *crLabeler {
	GinkgoHelper()
	r := &crLabeler{client: mgr.GetClient(), template: obj}
	var preds []predicate.Predicate
	if ns != "" {
		preds = append(preds, crInNamespace(ns))
	}
	Expect(ctrl.NewControllerManagedBy(mgr).Named("labeler").
		For(obj, builder.WithPredicates(preds...)).
		Complete(r)).To(Succeed())
	return r
}

func crInNamespace(ns string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == ns })
}

// crExpectLabeled waits until the API server has the named Secrets of ns
// labeled by a crLabeler.
func crExpectLabeled(ctx context.Context, ns string, names ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		labeled := map[string]bool{}
		for _, s := range crServerSecrets(ctx, ns) {
			labeled[s.Name] = s.Labels[crReconciledLabel] == "true"
		}
		for _, name := range names {
			g.Expect(labeled).To(HaveKeyWithValue(name, true))
		}
	}).WithTimeout(crTimeout).Should(Succeed())
}

// crCreateSecrets creates Secrets with the given names and labels in ns,
// each with data name=<its name>.
func crCreateSecrets(ctx context.Context, ns string, objLabels map[string]string, names ...string) {
	GinkgoHelper()
	for _, name := range names {
		_, err := clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: objLabels},
			Data:       map[string][]byte{"name": []byte(name)},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
}

func crServerSecret(ctx context.Context, ns, name string) *corev1.Secret {
	GinkgoHelper()
	s, err := clientset.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return s
}

func crServerSecrets(ctx context.Context, ns string) []corev1.Secret {
	GinkgoHelper()
	list, err := clientset.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	return list.Items
}

func crUnstructuredSecret() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return u
}

func crMetadataSecret() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return m
}

func crNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return names
}

func crKeys(ns string, names ...string) []string {
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = ns + "/" + name
	}
	return keys
}

func crItemNames[T any, PT interface {
	*T
	client.Object
}](items []T) []string {
	names := make([]string, len(items))
	for i := range items {
		names[i] = PT(&items[i]).GetName()
	}
	return names
}

func crItemKeys[T any, PT interface {
	*T
	client.Object
}](items []T) []string {
	keys := make([]string, len(items))
	for i := range items {
		keys[i] = client.ObjectKeyFromObject(PT(&items[i])).String()
	}
	return keys
}

// crKeysIn returns the keys of state that are in namespace ns.
func crKeysIn(state map[string]string, ns string) []string {
	var keys []string
	for k := range state {
		if strings.HasPrefix(k, ns+"/") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
