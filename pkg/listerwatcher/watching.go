package listerwatcher

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// watch hands the consumer the live events after p.rv, on the stream a
// streaming restart left open or on a new watch, until the watch ends. A
// clean close watches again from the newest resourceVersion.
func (m *machine) watch(ctx context.Context, p watching) phase {
	w := p.stream
	if w == nil {
		if m.relistRequested() { // as list and stream do: no watch opened for nothing
			return m.requested(p)
		}
		opts := metav1.ListOptions{
			ResourceVersion:     p.rv,
			AllowWatchBookmarks: true,
			TimeoutSeconds:      m.watchTimeout(),
		}
		var err error
		if w, err = m.open(ctx, opts); err != nil {
			return m.fail(ctx, p, OpWatch, err)
		}
		if w == nil {
			return p // ctx ended
		}
	}
	// A watch opened from "" or "0" (a LIST without resourceVersion) starts
	// with ADDED events replaying the collection in no resourceVersion
	// order, as client-go's reflector knows: until something else comes,
	// their versions are neither compared nor taken as the collection's. A
	// stream a streaming restart left open is past them.
	replaying := p.stream == nil && (p.rv == "" || p.rv == "0")
	rv, op, err := m.follow(ctx, w, p.rv, replaying)
	w.Stop()
	next := watching{rv: rv}
	d := m.clock.Since(w.start)
	switch {
	case ctx.Err() != nil:
		m.observer.WatchEnded(d, w.events, nil)
		return next
	case errors.Is(err, errRelist):
		m.observer.WatchEnded(d, w.events, nil)
		return m.requested(next)
	case op == OpConsume:
		m.observer.WatchEnded(d, w.events, nil)
		return m.fail(ctx, next, OpConsume, err)
	}
	if err == nil && w.events == w.initial && m.clock.Since(w.live) < veryShortWatch {
		err = ErrVeryShortWatch
	}
	m.observer.WatchEnded(d, w.events, err)
	if err != nil {
		return m.fail(ctx, next, OpStream, err)
	}
	m.logger.V(4).Info("Watch closed", "resourceVersion", rv, "events", w.events, "duration", d)
	return next
}

// veryShortWatch: a watch closing sooner without events is an error. A
// stream is counted from its end bookmark, as client-go's reflector counts
// the watch its streaming list leaves open: its initial events say nothing
// of whether something drops its watches.
const veryShortWatch = time.Second

// follow delivers w's events after rv and returns the newest resourceVersion
// the consumer has when w closes (no error), sends an ERROR event (OpStream),
// the consumer fails (OpConsume), Relist is called (errRelist) or ctx ends.
// While replaying, w's ADDED events replay the collection (see watch): they
// are delivered without a resourceVersion and leave rv as it is.
func (m *machine) follow(ctx context.Context, w *openWatch, rv string, replaying bool) (string, Op, error) {
	for {
		select {
		case <-ctx.Done():
			return rv, OpStream, ctx.Err()
		case <-m.relist:
			return rv, OpStream, errRelist
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv, OpStream, nil
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
				return rv, OpStream, watchEventError(ev.Object)
			default:
				m.dropUnknown(ctx, ev)
				continue
			}
			if typ != Bookmark {
				if ev.Object == nil {
					m.dropWithoutObject(ctx)
					continue
				}
				if err := m.unexpected(ev.Object); err != nil {
					return rv, OpStream, err
				}
			}
			md, err := meta.Accessor(ev.Object)
			if err != nil {
				utilruntime.HandleErrorWithContext(ctx, err, "Dropped a watch event whose object has no metadata", "listerwatcher", m.name, "type", ev.Type)
				continue
			}
			replaying = replaying && typ == Added
			out := Event{Type: typ, ResourceVersion: md.GetResourceVersion()}
			if replaying {
				out.ResourceVersion = ""
			} else if err := m.inOrder(out, ev.Object, rv); err != nil {
				return rv, OpStream, err
			}
			if typ != Bookmark {
				out.Object = ev.Object
			}
			if err := m.deliver(ctx, out); err != nil {
				return rv, OpConsume, err
			}
			if !replaying {
				rv = out.ResourceVersion
			}
		}
	}
}

// openWatch is a watch with what WatchEnded and the very short watch check
// need.
type openWatch struct {
	watch.Interface
	start  time.Time
	events int
	// live is when the watch began to follow changes: its open, or a
	// stream's end bookmark; initial is the events before that.
	live    time.Time
	initial int
	stopped bool
}

// Stop stops the watch once.
func (w *openWatch) Stop() {
	if !w.stopped {
		w.stopped = true
		w.Interface.Stop()
	}
}

// open starts a watch with opts. It returns nil and no error when ctx ended
// meanwhile, after stopping a watch that opened all the same.
func (m *machine) open(ctx context.Context, opts metav1.ListOptions) (*openWatch, error) {
	start := m.clock.Now()
	wi, err := m.lw.WatchWithContext(ctx, opts)
	if ctx.Err() != nil {
		if err == nil {
			wi.Stop()
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m.observer.WatchStarted(opts)
	m.opened = &openWatch{Interface: wi, start: start, live: start}
	return m.opened, nil
}

// closeStream stops the stream ph still holds when Run ends, if any.
func (m *machine) closeStream(ph phase) {
	if p, ok := ph.(watching); ok && p.stream != nil {
		p.stream.Stop()
		m.observer.WatchEnded(m.clock.Since(p.stream.start), p.stream.events, nil)
	}
}

// watchTimeout returns a random server-side timeout in [min, 2*min], so
// that the watches of many clients do not all end together.
func (m *machine) watchTimeout() *int64 {
	s := int64(m.minWatchTimeout.Seconds() * (1 + rand.Float64()))
	return &s
}

// unexpected returns an ErrUnexpectedObject error for an object of another
// type or kind than the expected one, or for a Table, nil for any other.
func (m *machine) unexpected(obj runtime.Object) error {
	if gvk, ok := asTable(obj); ok {
		return fmt.Errorf("%w: %v (does the ListerWatcher ask for as=Table?)", ErrUnexpectedObject, gvk)
	}
	if m.expectedType != nil && reflect.TypeOf(obj) != m.expectedType {
		return fmt.Errorf("%w: %v%s, want %v", ErrUnexpectedObject, reflect.TypeOf(obj), objectName(obj), m.expectedType)
	}
	if m.expectedGVK != nil {
		if gvk := obj.GetObjectKind().GroupVersionKind(); gvk != *m.expectedGVK {
			return fmt.Errorf("%w: %v%s, want %v", ErrUnexpectedObject, gvk, objectName(obj), *m.expectedGVK)
		}
	}
	return nil
}

// objectName returns " namespace/name" of obj, or "" if it has no metadata,
// for an error message.
func objectName(obj runtime.Object) string {
	md, err := meta.Accessor(obj)
	if err != nil || md.GetName() == "" {
		return ""
	}
	if md.GetNamespace() == "" {
		return " " + md.GetName()
	}
	return " " + md.GetNamespace() + "/" + md.GetName()
}

// inOrder checks a live event's resourceVersion: a bookmark needs one, and
// the stream must not go back in time. A bookmark must not be older than rv,
// the newest the consumer has. A change of obj must be newer than rv or,
// if the consumer tells its stored versions, not older than the object it
// holds under obj's key (an object it does not hold is no older than
// anything). Opaque resourceVersions are not compared.
func (m *machine) inOrder(ev Event, obj runtime.Object, rv string) error {
	if ev.Type == Bookmark && ev.ResourceVersion == "" {
		return ErrBookmarkWithoutResourceVersion
	}
	if ev.Type != Bookmark && m.versions != nil {
		if stored, older := m.versions.OlderThanStored(obj, ev.ResourceVersion); older {
			return fmt.Errorf("%w: %v at resourceVersion %s, the stored object is at %s", ErrStaleEvent, ev.Type, ev.ResourceVersion, stored)
		}
		return nil
	}
	c, ok := compareResourceVersions(ev.ResourceVersion, rv)
	if ok && (c < 0 || c == 0 && ev.Type != Bookmark) {
		return fmt.Errorf("%w: %v at resourceVersion %s, the collection is at %s", ErrStaleEvent, ev.Type, ev.ResourceVersion, rv)
	}
	return nil
}

// dropWithoutObject drops a watch event that has no object.
func (m *machine) dropWithoutObject(ctx context.Context) {
	utilruntime.HandleErrorWithContext(ctx, nil, "Dropped a watch event without an object", "listerwatcher", m.name)
}

// dropUnknown drops an event of a type the watch protocol does not have.
func (m *machine) dropUnknown(ctx context.Context, ev watch.Event) {
	utilruntime.HandleErrorWithContext(ctx, nil, "Dropped a watch event of an unknown type", "listerwatcher", m.name, "type", ev.Type)
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
