package envtest

import (
	"context"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Cache options of controller-runtime that reach the informers through
// their constructor (the resync period), run as the features of
// controller_runtime_test.go are: once per cache.
var _ = Describe("controller-runtime cache options reaching the informers", func() {
	BeforeEach(func() { ctrl.SetLogger(GinkgoLogr) })

	DescribeTable("behave the same with controller-runtime's cache and leaninformer's",
		func(ctx SpecContext, spec func(context.Context, crCache), c crCache) { spec(ctx, c) },
		crEntries("SyncPeriod and ByObject SyncPeriod: controllers see every object again each period", crSyncPeriod),
		crEntries("DefaultNamespaces: AllNamespaces and a namespace of its own Config", crNamespaceConfigs),
	)
})

// crSyncPeriod: the cache's SyncPeriod (1s, as the informers' resync
// period) hands every Secret to the controllers again each period, while
// ServiceAccounts, whose ByObject entry sets an hour, are reconciled once.
func crSyncPeriod(ctx context.Context, c crCache) {
	ns := createNamespace(ctx, "cr-syncperiod")
	secrets := crNames("s", 3)
	crCreateSecrets(ctx, ns, nil, secrets...)
	accounts := crNames("sa", 2)
	for _, name := range accounts {
		_, err := clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}

	mgr := crNewManager(cfg, c, ctrl.Options{Cache: cache.Options{
		SyncPeriod: ptr.To(time.Second),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ServiceAccount{}: {SyncPeriod: ptr.To(time.Hour)},
		},
	}})
	secretCounts := crAddCounter(mgr, "secrets", ns, &corev1.Secret{})
	accountCounts := crAddCounter(mgr, "accounts", ns, &corev1.ServiceAccount{})
	crStartSynced(ctx, mgr)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.Secret{}), c)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.ServiceAccount{}), c)

	By("reconciling every Secret again each second")
	Eventually(func(g Gomega) {
		counts := secretCounts.counts()
		g.Expect(counts).To(HaveLen(len(secrets)))
		for key, n := range counts {
			g.Expect(n).To(BeNumerically(">=", 3), key)
		}
	}).WithTimeout(crTimeout).Should(Succeed())

	By("reconciling each ServiceAccount once, its ByObject SyncPeriod being an hour")
	want := map[string]int{}
	for _, key := range crKeys(ns, accounts...) {
		want[key] = 1
	}
	Eventually(accountCounts.counts).WithTimeout(crTimeout).Should(Equal(want))
	Consistently(accountCounts.counts).WithTimeout(2 * time.Second).Should(Equal(want))
}

// crNamespaceConfigs: a DefaultNamespaces of cache.AllNamespaces, with a
// label selector, and of one namespace with a selector of its own. The
// AllNamespaces informer watches every other namespace (controller-runtime
// excludes the named one with a field selector), so each namespace's
// objects are those its own Config selects.
func crNamespaceConfigs(ctx context.Context, c crCache) {
	nsA, nsB, nsC := createNamespace(ctx, "cr-nsconfig-a"), createNamespace(ctx, "cr-nsconfig-b"), createNamespace(ctx, "cr-nsconfig-c")
	run := map[string]string{"cr-nsconfig-run": nsA} // only this spec's Secrets carry it
	crCreateSecrets(ctx, nsA, run, "a-run")
	crCreateSecrets(ctx, nsA, nil, "a-bare")
	crCreateSecrets(ctx, nsB, map[string]string{"app": "x"}, "b-x")
	crCreateSecrets(ctx, nsB, run, "b-run")
	crCreateSecrets(ctx, nsC, run, "c-run")

	mgr := crNewManager(cfg, c, ctrl.Options{Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{
		cache.AllNamespaces: {LabelSelector: labels.SelectorFromSet(run)},
		nsB:                 {LabelSelector: labels.SelectorFromSet(map[string]string{"app": "x"})},
	}}})
	r := crAddLabeler(mgr, "", &corev1.Secret{})
	r.readOnly = true
	crStartSynced(ctx, mgr)
	crExpectImplementation(crInformer(ctx, mgr.GetCache(), &corev1.Secret{}), c)

	want := []string{nsA + "/a-run", nsB + "/b-x", nsC + "/c-run"}
	Eventually(func(g Gomega) []string {
		var list corev1.SecretList
		g.Expect(mgr.GetCache().List(ctx, &list)).To(Succeed())
		var keys []string
		for _, key := range crItemKeys(list.Items) {
			if strings.HasPrefix(key, nsA+"/") || strings.HasPrefix(key, nsB+"/") || strings.HasPrefix(key, nsC+"/") {
				keys = append(keys, key)
			}
		}
		return keys
	}).WithTimeout(crTimeout).Should(ConsistOf(want))
	Eventually(func() []string {
		var keys []string
		for _, key := range r.keys() {
			if strings.HasPrefix(key, nsA+"/") || strings.HasPrefix(key, nsB+"/") || strings.HasPrefix(key, nsC+"/") {
				keys = append(keys, key)
			}
		}
		return keys
	}).WithTimeout(crTimeout).Should(ConsistOf(want))
	var list corev1.SecretList
	Expect(mgr.GetCache().List(ctx, &list, client.InNamespace(nsB))).To(Succeed())
	Expect(crItemNames(list.Items)).To(ConsistOf("b-x"))
	err := mgr.GetCache().Get(ctx, types.NamespacedName{Namespace: nsB, Name: "b-run"}, &corev1.Secret{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
}

// crCounter counts the reconciles of each object.
type crCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *crCounter) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[req.String()]++
	return reconcile.Result{}, nil
}

func (r *crCounter) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.n))
	for k, v := range r.n {
		out[k] = v
	}
	return out
}

// crAddCounter adds a controller named name counting the reconciles of
// obj's type in ns.
func crAddCounter(mgr manager.Manager, name, ns string, obj client.Object) *crCounter {
	GinkgoHelper()
	r := &crCounter{n: map[string]int{}}
	Expect(ctrl.NewControllerManagedBy(mgr).Named(name).
		For(obj, builder.WithPredicates(crInNamespace(ns))).
		Complete(r)).To(Succeed())
	return r
}
