package main

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// prefetchLW asks for the next LIST page as soon as a page with a continue
// token comes back, with the limit of the request that brought it, and
// answers the request for that continue token from the read-ahead (the
// watcher takes any page size): our informer stores one page while the next
// one is read and decoded, so two pages are held at once. It measures a
// design the listerwatcher does not have (variant ours-listwatch-prefetch).
type prefetchLW struct {
	lw toolscache.ListerWatcherWithContext

	mu    sync.Mutex
	ahead *readAhead
}

type readAhead struct {
	cont string
	done chan struct{}
	list apiruntime.Object
	err  error
}

func newPrefetchLW(lw toolscache.ListerWatcher) *prefetchLW {
	return &prefetchLW{lw: toolscache.ToListerWatcherWithContext(lw)}
}

func (p *prefetchLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
	p.mu.Lock()
	ahead := p.ahead
	p.ahead = nil
	p.mu.Unlock()
	if ahead != nil {
		<-ahead.done
	}
	var list apiruntime.Object
	var err error
	if ahead != nil && opts.Continue != "" && ahead.cont == opts.Continue {
		list, err = ahead.list, ahead.err
	} else {
		list, err = p.lw.ListWithContext(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	if lm, lerr := meta.ListAccessor(list); lerr == nil && lm.GetContinue() != "" {
		next := &readAhead{cont: lm.GetContinue(), done: make(chan struct{})}
		p.mu.Lock()
		p.ahead = next
		p.mu.Unlock()
		go func() { // ends with the informer's context at the latest
			defer close(next.done)
			next.list, next.err = p.lw.ListWithContext(ctx, metav1.ListOptions{Limit: opts.Limit, Continue: next.cont})
		}()
	}
	return list, nil
}

func (p *prefetchLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return p.lw.WatchWithContext(ctx, opts)
}

func (p *prefetchLW) List(opts metav1.ListOptions) (apiruntime.Object, error) {
	return p.ListWithContext(context.Background(), opts)
}

func (p *prefetchLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return p.WatchWithContext(context.Background(), opts)
}
