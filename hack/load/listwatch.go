package main

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// fullLists counts the full lists an informer starts: first LIST pages
// (continue pages belong to the same list) and streaming watches.
type fullLists struct{ n atomic.Int64 }

func (f *fullLists) count() int64 { return f.n.Load() }

// countingListWatch is the ListerWatcher client-go's generated informers
// build from list and watch, counting full lists; client says whether the
// client can stream lists, as for client-go's.
func countingListWatch(
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	client any,
) (toolscache.ListerWatcher, *fullLists) {
	lists := &fullLists{}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if opts.Continue == "" {
				lists.n.Add(1)
			}
			return list(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
				lists.n.Add(1)
			}
			return watchFn(ctx, opts)
		},
	}
	return toolscache.ToListWatcherWithWatchListSemantics(lw, client), lists
}
