package envtest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/leaninformer/leaninformer/pkg/informer"
)

// The encoded store answers a List with a label selector without decoding
// the objects that do not match (informer.NewCacheWith). These specs run
// controller-runtime's default cache and leaninformer's encoded ones on the
// same API server and compare what List returns for a table of selectors,
// typed, unstructured and metadata-only.
var _ = Describe("label-selector Lists of the encoded store", func() {
	It("return what controller-runtime's cache returns", func(ctx SpecContext) {
		ns1, ns2 := createNamespace(ctx, "cr-labels"), createNamespace(ctx, "cr-labels")
		run := map[string]string{"h11-run": ns1} // only this spec's Secrets carry it
		with := func(kv ...string) map[string]string {
			m := map[string]string{"h11-run": ns1}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		}
		for i, ns := range []string{ns1, ns2} {
			crCreateSecrets(ctx, ns, with("app", "web", "tier", "front"), crNames(fmt.Sprintf("web%d", i), 4)...)
			crCreateSecrets(ctx, ns, with("app", "db"), crNames(fmt.Sprintf("db%d", i), 3)...)
			crCreateSecrets(ctx, ns, with("tier", ""), crNames(fmt.Sprintf("empty%d", i), 2)...)
			crCreateSecrets(ctx, ns, nil, crNames(fmt.Sprintf("bare%d", i), 2)...)
		}

		caches := map[string]cache.Cache{}
		for name, tc := range map[string]struct {
			newCache cache.NewCacheFunc
			opts     cache.Options
		}{
			"controller-runtime":                     {cache.New, cache.Options{}},
			"encoded":                                {informer.NewCacheWith(informer.WithEncodedStore(), informer.WithMetrics(nil)), cache.Options{}},
			"encoded, controller-runtime's DeepCopy": {informer.NewCacheWith(informer.WithEncodedStore(), informer.WithMetrics(nil)), cache.Options{DefaultUnsafeDisableDeepCopy: ptr.To(false)}},
		} {
			c, err := tc.newCache(cfg, tc.opts)
			Expect(err).NotTo(HaveOccurred())
			crStart(ctx, c)
			for _, obj := range []client.Object{&corev1.Secret{}, crUnstructuredSecret(), crMetadataSecret()} {
				inf := crInformer(ctx, c, obj)
				if name != "controller-runtime" {
					crExpectImplementation(inf, crCache{ours: true, encoded: true})
				}
			}
			caches[name] = c
		}

		selector := func(s string) labels.Selector {
			sel, err := labels.Parse(s)
			Expect(err).NotTo(HaveOccurred())
			return sel
		}
		// n is how many Secrets the query matches, -1 if that depends on
		// what other specs left in the cluster.
		queries := []crQuery{
			{"equality", 8, []client.ListOption{client.MatchingLabels(with("app", "web"))}},
			{"equality, ==", 6, []client.ListOption{client.MatchingLabelsSelector{Selector: selector("app==db,h11-run=" + ns1)}}},
			{"inequality", 10, []client.ListOption{client.MatchingLabelsSelector{Selector: selector("app!=web,h11-run=" + ns1)}}},
			{"set-based in", 14, []client.ListOption{client.MatchingLabelsSelector{Selector: selector("app in (web,db),h11-run=" + ns1)}}},
			{"set-based notin", 10, []client.ListOption{client.MatchingLabelsSelector{Selector: selector("tier notin (front),h11-run=" + ns1)}}},
			{"exists", 12, []client.ListOption{client.HasLabels{"tier", "h11-run"}}},
			{"not exists", 6, []client.ListOption{client.MatchingLabelsSelector{Selector: selector("!tier,h11-run=" + ns1)}}},
			{"empty value", 4, []client.ListOption{client.MatchingLabels(with("tier", ""))}},
			{"no match", 0, []client.ListOption{client.MatchingLabels(with("app", "none"))}},
			{"no match, cluster-wide not-exists", 0, []client.ListOption{client.MatchingLabelsSelector{Selector: selector("!h11-run,h11-run=" + ns1)}}},
			{"everything, cluster-wide", -1, []client.ListOption{client.MatchingLabelsSelector{Selector: labels.Everything()}}},
			{"not exists, cluster-wide", -1, []client.ListOption{client.MatchingLabelsSelector{Selector: selector("!h11-run")}}},
			{"namespace", 4, []client.ListOption{client.InNamespace(ns2), client.MatchingLabels(with("app", "web"))}},
			{"namespace, everything", 11, []client.ListOption{client.InNamespace(ns1), client.MatchingLabelsSelector{Selector: labels.Everything()}}},
			{"absent namespace", 0, []client.ListOption{client.InNamespace("absent"), client.MatchingLabels(run)}},
			{"no selector", 11, []client.ListOption{client.InNamespace(ns1)}},
		}
		limited := []crLimitedQuery{
			{"Limit below the matches", []client.ListOption{client.MatchingLabels(with("app", "web"))}, 3},
			{"Limit above the matches", []client.ListOption{client.MatchingLabels(with("app", "web"))}, 100},
			{"Limit in a namespace", []client.ListOption{client.InNamespace(ns1), client.MatchingLabels(run)}, 1},
			{"Limit, no match", []client.ListOption{client.MatchingLabels(with("app", "none"))}, 2},
		}

		for _, kind := range crListKinds() {
			crExpectSameLists(ctx, caches, kind, queries, limited)

			By(kind.name + ": a continue token and a field selector are controller-runtime's errors")
			for _, opts := range [][]client.ListOption{
				{client.MatchingLabels(run), client.Continue("x")},
				{client.MatchingLabels(run), client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("metadata.name", "x")}},
			} {
				wantErr := caches["controller-runtime"].List(ctx, kind.newList(), opts...)
				Expect(wantErr).To(HaveOccurred())
				for name, c := range caches {
					Expect(c.List(ctx, kind.newList(), opts...)).To(MatchError(wantErr.Error()), "the %s cache", name)
				}
			}
		}
	})
})

// crListKind is a list type the specs list.
type crListKind struct {
	name    string
	newList func() client.ObjectList
}

// crQuery is a List's options and how many objects controller-runtime's
// cache must answer (-1: not checked).
type crQuery struct {
	name string
	n    int
	opts []client.ListOption
}

// crLimitedQuery is a List's options, listed again with a Limit.
type crLimitedQuery struct {
	name  string
	opts  []client.ListOption
	limit int64
}

// crExpectSameLists checks that every one of caches answers kind's queries
// as controller-runtime's cache does; with a Limit, as many objects as
// controller-runtime's, all among the unlimited answer, and the same
// continue token.
func crExpectSameLists(ctx context.Context, caches map[string]cache.Cache, kind crListKind, queries []crQuery, limited []crLimitedQuery) {
	GinkgoHelper()
	for _, q := range queries {
		By(fmt.Sprintf("%s, %s", kind.name, q.name))
		Eventually(func(g Gomega) {
			want := crListWith(ctx, g, caches["controller-runtime"], kind.newList, q.opts)
			if q.n >= 0 {
				g.Expect(want.items).To(HaveLen(q.n))
			}
			for name, c := range caches {
				got := crListWith(ctx, g, c, kind.newList, q.opts)
				g.Expect(got).To(Equal(want), "%s, %s: the %s cache", kind.name, q.name, name)
			}
		}).WithTimeout(crTimeout).Should(Succeed())
	}
	for _, q := range limited {
		By(fmt.Sprintf("%s, %s", kind.name, q.name))
		Eventually(func(g Gomega) {
			all := crListWith(ctx, g, caches["controller-runtime"], kind.newList, q.opts)
			opts := append(slices.Clone(q.opts), client.Limit(q.limit))
			want := crListWith(ctx, g, caches["controller-runtime"], kind.newList, opts)
			g.Expect(want.items).To(HaveLen(min(int(q.limit), len(all.items))))
			for name, c := range caches {
				got := crListWith(ctx, g, c, kind.newList, opts)
				g.Expect(got.items).To(HaveLen(len(want.items)), "%s, %s: the %s cache", kind.name, q.name, name)
				g.Expect(all.items).To(ContainElements(got.items), "%s, %s: the %s cache", kind.name, q.name, name)
				g.Expect(got.continueToken).To(Equal(want.continueToken))
			}
		}).WithTimeout(crTimeout).Should(Succeed())
	}
}

func crListKinds() []crListKind {
	return []crListKind{
		{"typed", func() client.ObjectList { return &corev1.SecretList{} }},
		{"unstructured", func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
			return l
		}},
		{"metadata-only", func() client.ObjectList {
			l := &metav1.PartialObjectMetadataList{}
			l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
			return l
		}},
	}
}

// crListResult is a List's result, its items sorted by namespace and name.
type crListResult struct {
	typeMeta        string
	continueToken   string
	resourceVersion string
	items           []any
}

func crListWith(ctx context.Context, g Gomega, c cache.Cache, newList func() client.ObjectList, opts []client.ListOption) crListResult {
	list := newList()
	g.Expect(c.List(ctx, list, opts...)).To(Succeed())
	var r crListResult
	r.continueToken = list.GetContinue()
	r.typeMeta = fmt.Sprintf("%v", list.GetObjectKind().GroupVersionKind())
	items := reflect.ValueOf(list).Elem().FieldByName("Items")
	for i := range items.Len() {
		r.items = append(r.items, items.Index(i).Interface())
	}
	key := func(o any) string {
		// The items are values; their metadata methods are on pointers.
		p := reflect.New(reflect.TypeOf(o))
		p.Elem().Set(reflect.ValueOf(o))
		obj := p.Interface().(client.Object)
		return obj.GetNamespace() + "/" + obj.GetName()
	}
	slices.SortFunc(r.items, func(a, b any) int { return strings.Compare(key(a), key(b)) })
	r.resourceVersion = list.GetResourceVersion()
	return r
}
