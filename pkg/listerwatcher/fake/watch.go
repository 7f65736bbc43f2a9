package fake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// initialBatch is how many initial objects a watch reads per lock.
const initialBatch = 256

// serverWatch is one open WATCH. A pump goroutine sends its initial state
// (read lazily, a batch at a time, at the snapshot resourceVersion), then the
// queued changes, on an unbuffered channel as a client's decoder would.
type serverWatch struct {
	s         *Server
	ctx       context.Context // the caller's, with the watch's timeout
	cancel    context.CancelFunc
	result    chan watch.Event
	stop      chan struct{}
	stopOnce  sync.Once
	done      chan struct{}
	bookmarks bool
	after     uint64     // send no change or bookmark older than it: the requested future rv
	sel       *selection // the request's selectors; nil selects every object
	// Periodic bookmarks: sent every frequency and 2 s before deadline (the
	// server's timeout, zero for none), when newer than from, the
	// resourceVersion the watch started at.
	frequency time.Duration
	deadline  time.Time
	from      uint64

	// Guarded by s.mu.
	initial     bool   // initial state still to send
	snap        uint64 // resourceVersion of the initial state
	cursor      string // last initial key sent
	endBookmark bool   // end the initial state with the annotated bookmark
	queue       []queued
	wake        chan struct{} // signalled when queue grows
}

type queued struct {
	typ  watch.EventType
	v    *version       // a stored version, sent as a deep copy
	prev *version       // for a MODIFIED v, the version it replaced
	obj  runtime.Object // else an object sent as is
	last bool           // end the watch after this event
}

// watch serves a WATCH with the API server's resourceVersion semantics.
func (s *Server) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	drops := s.drops
	s.mu.Unlock()
	if err := s.admit(ctx, "watch", opts); err != nil {
		return nil, err
	}
	sel, err := s.parseSelection(opts)
	if err != nil {
		return nil, err
	}
	sendInitial, match := opts.SendInitialEvents, opts.ResourceVersionMatch
	if s.noWatchList {
		sendInitial, match = nil, ""
	}
	if errs := validateWatch(sendInitial, match); len(errs) > 0 {
		return nil, apierrors.NewInvalid(listGK, "", errs)
	}
	if err := sel.checkFields(); err != nil {
		return nil, err
	}
	var rv uint64
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		if rv, err = parseRV(opts.ResourceVersion); err != nil {
			return nil, err
		}
	}

	// The API server ends the watch after timeoutSeconds by closing the
	// stream (a clean end, no ERROR event). For 0 or unset it picks its
	// --min-request-timeout times a random factor in [1, 2).
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	if timeout == 0 && s.minRequestTimeout > 0 {
		timeout = time.Duration(float64(s.minRequestTimeout) * (1 + rand.Float64()))
	}
	cancel := context.CancelFunc(func() {})
	var deadline time.Time
	if timeout != 0 {
		deadline = time.Now().Add(timeout)
		ctx, cancel = context.WithDeadline(ctx, deadline)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// Close ran while the Fault hook held the request: it has waited
		// for every watch it knew, so this one must not start.
		cancel()
		return nil, ConnectionRefused()
	}
	w := &serverWatch{
		s:         s,
		ctx:       ctx,
		cancel:    cancel,
		result:    make(chan watch.Event),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
		bookmarks: opts.AllowWatchBookmarks,
		sel:       sel,
		frequency: s.bookmarkFrequency,
		deadline:  deadline,
		from:      rv,
	}
	switch {
	case rv > s.rv && sendInitial != nil && *sendInitial:
		// The watch cache waits a few seconds for the resourceVersion a
		// watch list needs, then ends the stream with this error; no need
		// to wait here.
		w.enqueue(queued{typ: watch.Error, obj: statusOf(TooLargeResourceVersion(rv, s.rv)), last: true})
	case rv > s.rv:
		// Any other watch from a resourceVersion not reached yet stays
		// open and sends what comes after it.
		w.after = rv
	case sendInitial != nil && *sendInitial:
		// The state at least as new as rv: the newest.
		w.initial, w.snap, w.endBookmark = true, s.rv, opts.AllowWatchBookmarks
	case sendInitial == nil && rv == 0:
		// Legacy "get state and start at most recent": synthetic ADDED
		// events, no end bookmark.
		w.initial, w.snap = true, s.rv
	case rv == 0:
		// sendInitialEvents=false from "" or "0": changes from now on.
	case rv < s.compacted:
		w.enqueue(queued{typ: watch.Error, obj: statusOf(apierrors.NewResourceExpired(
			fmt.Sprintf("too old resource version: %d (%d)", rv, s.compacted))), last: true})
	default:
		i := sort.Search(len(s.history), func(i int) bool { return s.history[i].v.rv > rv })
		for _, c := range s.history[i:] {
			w.enqueue(queued{typ: c.typ, v: c.v, prev: c.prev})
		}
	}
	if w.initial || rv == 0 {
		// The watch starts from the state at the newest resourceVersion.
		w.from = s.rv
	}
	if s.drops != drops {
		// CloseWatches ran while this watch was being admitted: its
		// connection dropped with the others, and it ends at once.
		w.close()
	} else {
		s.watches[w] = struct{}{}
	}
	s.pumps.Add(1)
	go w.pump()
	return w, nil
}

func validateWatch(sendInitial *bool, match metav1.ResourceVersionMatch) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("resourceVersionMatch")
	if sendInitial != nil && match != metav1.ResourceVersionMatchNotOlderThan {
		errs = append(errs, field.Forbidden(path, fmt.Sprintf("sendInitialEvents requires setting resourceVersionMatch to %s", metav1.ResourceVersionMatchNotOlderThan)))
	}
	if match != "" {
		if sendInitial == nil {
			errs = append(errs, field.Forbidden(path, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
		}
		if match != metav1.ResourceVersionMatchNotOlderThan {
			errs = append(errs, field.NotSupported(path, match, []string{string(metav1.ResourceVersionMatchNotOlderThan)}))
		}
	}
	return errs
}

// ResultChan implements watch.Interface.
func (w *serverWatch) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface. It returns once the watch has ended, so
// no goroutine outlives it.
func (w *serverWatch) Stop() {
	w.close()
	<-w.done
}

func (w *serverWatch) close() { w.stopOnce.Do(func() { close(w.stop) }) }

func (w *serverWatch) closed() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// enqueue adds an event; the caller holds s.mu.
func (w *serverWatch) enqueue(q queued) {
	w.queue = append(w.queue, q)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *serverWatch) pump() {
	defer w.s.pumps.Done()
	defer w.cancel()
	defer close(w.done)
	defer close(w.result)
	defer w.s.forget(w)
	for {
		batch, end := w.s.nextInitial(w)
		for _, v := range batch {
			if !w.sel.matches(v.obj) {
				continue
			}
			if !w.send(watch.Event{Type: watch.Added, Object: v.obj.DeepCopyObject()}) {
				return
			}
		}
		if end {
			break
		}
	}
	bookmarks := newBookmarkTimer(w)
	defer bookmarks.stop()
	for {
		q, ok := w.next(bookmarks)
		if !ok {
			return
		}
		if ev, ok := w.event(q); ok && !w.send(ev) {
			return
		}
		if q.last {
			return
		}
	}
}

// event returns the event q makes for this watch, false for none: a change
// is seen through the watch's selectors as the API server's watch cache and
// etcd3 watchers see it. An object that starts matching comes as ADDED, one
// that stops matching as DELETED with its last matching state at the
// change's resourceVersion.
func (w *serverWatch) event(q queued) (watch.Event, bool) {
	if q.v == nil {
		return watch.Event{Type: q.typ, Object: q.obj}, true
	}
	if w.sel == nil {
		return watch.Event{Type: q.typ, Object: q.v.obj.DeepCopyObject()}, true
	}
	// A deletion's version holds the object's last state.
	now := q.typ != watch.Deleted && w.sel.matches(q.v.obj)
	before := q.typ == watch.Deleted && w.sel.matches(q.v.obj) ||
		q.typ == watch.Modified && q.prev != nil && w.sel.matches(q.prev.obj)
	switch {
	case now && before:
		return watch.Event{Type: watch.Modified, Object: q.v.obj.DeepCopyObject()}, true
	case now:
		return watch.Event{Type: watch.Added, Object: q.v.obj.DeepCopyObject()}, true
	case before && q.typ == watch.Deleted:
		return watch.Event{Type: watch.Deleted, Object: q.v.obj.DeepCopyObject()}, true
	case before:
		last := q.prev.obj.DeepCopyObject()
		m, _ := meta.Accessor(last)
		m.SetResourceVersion(formatRV(q.v.rv))
		return watch.Event{Type: watch.Deleted, Object: last}, true
	}
	return watch.Event{}, false
}

// nextInitial returns the next batch of the watch's initial state; end
// reports that the state is complete (its end bookmark, if any, is queued
// before every change made since the watch began).
func (s *Server) nextInitial(w *serverWatch) (batch []*version, end bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !w.initial {
		return nil, true
	}
	keys := s.sortedKeys()
	i := sort.SearchStrings(keys, w.cursor)
	if i < len(keys) && w.cursor != "" && keys[i] == w.cursor {
		i++
	}
	for ; i < len(keys) && len(batch) < initialBatch; i++ {
		if v := visibleAt(s.heads[keys[i]], w.snap); v != nil {
			batch = append(batch, v)
		}
		w.cursor = keys[i]
	}
	if i < len(keys) {
		return batch, false
	}
	w.initial = false
	if w.endBookmark {
		w.queue = append([]queued{{typ: watch.Bookmark, obj: s.bookmark(w.snap, true)}}, w.queue...)
	}
	return batch, true
}

// next waits for the next queued event, queueing the periodic bookmarks
// meanwhile; false means the watch must end.
func (w *serverWatch) next(bookmarks *bookmarkTimer) (queued, bool) {
	for {
		if w.closed() {
			return queued{}, false
		}
		w.s.mu.Lock()
		if len(w.queue) > 0 {
			q := w.queue[0]
			w.queue[0] = queued{}
			w.queue = w.queue[1:]
			w.s.mu.Unlock()
			return q, true
		}
		w.s.mu.Unlock()
		select {
		case <-w.wake:
		case <-bookmarks.c():
			w.s.periodicBookmark(w)
			bookmarks.reset()
		case <-w.stop:
			return queued{}, false
		case <-w.ctx.Done():
			return queued{}, false
		}
	}
}

// bookmarkTimer schedules a watch's periodic bookmarks as the watch cache
// does: every frequency, and 2 s before the watch's deadline when that comes
// sooner; none once that moment has passed.
type bookmarkTimer struct {
	w     *serverWatch
	timer *time.Timer // nil: no more bookmarks
}

func newBookmarkTimer(w *serverWatch) *bookmarkTimer {
	t := &bookmarkTimer{w: w}
	if w.bookmarks && w.frequency > 0 {
		t.reset()
	}
	return t
}

// reset schedules the next bookmark from now.
func (t *bookmarkTimer) reset() {
	now := time.Now()
	at := now.Add(t.w.frequency)
	if !t.w.deadline.IsZero() {
		if before := t.w.deadline.Add(-2 * time.Second); before.Before(at) {
			at = before
		}
	}
	if at.Before(now) {
		t.stop()
		return
	}
	if t.timer == nil {
		t.timer = time.NewTimer(at.Sub(now))
	} else {
		t.timer.Reset(at.Sub(now))
	}
}

// c returns the channel the next bookmark's time comes on; nil (never) when
// there is none.
func (t *bookmarkTimer) c() <-chan time.Time {
	if t.timer == nil {
		return nil
	}
	return t.timer.C
}

func (t *bookmarkTimer) stop() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}

// periodicBookmark queues a BOOKMARK at the newest resourceVersion when it
// is newer than the one the watch started from; the watch cache sends no
// other (the end bookmark of a streamed list is queued apart).
func (s *Server) periodicBookmark(w *serverWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rv > w.from {
		w.enqueue(queued{typ: watch.Bookmark, obj: s.bookmark(s.rv, false)})
	}
}

func (w *serverWatch) send(ev watch.Event) bool {
	if w.closed() {
		return false
	}
	select {
	case w.result <- ev:
		return true
	case <-w.stop:
		return false
	case <-w.ctx.Done():
		return false
	}
}

func (s *Server) forget(w *serverWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watches, w)
}

// bookmark returns an empty object of the item type carrying only rv, and
// the initial-events-end annotation when end is set.
func (s *Server) bookmark(rv uint64, end bool) runtime.Object {
	obj := reflect.New(s.itemType.Elem()).Interface().(runtime.Object)
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(formatRV(rv))
	if end {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return obj
}

// CloseWatches ends every open watch now, as a dropped connection does:
// no change committed after it reaches them (nor a watch that was being
// opened), an event a client was being handed may still arrive, and the
// rest are lost; clients resume from what they saw.
func (s *Server) CloseWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropWatchesLocked()
}

// dropWatchesLocked closes every open watch and forgets it, so that later
// changes are not queued for it; the caller holds s.mu.
func (s *Server) dropWatchesLocked() {
	s.drops++
	for w := range s.watches {
		w.close()
		delete(s.watches, w)
	}
}

// SendWatchError queues an ERROR event carrying status on every open watch
// and ends each watch after it, as the API server does.
func (s *Server) SendWatchError(status *metav1.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watches {
		w.enqueue(queued{typ: watch.Error, obj: status.DeepCopy(), last: true})
	}
}

// SendBookmark queues a BOOKMARK at the current resourceVersion on every
// open watch that allows bookmarks.
func (s *Server) SendBookmark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watches {
		if w.bookmarks && s.rv >= w.after {
			w.enqueue(queued{typ: watch.Bookmark, obj: s.bookmark(s.rv, false)})
		}
	}
}

// SendWatchEvent queues ev, as is, on every open watch: for events a real
// server would not send, such as an object of another type.
func (s *Server) SendWatchEvent(ev watch.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watches {
		w.enqueue(queued{typ: ev.Type, obj: ev.Object})
	}
}

// OpenWatches returns the number of watches not yet ended.
func (s *Server) OpenWatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches)
}

func statusOf(err apierrors.APIStatus) *metav1.Status {
	st := err.Status()
	return &st
}
