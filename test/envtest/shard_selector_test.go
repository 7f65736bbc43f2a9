package envtest

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"

	"github.com/leaninformer/leaninformer/pkg/shard"
)

// What pkg/shard relies on from the API server's shard selector, checked
// on a real v1.37 API server with the ShardedListAndWatch gate and on the
// suite's API server without it.
var _ = Describe("the API server's shard selector (KEP-5866)", Ordered, Label("shard"), func() {
	const objects = 200
	var (
		client *kubernetes.Clientset
		ns     string
		uids   map[string]string // name -> uid
	)
	lower, upper := shard.NewRange(0, 1<<63), shard.NewRange(1<<63, 0)

	BeforeAll(func(ctx context.Context) {
		_, client = shardedControlPlane()
		created, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "selector-"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		ns = created.Name
		uids = make(map[string]string, objects)
		for i := range objects {
			cm, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			uids[cm.Name] = string(cm.UID)
		}
	})

	It("filters lists with the gate on and echoes the selector in ShardInfo", func(ctx context.Context) {
		seen := map[string]bool{}
		for _, r := range []shard.Range{lower, upper} {
			selector := r.Selector(shard.KeyUID)
			list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ShardSelector: selector})
			Expect(err).NotTo(HaveOccurred())
			Expect(list.ShardInfo).NotTo(BeNil())
			Expect(list.ShardInfo.Selector).To(Equal(selector))
			Expect(len(list.Items)).To(BeNumerically("<", objects))
			for _, cm := range list.Items {
				Expect(r.Contains(shard.Hash(string(cm.UID)))).To(BeTrue(), "%s in %s", cm.Name, r)
				Expect(seen).NotTo(HaveKey(cm.Name))
				seen[cm.Name] = true
			}
		}
		Expect(seen).To(HaveLen(objects))

		By("paginating: every page is filtered and echoes the selector")
		var items int
		opts := metav1.ListOptions{ShardSelector: lower.Selector(shard.KeyUID), Limit: 17}
		for {
			page, err := client.CoreV1().ConfigMaps(ns).List(ctx, opts)
			Expect(err).NotTo(HaveOccurred())
			Expect(page.ShardInfo).NotTo(BeNil())
			items += len(page.Items)
			if opts.Continue = page.Continue; opts.Continue == "" {
				break
			}
		}
		Expect(items).To(Equal(countIn(uids, lower)))
	})

	It("filters metadata-only lists, which do not echo ShardInfo", func(ctx context.Context) {
		cfg, _ := shardedControlPlane()
		mc, err := metadata.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		list, err := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).
			List(ctx, metav1.ListOptions{ShardSelector: lower.Selector(shard.KeyUID)})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(HaveLen(countIn(uids, lower)))
		Expect(list.ShardInfo).To(BeNil())
	})

	It("filters watches, the initial events of a streaming list included", func(ctx context.Context) {
		w, err := client.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
			ShardSelector:        upper.Selector(shard.KeyUID),
			SendInitialEvents:    ptr.To(true),
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			AllowWatchBookmarks:  true,
		})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		initial := 0
		for ev := range w.ResultChan() {
			if ev.Type == watch.Bookmark {
				Expect(ev.Object.(*corev1.ConfigMap).Annotations).To(HaveKeyWithValue(metav1.InitialEventsAnnotationKey, "true"))
				break
			}
			Expect(ev.Type).To(Equal(watch.Added))
			Expect(upper.Contains(shard.Hash(string(ev.Object.(*corev1.ConfigMap).UID)))).To(BeTrue())
			initial++
		}
		Expect(initial).To(Equal(countIn(uids, upper)))

		By("live events: only those of objects in the range arrive")
		// The watch allows bookmarks (a streaming list needs them), and the
		// API server sends one whenever it likes: skip them.
		next := func() watch.Event {
			ev := <-w.ResultChan()
			for ev.Type == watch.Bookmark {
				ev = <-w.ResultChan()
			}
			return ev
		}
		var in, out string
		for i := objects; in == ""; i++ {
			cm, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			uids[cm.Name] = string(cm.UID)
			switch {
			case !upper.Contains(shard.Hash(string(cm.UID))):
				out = cm.Name
			case out == "":
				// In the range, but nothing outside it was created before:
				// its event shows nothing yet. Take it and go on.
				ev := next()
				Expect(ev.Object.(*corev1.ConfigMap).Name).To(Equal(cm.Name))
			default:
				in = cm.Name // the next event must be this one, not the earlier one outside the range
			}
		}
		ev := next()
		Expect(ev.Type).To(Equal(watch.Added))
		Expect(ev.Object.(*corev1.ConfigMap).Name).To(Equal(in), "created outside the range first: %s", out)
	})

	It("rejects bounds that are not 16 hex digits", func(ctx context.Context) {
		_, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{
			ShardSelector: "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
		})
		Expect(err).To(MatchError(ContainSubstring("16-digit")))
	})

	It("takes selectors of many terms", func(ctx context.Context) {
		// Every other one of 1,024 buckets: 512 terms, about 40,000
		// characters, past any selector a member writes with the default 256
		// buckets (at most 128 terms).
		var r shard.Range
		for i := 0; i < 1024; i += 2 {
			r = r.Union(shard.NewRange(uint64(i)<<54, uint64(i+1)<<54))
		}
		Expect(r.Terms()).To(Equal(512))
		list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ShardSelector: r.Selector(shard.KeyUID)})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(HaveLen(countIn(uids, r)))
	})

	It("is ignored by an API server without the gate", func(ctx context.Context) {
		ns := createNamespace(ctx, "selector-off")
		for i := range 20 {
			_, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		list, err := clientset.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ShardSelector: lower.Selector(shard.KeyUID)})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.ShardInfo).To(BeNil())
		Expect(list.Items).To(HaveLen(20))
	})
})

// countIn is how many of uids hash into r.
func countIn(uids map[string]string, r shard.Range) int {
	n := 0
	for _, uid := range uids {
		if r.Contains(shard.Hash(uid)) {
			n++
		}
	}
	return n
}
