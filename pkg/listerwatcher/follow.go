package listerwatcher

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// follow hands the consumer the live events after lastRV, on the stream a
// streaming restart left open or on a new watch. A clean close returns in
// stateWatch, to watch again from lastRV; failures move to stateRestart or
// back off, depending on the error.
func (r *run) follow(ctx context.Context) {
	w := r.stream
	r.stream = nil
	if w == nil {
		opts := metav1.ListOptions{
			ResourceVersion:     r.lastRV,
			AllowWatchBookmarks: true,
			TimeoutSeconds:      r.watchTimeout(),
		}
		var err error
		if w, err = r.open(ctx, opts); err != nil {
			r.report(ctx, OpWatch, err)
			r.afterWatchError(ctx, err)
			return
		}
		if w == nil {
			return // ctx ended
		}
	}
	err := r.watchEvents(ctx, w)
	w.Stop()
	d := r.clock.Since(w.start)
	if ctx.Err() != nil || errors.Is(err, errConsumer) {
		r.observer.WatchEnded(d, w.events, nil)
		return
	}
	if err == nil && w.events == 0 && d < veryShortWatch {
		err = ErrVeryShortWatch
	}
	r.observer.WatchEnded(d, w.events, err)
	if err == nil {
		r.logger.V(4).Info("Watch closed", "resourceVersion", r.lastRV, "events", w.events, "duration", d)
		return
	}
	r.report(ctx, OpStream, err)
	r.afterWatchError(ctx, err)
}

// veryShortWatch: a watch closing sooner without events is an error.
const veryShortWatch = time.Second

// afterWatchError decides what follows a watch that failed to open or ended
// with err.
func (r *run) afterWatchError(ctx context.Context, err error) {
	switch {
	case isExpired(err):
		r.logger.V(1).Info("Watch resource version expired; relisting", "resourceVersion", r.lastRV, "err", err)
		r.restartAfter(Expired, false)
	case isThrottled(err), apierrors.IsInternalError(err), errors.Is(err, ErrVeryShortWatch):
		// The collection we have is fine: watch again from lastRV.
	default:
		r.restartAfter(Error, false)
	}
	r.pause(ctx, err)
}

// watchEvents delivers w's events until it closes (nil), sends an ERROR
// event, the consumer fails (errConsumer) or ctx ends.
func (r *run) watchEvents(ctx context.Context, w *openWatch) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			w.events++
			var typ EventType
			switch ev.Type {
			case watch.Added:
				typ = Added
			case watch.Modified:
				typ = Modified
			case watch.Deleted:
				typ = Deleted
			case watch.Bookmark:
				typ = Bookmark
			case watch.Error:
				return watchEventError(ev.Object)
			default:
				r.dropUnknown(ctx, ev)
				continue
			}
			if typ != Bookmark && !r.accept(ctx, ev.Object) {
				continue
			}
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				utilruntime.HandleErrorWithContext(ctx, err, "Dropped a watch event whose object has no metadata", "listerwatcher", r.name, "type", ev.Type)
				continue
			}
			out := Event{Type: typ, ResourceVersion: m.GetResourceVersion()}
			if typ != Bookmark {
				out.Object = ev.Object
			}
			if !r.deliver(ctx, out) {
				return errConsumer
			}
			r.lastRV = out.ResourceVersion
		}
	}
}

// dropUnknown drops an event of a type the watch protocol does not have.
func (r *run) dropUnknown(ctx context.Context, ev watch.Event) {
	utilruntime.HandleErrorWithContext(ctx, nil, "Dropped a watch event of an unknown type", "listerwatcher", r.name, "type", ev.Type)
}

// resetTimer restarts t for d, discarding a tick that fired meanwhile.
func resetTimer(t clock.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C():
		default:
		}
	}
	t.Reset(d)
}
