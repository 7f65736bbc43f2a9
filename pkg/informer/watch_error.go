package informer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"strings"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
)

// SetWatchErrorHandler sets the handler called when a list or a watch fails;
// it returns an error once the informer has started.
func (s *SharedIndexInformer) SetWatchErrorHandler(handler toolscache.WatchErrorHandler) error {
	return s.SetWatchErrorHandlerWithContext(func(_ context.Context, r *toolscache.Reflector, err error) {
		handler(r, err)
	})
}

// SetWatchErrorHandlerWithContext is SetWatchErrorHandler with the context
// (and so the logger) of the informer's Run.
func (s *SharedIndexInformer) SetWatchErrorHandlerWithContext(handler toolscache.WatchErrorHandlerWithContext) error {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	if s.started {
		return errors.New("informer has already started")
	}
	s.watchErrorHandler = handler
	return nil
}

// onWatchError is the watcher's error handler. It records every failure for
// SyncStatus. Those the pipeline's classification says a user must act on go
// to the watch error handler (client-go's default one unless the user set
// another), with client-go's reflector's wording; the rest are logged at the
// level it logs them at.
func (s *SharedIndexInformer) onWatchError(ctx context.Context, err error) {
	var failure *listerwatcher.Failure
	if !errors.As(err, &failure) { // the watcher hands every failure over as one
		failure = &listerwatcher.Failure{Op: listerwatcher.OpStream, Err: err, Decision: listerwatcher.Decision{Notify: true}}
	}
	d := failure.Decision
	s.diag.failed(failure.Err, d.Description())
	s.metrics.failed(d.Cause)
	if !d.Notify {
		msg := string(failure.Op) + " failed"
		if failure.Op == listerwatcher.OpStream {
			msg = "watch ended with error"
		}
		if d.Verbosity == 0 {
			msg = "Warning: " + msg
		}
		klog.FromContext(ctx).V(d.Verbosity).Info(msg, "reflector", s.reflector.Name(), "type", s.objectDescription,
			"reason", d.Description(), "next", d.String(), "err", failure.Err)
		return
	}
	err = failure.Err
	if failure.Op == listerwatcher.OpList {
		err = fmt.Errorf("failed to list %v: %w", s.reflector.TypeDescription(), err)
	}
	s.callWatchErrorHandler(ctx, err)
}

// callWatchErrorHandler hands err to the watch error handler (client-go's
// default one unless the user set another) with the reflector at the
// informer's resourceVersion.
func (s *SharedIndexInformer) callWatchErrorHandler(ctx context.Context, err error) {
	s.startedMu.Lock()
	handler := s.watchErrorHandler
	s.startedMu.Unlock()
	if handler == nil {
		handler = toolscache.DefaultWatchErrorHandler
	}
	handler(ctx, s.reflector.at(s.LastSyncResourceVersion()), err)
}

// callerName names an informer after the code that created it, as client-go
// names reflectors: "file.go:line" of the first caller outside this package
// and the informer factories that wrap it.
func callerName() string {
	pcs := make([]uintptr, 16)
	frames := goruntime.CallersFrames(pcs[:goruntime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "github.com/leaninformer/leaninformer/pkg/informer.") &&
			!strings.HasPrefix(f.Function, "k8s.io/client-go/tools/cache.") &&
			!strings.HasPrefix(f.Function, "sigs.k8s.io/controller-runtime/pkg/cache") {
			dir, file := filepath.Split(f.File)
			return fmt.Sprintf("%s/%s:%d", filepath.Base(dir), file, f.Line)
		}
		if !more {
			return "leaninformer"
		}
	}
}

// discardStore is the store of the reflector that watch error handlers
// receive.
type discardStore struct{}

func (discardStore) Add(any) error               { return nil }
func (discardStore) Update(any) error            { return nil }
func (discardStore) Delete(any) error            { return nil }
func (discardStore) Replace([]any, string) error { return nil }
func (discardStore) Resync() error               { return nil }
