package informer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// SyncStatus, hands failed lists and failed watch opens to the watch error
// handler (client-go's default one unless the user set another), as
// client-go's reflector does, and logs the rest the way it does.
func (s *SharedIndexInformer) onWatchError(ctx context.Context, err error) {
	op := listerwatcher.OpStream
	var failure *listerwatcher.Failure
	if errors.As(err, &failure) {
		op, err = failure.Op, failure.Err
	}
	s.diag.failed(err)
	logger := klog.FromContext(ctx)
	switch op {
	case listerwatcher.OpList:
		err = fmt.Errorf("failed to list %v: %w", s.reflector.TypeDescription(), err)
	case listerwatcher.OpWatch:
	case listerwatcher.OpFallback:
		return // the watcher logs its fallbacks
	default:
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			logger.V(4).Info("Watch closed", "reflector", s.reflector.Name(), "type", s.objectDescription, "err", err)
		} else {
			logger.Info("Warning: watch ended with error", "reflector", s.reflector.Name(), "type", s.objectDescription, "err", err)
		}
		return
	}
	s.startedMu.Lock()
	handler := s.watchErrorHandler
	s.startedMu.Unlock()
	if handler == nil {
		handler = toolscache.DefaultWatchErrorHandler
	}
	handler(ctx, s.reflector, err)
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

// discardStore is the store of the never-run reflector that watch error
// handlers receive.
type discardStore struct{}

func (discardStore) Add(any) error               { return nil }
func (discardStore) Update(any) error            { return nil }
func (discardStore) Delete(any) error            { return nil }
func (discardStore) Replace([]any, string) error { return nil }
func (discardStore) Resync() error               { return nil }
