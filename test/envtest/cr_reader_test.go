package envtest

import (
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/leaninformer/leaninformer/pkg/informer"
)

// The reader options of controller-runtime's cache (field indices with one
// and two requirements, Limit, cluster-scoped kinds, GetInformerForKind)
// on controller-runtime's cache and leaninformer's, plain and encoded,
// started side by side on the same API server: each List must return what
// controller-runtime's returns.
var _ = Describe("controller-runtime's reader options", func() {
	It("give the same answers from leaninformer's caches as from controller-runtime's", func(ctx SpecContext) {
		ns1, ns2 := createNamespace(ctx, "cr-reader"), createNamespace(ctx, "cr-reader")
		run := map[string]string{"cr-reader-run": ns1} // only this spec's objects carry it
		with := func(kv ...string) map[string]string {
			m := map[string]string{"cr-reader-run": ns1}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		}
		for i, ns := range []string{ns1, ns2} {
			crCreateSecrets(ctx, ns, with("color", "red"), crNames(fmt.Sprintf("red%d", i), 4)...)
			crCreateSecrets(ctx, ns, with("color", "blue", "size", "big"), crNames(fmt.Sprintf("bigblue%d", i), 3)...)
			crCreateSecrets(ctx, ns, with("color", "blue", "size", "small"), crNames(fmt.Sprintf("smallblue%d", i), 2)...)
			crCreateSecrets(ctx, ns, with(), crNames(fmt.Sprintf("bare%d", i), 2)...)
		}
		var clusterScoped []string
		for i := range 3 {
			tier := "gold"
			if i == 2 {
				tier = "silver"
			}
			nsObj, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
				GenerateName: "cr-reader-cluster-", Labels: with("tier", tier),
			}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx context.Context) {
				_ = clientset.CoreV1().Namespaces().Delete(ctx, nsObj.Name, metav1.DeleteOptions{})
			})
			clusterScoped = append(clusterScoped, nsObj.Name)
		}

		labelIndex := func(label string) client.IndexerFunc {
			return func(o client.Object) []string {
				if v, ok := o.GetLabels()[label]; ok {
					return []string{v}
				}
				return nil
			}
		}
		caches := map[string]cache.Cache{}
		for name, newCache := range map[string]cache.NewCacheFunc{
			"controller-runtime": cache.New,
			"leaninformer":       informer.NewCacheWith(informer.WithMetrics(nil)),
			"encoded":            informer.NewCacheWith(informer.WithEncodedStore(), informer.WithMetrics(nil)),
		} {
			c, err := newCache(cfg, cache.Options{})
			Expect(err).NotTo(HaveOccurred())

			By(name + ": GetInformerForKind with BlockUntilSynced(false) before the cache starts")
			inf, err := c.GetInformerForKind(ctx, corev1.SchemeGroupVersion.WithKind("Secret"), cache.BlockUntilSynced(false))
			Expect(err).NotTo(HaveOccurred())
			Expect(inf.HasSynced()).To(BeFalse())
			Expect(inf.IsStopped()).To(BeFalse())
			for _, obj := range []client.Object{&corev1.Secret{}, crUnstructuredSecret(), crMetadataSecret()} {
				for _, field := range []string{"color", "size"} {
					Expect(c.IndexField(ctx, obj, field, labelIndex(field))).To(Succeed())
				}
			}

			// Cleanups run last first: this one once crStart's has
			// stopped the cache.
			DeferCleanup(func() {
				Expect(inf.IsStopped()).To(BeTrue(), "%s: the informer stopped with the cache", name)
			})
			crStart(ctx, c)
			Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
			Expect(inf.HasSynced()).To(BeTrue(), "%s: the informer of GetInformerForKind syncs once the cache started", name)
			same, err := c.GetInformer(ctx, &corev1.Secret{})
			Expect(err).NotTo(HaveOccurred())
			Expect(same).To(BeIdenticalTo(inf), "%s: GetInformer and GetInformerForKind share the informer", name)
			for _, obj := range []client.Object{&corev1.Secret{}, crUnstructuredSecret(), crMetadataSecret()} {
				i := crInformer(ctx, c, obj)
				crExpectImplementation(i, crCache{ours: name != "controller-runtime", encoded: name == "encoded"})
			}
			caches[name] = c
		}

		field := func(kv ...string) client.ListOption {
			f := client.MatchingFields{}
			for i := 0; i+1 < len(kv); i += 2 {
				f[kv[i]] = kv[i+1]
			}
			return f
		}
		// n is how many Secrets the query matches, -1 if that depends on
		// what other specs left in the cluster.
		queries := []crQuery{
			{"one field, cluster-wide", -1, []client.ListOption{field("color", "red")}},
			{"one field and a label, cluster-wide", 8, []client.ListOption{field("color", "red"), client.MatchingLabels(run)}},
			{"one field, in a namespace", 4, []client.ListOption{client.InNamespace(ns2), field("color", "red")}},
			{"two fields, in a namespace", 3, []client.ListOption{client.InNamespace(ns1), field("color", "blue", "size", "big")}},
			{"two fields and a label, cluster-wide", 4, []client.ListOption{field("color", "blue", "size", "small"), client.MatchingLabels(run)}},
			{"two fields, no match", 0, []client.ListOption{client.InNamespace(ns1), field("color", "red", "size", "big")}},
			{"one field, no value", 0, []client.ListOption{client.InNamespace(ns1), field("color", "green")}},
		}
		limited := []crLimitedQuery{
			{"Limit of a field", []client.ListOption{client.InNamespace(ns1), field("color", "blue")}, 3},
			{"Limit of two fields and a label", []client.ListOption{field("color", "blue", "size", "big"), client.MatchingLabels(run)}, 4},
		}
		for _, kind := range crListKinds() {
			crExpectSameLists(ctx, caches, kind, queries, limited)
			By(kind.name + ": a field without an index and a non-exact field selector are controller-runtime's errors")
			for _, opts := range [][]client.ListOption{
				{client.InNamespace(ns1), field("shape", "round")},
				// In this order (MatchingFields' is a map's), so that the
				// errors are the same each time: the indexer's for the
				// first field, controller-runtime's for the second.
				{client.InNamespace(ns1), client.MatchingFieldsSelector{Selector: fields.AndSelectors(
					fields.OneTermEqualSelector("color", "red"), fields.OneTermEqualSelector("shape", "round"))}},
				{client.InNamespace(ns1), client.MatchingFieldsSelector{Selector: fields.AndSelectors(
					fields.OneTermEqualSelector("shape", "round"), fields.OneTermEqualSelector("color", "red"))}},
				{client.InNamespace(ns1), client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("color", "red")}},
			} {
				wantErr := caches["controller-runtime"].List(ctx, kind.newList(), opts...)
				Expect(wantErr).To(HaveOccurred())
				for name, c := range caches {
					Expect(c.List(ctx, kind.newList(), opts...)).To(MatchError(wantErr.Error()), "the %s cache", name)
				}
			}
		}

		By("reads without DeepCopy: the stored object's kind, which the encoded store sets (docs/compatibility.md)")
		for name, c := range caches {
			wantKind := ""
			if name == "encoded" {
				wantKind = "Secret"
			}
			var s corev1.Secret
			Expect(c.Get(ctx, types.NamespacedName{Namespace: ns1, Name: "red0-00"}, &s, client.UnsafeDisableDeepCopy)).To(Succeed())
			Expect(s.Kind).To(Equal(wantKind), "Get, the %s cache", name)
			var list corev1.SecretList
			Expect(c.List(ctx, &list, client.InNamespace(ns1), field("color", "red"), client.UnsafeDisableDeepCopy)).To(Succeed())
			Expect(list.Items).To(HaveLen(4))
			for _, item := range list.Items {
				Expect(item.Kind).To(Equal(wantKind), "List, the %s cache", name)
			}
		}

		By("a cluster-scoped kind: Get, label Lists and Limit")
		namespaceLists := []crListKind{
			{"typed", func() client.ObjectList { return &corev1.NamespaceList{} }},
			{"unstructured", func() client.ObjectList {
				l := &unstructured.UnstructuredList{}
				l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
				return l
			}},
			{"metadata-only", func() client.ObjectList {
				l := &metav1.PartialObjectMetadataList{}
				l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
				return l
			}},
		}
		for _, kind := range namespaceLists {
			for _, q := range []struct {
				name  string
				n     int
				opts  []client.ListOption
				limit int64
			}{
				{"a label", 3, []client.ListOption{client.MatchingLabels(run)}, 0},
				{"two labels", 2, []client.ListOption{client.MatchingLabels(with("tier", "gold"))}, 0},
				{"a set-based selector", 1, []client.ListOption{client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(run).Add(crRequirement("tier", selection.NotIn, "gold"))}}, 0},
				{"a label, Limit", 2, []client.ListOption{client.MatchingLabels(run)}, 2},
			} {
				By(fmt.Sprintf("Namespaces, %s, %s", kind.name, q.name))
				Eventually(func(g Gomega) {
					opts := q.opts
					if q.limit > 0 {
						opts = append(slices.Clone(opts), client.Limit(q.limit))
					}
					all := crListWith(ctx, g, caches["controller-runtime"], kind.newList, q.opts)
					g.Expect(all.items).To(HaveLen(min(3, q.n+int(q.limit))))
					want := crListWith(ctx, g, caches["controller-runtime"], kind.newList, opts)
					g.Expect(want.items).To(HaveLen(q.n))
					for name, c := range caches {
						got := crListWith(ctx, g, c, kind.newList, opts)
						if q.limit > 0 {
							g.Expect(got.items).To(HaveLen(q.n), "Namespaces, %s, %s: the %s cache", kind.name, q.name, name)
							g.Expect(all.items).To(ContainElements(got.items), "Namespaces, %s, %s: the %s cache", kind.name, q.name, name)
							continue
						}
						g.Expect(got).To(Equal(want), "Namespaces, %s, %s: the %s cache", kind.name, q.name, name)
					}
				}).WithTimeout(crTimeout).Should(Succeed())
			}
		}
		for name, c := range caches {
			var got corev1.Namespace
			Expect(c.Get(ctx, types.NamespacedName{Name: clusterScoped[0]}, &got)).To(Succeed(), "the %s cache", name)
			Expect(got.Labels).To(HaveKeyWithValue("tier", "gold"), "the %s cache", name)
			Expect(got.Kind).To(Equal("Namespace"))
		}
	})
})

func crRequirement(key string, op selection.Operator, values ...string) labels.Requirement {
	GinkgoHelper()
	r, err := labels.NewRequirement(key, op, values)
	Expect(err).NotTo(HaveOccurred())
	return *r
}
