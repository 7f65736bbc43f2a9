package informer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/leaninformer/leaninformer/pkg/codec"
	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// NewCacheWith hands leaninformer's options to every informer of a
// controller-runtime cache; the cache options stay controller-runtime's.
// Invalid options fail the manager's construction, rather than leave it
// running informers that never sync. Building a manager sends no request,
// so this example needs no API server.
func ExampleNewCacheWith() {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"} // ctrl.GetConfigOrDie() in a program

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: informer.NewCacheWith(
			informer.WithStrategy(informer.ListWatch), // paginated LIST, then WATCH; never stream
			informer.WithPageSize(200),                // objects per LIST page
		),
		Cache:   cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	fmt.Println("manager built:", mgr != nil, err)

	pageSize := int64(-1) // read from a flag, say
	_, err = ctrl.NewManager(cfg, ctrl.Options{
		NewCache: informer.NewCacheWith(informer.WithPageSize(pageSize)),
		Metrics:  metricsserver.Options{BindAddress: "0"},
	})
	fmt.Println(err)
	// Output:
	// manager built: true <nil>
	// informer.NewCacheWith: invalid informer options: WithPageSize: page size -1 is negative
}

// NewSharedIndexInformerWithOptions takes client-go's
// SharedIndexInformerOptions and leaninformer's options. Here the informer
// lists five ConfigMaps two per page, as WithStrategy(ListWatch) and
// WithPageSize(2) ask, from an in-memory API server.
func ExampleNewSharedIndexInformerWithOptions() {
	server := fake.NewServer(&corev1.ConfigMapList{})
	defer server.Close()
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		_, _ = server.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}

	inf := informer.NewSharedIndexInformerWithOptions(server.ListerWatcher(), &corev1.ConfigMap{},
		toolscache.SharedIndexInformerOptions{
			Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
		},
		informer.WithStrategy(informer.ListWatch), informer.WithPageSize(2),
		informer.WithMetrics(nil)) // metrics.Default unless told otherwise

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced)

	for _, req := range server.Requests() {
		if req.Verb == "list" {
			fmt.Printf("LIST limit=%d continue=%t\n", req.Options.Limit, req.Options.Continue != "")
		}
	}
	inDefault, _ := inf.GetIndexer().ByIndex(toolscache.NamespaceIndex, "default")
	fmt.Println("stored:", len(inDefault))

	cancel()
	<-done
	// Output:
	// LIST limit=2 continue=false
	// LIST limit=2 continue=true
	// LIST limit=2 continue=true
	// stored: 5
}

// With WithEncodedStore the informer keeps each object as bytes, here
// S2-compressed, and every read decodes a fresh object: a caller that
// writes into what it read does not change the store.
func ExampleWithEncodedStore() {
	server := fake.NewServer(&corev1.ConfigMapList{})
	defer server.Close()
	_, _ = server.Create(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"mode": "fast"},
	})

	inf := informer.NewSharedIndexInformerWithOptions(server.ListerWatcher(), &corev1.ConfigMap{},
		toolscache.SharedIndexInformerOptions{},
		informer.WithEncodedStore(codec.WithCompression()), informer.WithMetrics(nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced)

	first, _, _ := inf.GetStore().GetByKey("default/settings")
	first.(*corev1.ConfigMap).Data["mode"] = "slow" // the caller's own copy
	second, _, _ := inf.GetStore().GetByKey("default/settings")
	fmt.Println("same object:", first == second)
	fmt.Println("stored mode:", second.(*corev1.ConfigMap).Data["mode"])

	cancel()
	<-done
	// Output:
	// same object: false
	// stored mode: fast
}
