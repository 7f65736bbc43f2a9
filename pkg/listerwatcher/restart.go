package listerwatcher

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// listRestart gets the collection with paginated LISTs, one page at a time,
// and moves to stateWatch at the list's resourceVersion; on a failure it
// stays in (or moves to) stateRestart.
func (r *run) listRestart(ctx context.Context) {
	opts := r.firstListOptions()
	started := false // the consumer saw RestartStart for this attempt
	for {
		list, err := r.list(ctx, opts)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r.report(ctx, OpList, err)
			switch {
			case opts.Continue == "" && opts.ResourceVersion != "" && isUnavailable(err):
				// The server no longer (or not yet) serves lastRV: list
				// the newest consistent state right away.
				r.logger.V(1).Info("Resource version unavailable, listing from the newest", "resourceVersion", opts.ResourceVersion, "err", err)
				r.rvUnavailable = true
				opts = r.firstListOptions()
			case opts.Continue != "" && isExpired(err):
				r.logger.V(1).Info("Continue token expired, listing again", "err", err)
				r.restartAfter(ExpiredContinue, started)
				r.pause(ctx, err)
				return
			case isThrottled(err):
				if !r.pause(ctx, err) {
					return
				}
			default:
				r.restartAfter(Error, started)
				r.pause(ctx, err)
				return
			}
			continue
		}

		// list is dead past this call: while the consumer handles the
		// page, only the items copied out of it are reachable.
		items, rv, next, err := extract(list)
		if err != nil {
			err = fmt.Errorf("cannot read the LIST response: %w", err)
			r.report(ctx, OpList, err)
			r.restartAfter(Error, started)
			r.pause(ctx, err)
			return
		}
		if !started {
			if !r.deliver(ctx, Event{Type: RestartStart, Strategy: ListWatch, Reason: r.reason}) {
				return
			}
			started = true
		}
		if len(items) > 0 && !r.deliver(ctx, Event{Type: RestartPage, Objects: items, Strategy: ListWatch}) {
			return
		}
		if next == "" {
			if rv == "" {
				// Nothing is lost: a watch from "" starts with ADDED events
				// of the whole collection, as client-go's reflector relies on.
				r.logger.Info("Warning: the LIST returned no resourceVersion; watching from the newest state, whose initial events replay the collection")
			}
			if !r.deliver(ctx, Event{Type: RestartDone, ResourceVersion: rv, Strategy: ListWatch}) {
				return
			}
			r.lastRV, r.rvUnavailable, r.state = rv, false, stateWatch
			return
		}
		// The API server rejects resourceVersion(Match) with continue.
		opts = metav1.ListOptions{Limit: r.pageSize, Continue: next}
	}
}

// firstListOptions: the first page is a consistent read, from lastRV when
// the server still has it. Never resourceVersion "0": the watch cache would
// ignore the limit and answer everything at once.
func (r *run) firstListOptions() metav1.ListOptions {
	opts := metav1.ListOptions{Limit: r.pageSize}
	if r.lastRV != "" && !r.rvUnavailable {
		opts.ResourceVersion = r.lastRV
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	return opts
}

func (r *run) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	start := r.clock.Now()
	list, err := r.lw.ListWithContext(ctx, opts)
	items := 0
	if err == nil && list != nil {
		items = meta.LenList(list)
	}
	r.observer.ListRequest(opts, items, r.clock.Since(start), err)
	return list, err
}

// extract returns a LIST response's items, each in its own allocation so that
// a kept item does not pin the page, with its resourceVersion and continue.
func extract(list runtime.Object) (items []runtime.Object, rv, next string, err error) {
	if list == nil {
		return nil, "", "", errors.New("the ListerWatcher returned no list and no error")
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, "", "", err
	}
	items, err = meta.ExtractListWithAlloc(list)
	if err != nil {
		return nil, "", "", err
	}
	return items, lm.GetResourceVersion(), lm.GetContinue(), nil
}

// streamRestart gets the collection as the initial events of a watch with
// sendInitialEvents=true, in batches (streamingBatch), and keeps the watch
// open for stateWatch once the end bookmark arrived.
func (r *run) streamRestart(ctx context.Context) {
	opts := metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       r.watchTimeout(),
	}
	if !r.rvUnavailable {
		opts.ResourceVersion = r.lastRV
	}
	w, err := r.open(ctx, opts)
	if err != nil {
		switch {
		case isThrottled(err):
			r.report(ctx, OpWatch, err)
			r.pause(ctx, err)
		case opts.ResourceVersion != "" && isUnavailable(err):
			r.report(ctx, OpWatch, err)
			r.rvUnavailable = true // retry from "" right away
		case r.strategy == Auto:
			r.fallBack(ctx, err, false)
		default:
			r.report(ctx, OpWatch, err)
			r.pause(ctx, err)
		}
		return
	}
	if w == nil {
		return // ctx ended
	}
	started, err := r.streamInitial(ctx, w)
	if err == nil {
		return
	}
	w.Stop()
	if ctx.Err() != nil {
		r.observer.WatchEnded(r.clock.Since(w.start), w.events, nil)
		return
	}
	r.observer.WatchEnded(r.clock.Since(w.start), w.events, err)
	if errors.Is(err, errConsumer) {
		return // deliver has reported and backed off
	}
	if r.strategy == Auto && (errors.Is(err, ErrNoEndBookmark) || errors.Is(err, ErrNotStreaming)) {
		r.fallBack(ctx, err, started)
		return
	}
	r.report(ctx, OpStream, err)
	switch {
	case isThrottled(err):
		r.restartAfter(Error, started)
		r.pause(ctx, err)
	case opts.ResourceVersion != "" && isUnavailable(err):
		r.rvUnavailable = true // retry from "" right away
		r.restartAfter(Expired, started)
	default:
		r.restartAfter(Error, started)
		r.pause(ctx, err)
	}
}

// errConsumer marks a failure the consumer caused, already handled.
var errConsumer = errors.New("consumer failed")

// streamInitial reads the initial events of w until the end bookmark. It
// returns nil once it delivered RestartDone and left w in r.stream, and
// whether the consumer saw RestartStart.
func (r *run) streamInitial(ctx context.Context, w *openWatch) (started bool, err error) {
	idle := r.clock.NewTimer(r.idleTimeout)
	defer idle.Stop()
	batch := r.batch[:0]
	defer func() {
		clear(batch)
		if r.pageSize > 0 {
			r.batch = batch[:0]
		} else {
			r.batch = nil // one page of everything: do not keep it
		}
	}()
	deliver := func(ev Event) error {
		if !started {
			if !r.deliver(ctx, Event{Type: RestartStart, Strategy: StreamingList, Reason: r.reason}) {
				return errConsumer
			}
			started = true
		}
		if ev.Type == RestartPage && len(ev.Objects) == 0 {
			return nil
		}
		if !r.deliver(ctx, ev) {
			return errConsumer
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return started, ctx.Err()
		case <-idle.C():
			return started, ErrNoEndBookmark
		case ev, ok := <-w.ResultChan():
			if !ok {
				return started, ErrStreamEnded
			}
			w.events++
			switch ev.Type {
			case watch.Added:
				if !r.accept(ctx, ev.Object) {
					break
				}
				batch = append(batch, ev.Object)
				if n := r.streamingBatch(); n > 0 && len(batch) >= n {
					if err := deliver(Event{Type: RestartPage, Objects: batch, Strategy: StreamingList}); err != nil {
						return started, err
					}
					clear(batch)
					batch = batch[:0]
				}
			case watch.Bookmark:
				m, err := meta.Accessor(ev.Object)
				if err != nil || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
					break // progress during the initial events: nothing to do
				}
				rv := m.GetResourceVersion()
				if err := deliver(Event{Type: RestartPage, Objects: batch, Strategy: StreamingList}); err != nil {
					return started, err
				}
				if err := deliver(Event{Type: RestartDone, ResourceVersion: rv, Strategy: StreamingList}); err != nil {
					return started, err
				}
				r.lastRV, r.rvUnavailable, r.state = rv, false, stateWatch
				r.stream = w
				return started, nil
			case watch.Modified, watch.Deleted:
				return started, ErrNotStreaming
			case watch.Error:
				return started, watchEventError(ev.Object)
			default:
				r.dropUnknown(ctx, ev)
			}
			resetTimer(idle, r.idleTimeout)
		}
	}
}
