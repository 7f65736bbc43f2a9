package listerwatcher

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// stream gets the collection as the initial events of a watch with
// sendInitialEvents=true, in batches of streamingBatch, and watches on the
// same stream once its end bookmark arrived.
func (m *machine) stream(ctx context.Context, p streaming) phase {
	if m.relistRequested() { // as list does: no stream opened for nothing
		return m.requested(p)
	}
	opts := metav1.ListOptions{
		ResourceVersion:      p.from,
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       m.watchTimeout(),
	}
	w, err := m.open(ctx, opts)
	if err != nil {
		return m.fail(ctx, p, OpWatch, err)
	}
	if w == nil {
		return p // ctx ended
	}
	p, rv, op, err := m.streamInitial(ctx, w, p)
	if err == nil {
		return watching{rv: rv, stream: w}
	}
	w.Stop()
	switch {
	case ctx.Err() != nil:
		m.observer.WatchEnded(m.clock.Since(w.start), w.events, nil)
		return p
	case errors.Is(err, errRelist):
		m.observer.WatchEnded(m.clock.Since(w.start), w.events, nil)
		return m.requested(p)
	case op == OpConsume:
		m.observer.WatchEnded(m.clock.Since(w.start), w.events, nil)
		return m.fail(ctx, p, OpConsume, err)
	}
	m.observer.WatchEnded(m.clock.Since(w.start), w.events, err)
	return m.fail(ctx, p, OpStream, err)
}

// errRelist means a Relist call interrupted a watch.
var errRelist = errors.New("relist requested")

// streamInitial reads the initial events of w until the end bookmark, and
// returns p as it stands (announced or not), with the restart's
// resourceVersion once it delivered RestartDone, or the step that failed
// (OpStream, or OpConsume for the consumer) and why.
func (m *machine) streamInitial(ctx context.Context, w *openWatch, p streaming) (streaming, string, Op, error) {
	idle := m.clock.NewTimer(m.idleTimeout)
	defer idle.Stop()
	batch := m.batch[:0]
	defer func() {
		clear(batch)
		if m.pageSize > 0 {
			m.batch = batch[:0]
		} else {
			m.batch = nil // one page of everything: do not keep it
		}
	}()
	deliver := func(ev Event) error {
		if !p.announced {
			p.announced = true
			if err := m.deliver(ctx, Event{Type: RestartStart, Strategy: StreamingList, Reason: p.reason}); err != nil {
				return err
			}
		}
		if ev.Type == RestartPage && len(ev.Objects) == 0 {
			return nil
		}
		return m.deliver(ctx, ev)
	}
	for {
		select {
		case <-ctx.Done():
			return p, "", OpStream, ctx.Err()
		case <-m.relist:
			return p, "", OpStream, errRelist
		case <-idle.C():
			return p, "", OpStream, ErrNoEndBookmark
		case ev, ok := <-w.ResultChan():
			if !ok {
				return p, "", OpStream, ErrStreamEnded
			}
			w.events++
			switch ev.Type {
			case watch.Added:
				if ev.Object == nil {
					m.dropWithoutObject(ctx)
					break
				}
				if err := m.unexpected(ev.Object); err != nil {
					return p, "", OpStream, err
				}
				batch = append(batch, ev.Object)
				if n := m.streamingBatch(); n > 0 && len(batch) >= n {
					if err := deliver(Event{Type: RestartPage, Objects: batch, Strategy: StreamingList}); err != nil {
						return p, "", OpConsume, err
					}
					clear(batch)
					batch = batch[:0]
				}
				// Only an initial event is progress: a server that ignores
				// sendInitialEvents may still send progress bookmarks, and
				// these must not keep Auto waiting for an end that never
				// comes.
				resetTimer(idle, m.idleTimeout)
			case watch.Bookmark:
				md, err := meta.Accessor(ev.Object)
				if err != nil || md.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
					break // progress during the initial events: nothing to do
				}
				rv := md.GetResourceVersion()
				if rv == "" {
					return p, "", OpStream, ErrBookmarkWithoutResourceVersion
				}
				if err := deliver(Event{Type: RestartPage, Objects: batch, Strategy: StreamingList}); err != nil {
					return p, "", OpConsume, err
				}
				// The stream follows changes from here: a very short watch
				// counts from now. Set before RestartDone goes out, so that
				// a consumer that has it knows the count has begun.
				w.live, w.initial = m.clock.Now(), w.events
				if err := deliver(Event{Type: RestartDone, ResourceVersion: rv, Strategy: StreamingList}); err != nil {
					return p, "", OpConsume, err
				}
				return p, rv, OpStream, nil
			case watch.Modified, watch.Deleted:
				return p, "", OpStream, ErrNotStreaming
			case watch.Error:
				return p, "", OpStream, watchEventError(ev.Object)
			default:
				m.dropUnknown(ctx, ev)
			}
		}
	}
}
