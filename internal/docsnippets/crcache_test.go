package docsnippets

// Snippets in which "cache" is controller-runtime's cache package, or
// absent. Each BEGIN/END region is a fenced Go block of the named document,
// as it is there; the lines around it only declare what the snippet uses.

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/leaninformer/leaninformer/pkg/codec"
	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/metrics"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

var _ = []any{readmeControllerRuntime, readmeClientGo, usageControllerRuntime, usageNewCacheWith,
	usageGetInformer, sharding, observability, compactStore, shardManager, shardHandovers}

func readmeControllerRuntime(cfg *rest.Config) {
	// BEGIN README.md
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: informer.NewCache, // leaninformer's informers behind the manager's cache
	})
	// END
	_, _ = mgr, err
}

func readmeClientGo(lw toolscache.ListerWatcher, indexers toolscache.Indexers) {
	// BEGIN README.md
	inf := informer.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 10*time.Minute, indexers)
	// END
	_ = inf
}

func usageControllerRuntime(cfg *rest.Config) {
	// BEGIN docs/usage.md
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: informer.NewCache, // leaninformer's informers behind the manager's cache
	})
	// END
	_, _ = mgr, err
}

func usageNewCacheWith(cfg *rest.Config) {
	// BEGIN docs/usage.md
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: informer.NewCacheWith(
			informer.WithStrategy(informer.ListWatch), // paginated LIST, then WATCH; never stream
			informer.WithPageSize(200),                // objects per LIST page (default: sized per list)
		),
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	// END
	_, _ = mgr, err
}

func usageGetInformer(ctx context.Context, mgr ctrl.Manager) {
	// BEGIN docs/usage.md
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	_, ok := inf.(*informer.SharedIndexInformer) // true with leaninformer
	// END
	_, _ = ok, err
}

//nolint:ineffassign,staticcheck // the documents leave error handling out
func sharding(cfg *rest.Config, clientset kubernetes.Interface, namespace string) {
	// BEGIN docs/sharding.md
	member, err := shard.New(clientset.CoordinationV1(), namespace, "my-controller")
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: informer.NewCacheWith(informer.WithShard(member, &corev1.ConfigMap{})), // ConfigMaps unsharded
	})
	err = mgr.Add(member)
	// END
	_ = err
}

func observability() error {
	// BEGIN docs/observability.md
	if err := metrics.Default.Register(prometheus.DefaultRegisterer); err != nil {
		return err
	}
	// END
	return nil
}

func compactStore(cfg *rest.Config, lw toolscache.ListerWatcher, opts toolscache.SharedIndexInformerOptions) {
	// BEGIN docs/compact-store.md
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{NewCache: informer.NewCacheWith(informer.WithEncodedStore())})
	inf := informer.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, opts, informer.WithEncodedStore(codec.WithCompression()))
	// END
	_, _, _ = mgr, err, inf
}

//nolint:ineffassign,staticcheck // the documents leave error handling out
func shardManager(cfg *rest.Config, clientset kubernetes.Interface, namespace string, r reconcile.Reconciler) {
	// BEGIN pkg/shard/README.md
	member, err := shard.New(clientset.CoordinationV1(), namespace, "my-controller")
	// ...
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: informer.NewCacheWith(informer.WithShard(member, &corev1.ConfigMap{})), // ConfigMaps unsharded
	})
	// ...
	err = mgr.Add(member) // the member runs, and stops cleanly, with the manager
	err = ctrl.NewControllerManagedBy(mgr).For(&appsv1.Deployment{}).
		Complete(shard.Reconciler(member, shard.ObjectKey(member, mgr.GetCache(), &appsv1.Deployment{}), r))
	// END
	_ = err
}

func shardHandovers(member *shard.Member, mgr ctrl.Manager, r reconcile.Reconciler) {
	var err error
	// BEGIN pkg/shard/README.md
	key := shard.ObjectKey(member, mgr.GetCache(), &corev1.ConfigMap{}) // excluded in WithShard
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
		WatchesRawSource(shard.Handovers(member, mgr.GetCache(), &corev1.ConfigMapList{}, key)).
		Complete(shard.Reconciler(member, key, r))
	// END
	_ = err
}
