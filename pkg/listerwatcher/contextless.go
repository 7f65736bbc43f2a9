package listerwatcher

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// listerWatcher is a ListerWatcher's calls, each ending when its context
// does.
type listerWatcher struct {
	toolscache.ListerWithContext
	toolscache.WatcherWithContext
}

// withContext returns lw's calls as calls that end when their context does.
// A call that ignores its context (List or Watch of a ListerWatcher without
// the context-aware methods, or of a cache.ListWatch, or client-go's wrapper
// of one, without ListWithContextFunc or WatchFuncWithContext) runs on a goroutine of its
// own, which the caller stops waiting for when ctx ends; it lives until the
// call returns, and stops a watch that opens too late.
func withContext(lw toolscache.ListerWatcher) listerWatcher {
	out := listerWatcher{toolscache.ToListerWithContext(lw), toolscache.ToWatcherWithContext(lw)}
	listIgnores, watchIgnores := ignoresContext(lw)
	if listIgnores {
		out.ListerWithContext = detachedLister{lw}
	}
	if watchIgnores {
		out.WatcherWithContext = detachedWatcher{lw}
	}
	return out
}

// ContextAware returns lw with calls that end when their context does, as
// the Watcher makes them (see withContext): a wrapper that calls lw with
// contexts (a shard's ListerWatcher, say) must wrap this, or a call of lw
// that ignores its context holds up whatever waits for the wrapper. It
// answers IsWatchListSemanticsUnSupported as lw does.
func ContextAware(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	c := contextAware{listerWatcher: withContext(lw)}
	if u, ok := lw.(interface{ IsWatchListSemanticsUnSupported() bool }); ok {
		c.noStream = u.IsWatchListSemanticsUnSupported()
	}
	return c
}

type contextAware struct {
	listerWatcher
	noStream bool
}

func (c contextAware) List(opts metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), opts)
}

func (c contextAware) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), opts)
}

func (c contextAware) IsWatchListSemanticsUnSupported() bool { return c.noStream }

// ignoresContext reports which of lw's calls ignore their context.
func ignoresContext(lw toolscache.ListerWatcher) (list, watch bool) {
	if l := listWatchOf(lw); l != nil {
		return l.ListWithContextFunc == nil, l.WatchFuncWithContext == nil
	}
	_, listsWithContext := lw.(toolscache.ListerWithContext)
	_, watchesWithContext := lw.(toolscache.WatcherWithContext)
	return !listsWithContext, !watchesWithContext
}

var listWatchType = reflect.TypeFor[*toolscache.ListWatch]()

// listWatchOf returns lw if it is a *cache.ListWatch, or the one it embeds
// if it is one of client-go's wrappers of a ListWatch
// (cache.ToListWatcherWithWatchListSemantics's): the wrapper's context-aware
// methods are the ListWatch's, which drop the context when only ListFunc or
// WatchFunc is set. Other types that embed a ListWatch may override those
// methods, so only client-go's own are looked into.
func listWatchOf(lw toolscache.ListerWatcher) *toolscache.ListWatch {
	if l, ok := lw.(*toolscache.ListWatch); ok {
		return l
	}
	v := reflect.ValueOf(lw)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || v.Type().PkgPath() != listWatchType.Elem().PkgPath() {
		return nil
	}
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.Anonymous && f.Type == listWatchType {
			l, _ := v.Field(i).Interface().(*toolscache.ListWatch)
			return l
		}
	}
	return nil
}

// detachedLister lists on a goroutine of its own (see withContext).
type detachedLister struct{ toolscache.Lister }

func (l detachedLister) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return detach(ctx, func() (runtime.Object, error) {
		return l.List(opts) //nolint:staticcheck // SA1019: the context-less call is all this ListerWatcher has
	}, func(runtime.Object) {})
}

// detachedWatcher opens watches on a goroutine of its own (see withContext).
type detachedWatcher struct{ toolscache.Watcher }

func (w detachedWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return detach(ctx, func() (watch.Interface, error) {
		return w.Watch(opts) //nolint:staticcheck // SA1019: the context-less call is all this ListerWatcher has
	}, func(wi watch.Interface) {
		if wi != nil {
			wi.Stop()
		}
	})
}

// detach runs call on a goroutine of its own and waits for its result until
// ctx ends. A result that comes after that goes to abandon (unless the call
// failed) on the call's goroutine, which then ends. A panic of call is the
// caller's while it waits, as client-go's reflector hands on its list's;
// after that, nobody can recover it, and it is logged and dropped (client-go
// drops it): a call left running at shutdown must not crash the process.
func detach[T any](ctx context.Context, call func() (T, error), abandon func(T)) (T, error) {
	type result struct {
		v        T
		err      error
		panicked any
	}
	done := make(chan result) // unbuffered: taken by the caller or left to the goroutine
	gaveUp := make(chan struct{})
	go func() {
		var r result
		func() {
			defer func() { r.panicked = recover() }()
			r.v, r.err = call()
		}()
		select {
		case done <- r:
		case <-gaveUp:
			if r.panicked != nil {
				utilruntime.HandleErrorWithContext(ctx, fmt.Errorf("%v", r.panicked),
					"A ListerWatcher call abandoned when its context ended panicked afterwards; the panic is dropped")
				return
			}
			if r.err == nil {
				abandon(r.v)
			}
		}
	}()
	select {
	case r := <-done:
		if r.panicked != nil {
			panic(r.panicked)
		}
		return r.v, r.err
	case <-ctx.Done():
		close(gaveUp)
		var zero T
		return zero, ctx.Err()
	}
}
