package fake

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// ListerWatcher is a client-go ListerWatcher, with and without context,
// reading from Server.
type ListerWatcher struct {
	Server *Server
	// WatchListUnsupported makes IsWatchListSemanticsUnSupported report
	// true, as client-go's test fakes do to say they cannot stream lists.
	WatchListUnsupported bool
}

var (
	_ toolscache.ListerWatcher            = &ListerWatcher{}
	_ toolscache.ListerWatcherWithContext = &ListerWatcher{}
)

// List implements toolscache.Lister.
func (lw *ListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.Server.list(context.Background(), opts)
}

// ListWithContext implements toolscache.ListerWithContext.
func (lw *ListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return lw.Server.list(ctx, opts)
}

// Watch implements toolscache.Watcher. The watch ends on Stop, Close or
// after opts.TimeoutSeconds (without it, after the server's
// WithMinRequestTimeout times a random factor in [1, 2)).
func (lw *ListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.Server.watch(context.Background(), opts)
}

// WatchWithContext implements toolscache.WatcherWithContext. The watch also
// ends when ctx does, as a streaming HTTP response would, and after
// opts.TimeoutSeconds as Watch does.
func (lw *ListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return lw.Server.watch(ctx, opts)
}

// IsWatchListSemanticsUnSupported is what client-go's
// watchlist.DoesClientNotSupportWatchListSemantics asks.
func (lw *ListerWatcher) IsWatchListSemanticsUnSupported() bool { return lw.WatchListUnsupported }
