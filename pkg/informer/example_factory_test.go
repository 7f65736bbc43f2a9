package informer_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// A SharedInformerFactory keeps the first informer registered for a type
// through InformerFor: registered before anything asks for ConfigMaps, the
// factory's typed informer and lister are leaninformer's. The listers need
// the namespace index. The typed accessor's Informer() wraps the informer
// in client-go's typed informer, so SyncStatus is reached through what
// InformerFor returned. In a program the ListerWatcher reads through a
// clientset of its own (docs/usage.md):
//
//	own := kubernetes.NewForConfigOrDie(rest.CopyConfig(cfg))
//	lw := cache.NewListWatchFromClient(own.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
func ExampleNewSharedIndexInformer_sharedInformerFactory() {
	server := fake.NewServer(&corev1.ConfigMapList{})
	defer server.Close()
	for _, name := range []string{"a", "b"} {
		_, _ = server.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}
	_, _ = server.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "c"}})

	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(), 10*time.Minute)
	inf := factory.InformerFor(&corev1.ConfigMap{}, func(_ kubernetes.Interface, resync time.Duration) toolscache.SharedIndexInformer {
		return informer.NewSharedIndexInformer(server.ListerWatcher(), &corev1.ConfigMap{}, resync,
			toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	})
	lister := factory.Core().V1().ConfigMaps().Lister()
	_, typedIsOurs := factory.Core().V1().ConfigMaps().Informer().(*informer.SharedIndexInformer)

	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	inDefault, _ := lister.ConfigMaps("default").List(labels.Everything())
	all, _ := lister.List(labels.Everything())
	fmt.Println("in default:", len(inDefault), "in all:", len(all))
	fmt.Println("typed accessor unwrapped:", typedIsOurs)
	fmt.Println("synced:", inf.(*informer.SharedIndexInformer).SyncStatus().Synced)

	cancel()
	factory.Shutdown() // waits for the informer to stop
	// Output:
	// in default: 2 in all: 3
	// typed accessor unwrapped: false
	// synced: true
}
