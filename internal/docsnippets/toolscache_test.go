package docsnippets

// Snippets in which "cache" is client-go's tools/cache (see crcache_test.go).

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/informer"
)

var _ = []any{usageClientGo, usageWithOptions, usageFactory}

func usageClientGo(client kubernetes.Interface) {
	// BEGIN docs/usage.md
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
	inf := informer.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 10*time.Minute,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	// END
	_ = inf
}

func usageWithOptions(lw cache.ListerWatcher, indexers cache.Indexers) {
	// BEGIN docs/usage.md
	inf := informer.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{},
		cache.SharedIndexInformerOptions{ResyncPeriod: 10 * time.Minute, Indexers: indexers},
		informer.WithStrategy(informer.ListWatch), informer.WithPageSize(200))
	// END
	_ = inf
}

func usageFactory(ctx context.Context, cfg *rest.Config, client kubernetes.Interface) {
	// BEGIN docs/usage.md
	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	factory.InformerFor(&corev1.ConfigMap{}, func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		own := kubernetes.NewForConfigOrDie(rest.CopyConfig(cfg)) // a rate limiter of its own: see below
		lw := cache.NewListWatchFromClient(own.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
		return informer.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}) // without it, namespaced lists scan every object
	})
	lister := factory.Core().V1().ConfigMaps().Lister() // backed by leaninformer's indexer
	factory.Start(ctx.Done())
	// END
	_ = lister
}
