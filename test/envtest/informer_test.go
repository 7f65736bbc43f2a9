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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/pkg/informer"
)

var _ = Describe("pkg/informer against a real API server", Ordered, func() {
	const objects = 5000
	var (
		ns     string
		proxy  *faultproxy.Proxy
		client *kubernetes.Clientset // through the proxy
	)

	BeforeAll(func(ctx context.Context) {
		ns = createNamespace(ctx, "informer")
		createConfigMaps(ctx, ns, objects, "cm")
		var err error
		proxy, err = faultproxy.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)
		client, err = kubernetes.NewForConfig(proxy.ClientConfig())
		Expect(err).NotTo(HaveOccurred())
	})

	for _, strategy := range []informer.Strategy{informer.ListWatch, informer.StreamingList} {
		It(fmt.Sprintf("syncs, follows live changes and survives a relist (%s)", strategy), func(ctx context.Context) {
			lw := toolscache.NewListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
			inf := informer.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{},
				toolscache.SharedIndexInformerOptions{Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}},
				informer.WithStrategy(strategy))
			early := newStateHandler()
			earlyReg, err := inf.AddEventHandler(early)
			Expect(err).NotTo(HaveOccurred())

			before := proxy.Stats().Requests
			runCtx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), GinkgoLogr))
			done := make(chan struct{})
			go func() { defer close(done); inf.RunWithContext(runCtx) }()
			DeferCleanup(func() {
				cancel()
				Eventually(done).Should(BeClosed())
				Expect(inf.IsStopped()).To(BeTrue())
			})

			By("syncing the initial list")
			Eventually(inf.HasSynced).WithTimeout(2 * time.Minute).Should(BeTrue())
			Eventually(earlyReg.HasSynced).Should(BeTrue())
			Expect(inf.GetStore().ListKeys()).To(HaveLen(objects))
			Expect(early.adds(true)).To(Equal(objects), "every object once, with isInInitialList")
			after := proxy.Stats().Requests
			if strategy == informer.ListWatch {
				// Paginated, within client-go's default burst of 10 requests.
				Expect(after.ListsWithLimit - before.ListsWithLimit).To(And(BeNumerically(">", 1), BeNumerically("<=", 8)))
				Expect(after.StreamingWatches - before.StreamingWatches).To(BeZero())
			} else {
				Expect(after.StreamingWatches - before.StreamingWatches).To(Equal(int64(1)))
				Expect(after.Lists - before.Lists).To(BeZero())
			}

			By("adding a handler after sync")
			late := newStateHandler()
			lateReg, err := inf.AddEventHandler(late)
			Expect(err).NotTo(HaveOccurred())
			Eventually(lateReg.HasSynced).Should(BeTrue())
			Expect(late.adds(true)).To(Equal(objects))

			By("following live creates, updates and deletes")
			suffix := strings.ToLower(strategy.String())
			name := "live-" + suffix
			cm, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			cm.Data = map[string]string{"updated": "yes"}
			cm, err = clientset.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
			for _, h := range []*stateHandler{early, late} {
				Eventually(func() string { return h.rv(ns + "/" + name) }).Should(Equal(cm.ResourceVersion))
			}
			Expect(clientset.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
			for _, h := range []*stateHandler{early, late} {
				Eventually(func() string { return h.rv(ns + "/" + name) }).Should(BeEmpty())
			}

			By("relisting after the watch is cut and answered 410 Gone")
			statsBefore := proxy.Stats()
			gone, err := proxy.Inject(faultproxy.Rule{
				Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: "configmaps",
					Predicate: func(r *http.Request) bool { return !faultproxy.IsStreamingList(r) }},
				Fault: faultproxy.Fault{Kind: faultproxy.Gone},
				Times: 1,
			})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(gone.Remove)
			// Changes while the informer is cut off reach it through the relist.
			Expect(proxy.CutWatches(faultproxy.Match{Resource: "configmaps"})).To(BeNumerically(">=", 1))
			for i := range 10 {
				victim := fmt.Sprintf("cm-%05d", 10*int(strategy)+i) // distinct per strategy
				Expect(clientset.CoreV1().ConfigMaps(ns).Delete(ctx, victim, metav1.DeleteOptions{})).To(Succeed())
			}
			createConfigMaps(ctx, ns, 10, "relist-"+suffix)
			Eventually(gone.Done).WithTimeout(time.Minute).Should(BeTrue(), "the informer's next watch got the 410")
			Eventually(func() int64 {
				s := proxy.Stats().Requests
				return s.Lists + s.StreamingWatches - statsBefore.Requests.Lists - statsBefore.Requests.StreamingWatches
			}).WithTimeout(time.Minute).Should(BeNumerically(">=", 1), "the 410 caused a relist")

			By("converging to a fresh LIST, in the store and in every handler")
			Eventually(func(g Gomega) {
				want := freshList(ctx, g, ns)
				g.Expect(storeState(inf.GetStore())).To(Equal(want))
				g.Expect(early.state()).To(Equal(want))
				g.Expect(late.state()).To(Equal(want))
			}).WithTimeout(time.Minute).Should(Succeed())
			Expect(inf.GetStore()).To(BeIdenticalTo(inf.GetIndexer()))
		})
	}
})

// createConfigMaps creates n ConfigMaps prefix-00000... concurrently.
func createConfigMaps(ctx context.Context, ns string, n int, prefix string) {
	GinkgoHelper()
	const workers = 50
	var wg sync.WaitGroup
	for worker := range min(workers, n) {
		wg.Go(func() {
			defer GinkgoRecover()
			for i := worker; i < n; i += workers {
				_, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", prefix, i)},
					Data:       map[string]string{"index": fmt.Sprint(i)},
				}, metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
			}
		})
	}
	wg.Wait()
}

// freshList returns key -> resourceVersion of a LIST straight from the API server.
func freshList(ctx context.Context, g Gomega, ns string) map[string]string {
	list, err := clientset.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	out := make(map[string]string, len(list.Items))
	for i := range list.Items {
		out[ns+"/"+list.Items[i].Name] = list.Items[i].ResourceVersion
	}
	return out
}

func storeState(s toolscache.Store) map[string]string {
	out := map[string]string{}
	for _, obj := range s.List() {
		m, err := meta.Accessor(obj)
		Expect(err).NotTo(HaveOccurred())
		out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
	}
	return out
}

// stateHandler rebuilds the store from its notifications, as a controller
// keeping its own state does, and counts its initial-list adds.
type stateHandler struct {
	mu          sync.Mutex
	objects     map[string]string // key -> resourceVersion
	initialAdds int
	laterAdds   int
}

func newStateHandler() *stateHandler { return &stateHandler{objects: map[string]string{}} }

func (h *stateHandler) set(obj any) {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	h.objects[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
}

func (h *stateHandler) OnAdd(obj any, isInInitialList bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if isInInitialList {
		h.initialAdds++
	} else {
		h.laterAdds++
	}
	h.set(obj)
}

func (h *stateHandler) OnUpdate(_, obj any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.set(obj)
}

func (h *stateHandler) OnDelete(obj any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		panic(err)
	}
	delete(h.objects, key)
}

func (h *stateHandler) adds(initial bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if initial {
		return h.initialAdds
	}
	return h.laterAdds
}

func (h *stateHandler) rv(key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.objects[key]
}

func (h *stateHandler) state() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]string, len(h.objects))
	for k, v := range h.objects {
		out[k] = v
	}
	return out
}
