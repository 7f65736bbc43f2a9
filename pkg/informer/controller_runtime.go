package informer

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

var _ crcache.NewCacheFunc = NewCache

// NewCache is a controller-runtime cache.NewCacheFunc whose informers are this
// package's. Use it in a manager's options:
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{NewCache: informer.NewCache})
//
// Every other cache option is kept as given; an Options.NewInformer the
// caller set wins.
func NewCache(cfg *rest.Config, opts crcache.Options) (crcache.Cache, error) {
	return NewCacheWith()(cfg, opts)
}

// NewCacheWith is NewCache with this package's options (list strategy, page
// size, backoff, relist reuse) applied to every informer of the cache.
func NewCacheWith(options ...Option) crcache.NewCacheFunc {
	return func(cfg *rest.Config, opts crcache.Options) (crcache.Cache, error) {
		if opts.NewInformer == nil {
			opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
				return NewSharedIndexInformerWithOptions(lw, obj,
					toolscache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers},
					options...)
			}
		}
		return crcache.New(cfg, opts)
	}
}
