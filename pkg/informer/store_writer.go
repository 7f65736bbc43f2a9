package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
)

// storeWriter is the consumer of the watcher's events: it applies each to
// the store and queues the matching notifications. It runs in the watcher's
// goroutine, one event at a time: a restart page goes straight into the
// indexer's replace buffer, so at most one page is held outside the store.
type storeWriter struct {
	indexer   *cache.Indexer
	processor *processor
	metrics   *metricsBridge
	mutations toolscache.MutationDetector
	// encoded: the indexer keeps objects encoded (WithEncodedStore).
	encoded bool
	// setReadKind gives a live delete's object the kind an encoded
	// store's reads carry under NewCacheWith (nil: no such kind).
	setReadKind func(obj any)
	// transform is applied to every object before it is stored (the user's,
	// then interning); nil for none. It never returns nil without an error.
	transform toolscache.TransformFunc
	// changeMu is held across each store change and the queueing of its
	// notifications (the informer's changeMu: see there).
	changeMu *sync.Mutex
	// commit records that the store is at rv, before any handler hears of
	// the change; listed: a complete list was swapped in.
	commit func(rv string, listed bool)
	// restartPending: the watcher gave the watch up for a relist.
	restartPending func()
	// synced is closed once the first complete list is stored and its
	// notifications are queued.
	synced chan<- struct{}
	// reportDropped tells of a complete list stored without some of its
	// objects, once it is stored.
	reportDropped func(context.Context, *DroppedObjectsError)
	// consistency checks streamed lists when client-go's detector is on.
	consistency consistencyCheck

	clock       clock.PassiveClock
	logger      klog.Logger
	description string // of the objects, for logs

	// State, owned by the watcher's goroutine.
	listed  bool         // the first complete list has been swapped in
	restart restartStats // the restart in progress
}

var (
	_ listerwatcher.Consumer        = (*storeWriter)(nil)
	_ listerwatcher.StoredVersions  = (*storeWriter)(nil)
	_ listerwatcher.RestartNotifier = (*storeWriter)(nil)
)

// RestartPending implements listerwatcher.RestartNotifier: resyncs stop
// until the relist is stored.
func (w *storeWriter) RestartPending() { w.restartPending() }

// OlderThanStored implements listerwatcher.StoredVersions: the watcher
// then finds a change stale only if it is older than the object stored
// under its key, which client-go's fake clientset (one resourceVersion per
// object, kept through updates) never sends.
func (w *storeWriter) OlderThanStored(obj runtime.Object, rv string) (string, bool) {
	return w.indexer.OlderThanStored(obj, rv)
}

// restartStats describes the restart in progress, for its metrics and its
// summary log line.
type restartStats struct {
	reason                  listerwatcher.RestartReason
	strategy                listerwatcher.Strategy
	started                 time.Time
	pages, objects, dropped int
	// firstDropped names the first object dropped and firstDropErr says why.
	firstDropped string
	firstDropErr error
}

// newStoreWriter builds the consumer that Run hands the watcher; transform
// is the user's, as SetTransform left it.
func (s *SharedIndexInformer) newStoreWriter(logger klog.Logger, transform toolscache.TransformFunc) *storeWriter {
	storeTransform := s.cfg.storeTransform(checkedTransform(transform))
	setReadKind := s.cfg.readKindSetter()
	return &storeWriter{
		indexer:        s.indexer,
		processor:      s.processor,
		metrics:        s.metrics,
		mutations:      s.mutationDetector,
		encoded:        s.cfg.encoded,
		setReadKind:    setReadKind,
		transform:      storeTransform,
		changeMu:       &s.changeMu,
		commit:         s.commit,
		restartPending: s.resyncs.pending,
		synced:         s.synced,
		reportDropped:  s.reportDropped,
		consistency:    consistencyCheck{name: s.reflector.Name(), list: s.list, transform: readAs(storeTransform, setReadKind)},
		clock:          s.cfg.clock,
		logger:         logger,
		description:    s.objectDescription,
	}
}

// Handle implements listerwatcher.Consumer.
func (w *storeWriter) Handle(ctx context.Context, ev listerwatcher.Event) error {
	return w.metrics.handle(func() error { return w.handle(ctx, ev) })
}

func (w *storeWriter) handle(ctx context.Context, ev listerwatcher.Event) error {
	switch ev.Type {
	case listerwatcher.RestartStart:
		w.startReplace(ev)
		return nil
	case listerwatcher.RestartPage:
		w.addPage(ctx, ev.Objects)
		return nil
	case listerwatcher.RestartDone:
		return w.finishReplace(ctx, ev.ResourceVersion)
	}
	// stored: the store recorded the event's resourceVersion.
	var stored bool
	switch ev.Type {
	case listerwatcher.Added, listerwatcher.Modified:
		stored = w.upsert(ctx, ev.Object, ev.ResourceVersion)
	case listerwatcher.Deleted:
		stored = w.remove(ctx, ev.Object, ev.ResourceVersion)
	case listerwatcher.Bookmark:
		w.indexer.Bookmark(ev.ResourceVersion)
		w.commit(ev.ResourceVersion, false)
		stored = true
	default:
		return fmt.Errorf("unknown watcher event type %v", ev.Type)
	}
	w.metrics.applied(ev.Type, ev.ResourceVersion, stored) // live events only
	return nil
}

func (w *storeWriter) startReplace(ev listerwatcher.Event) {
	w.indexer.StartReplace()
	w.restart = restartStats{reason: ev.Reason, strategy: ev.Strategy, started: w.clock.Now()}
	w.metrics.restartStarted(ev.Reason)
}

func (w *storeWriter) addPage(ctx context.Context, objs []runtime.Object) {
	w.restart.pages++
	dropped := 0
	for i, obj := range objs {
		if _, _, err := w.indexer.AddToReplace(obj, w.transform); err != nil {
			dropped++
			name := objectName(obj)
			if w.restart.dropped+dropped == 1 {
				w.restart.firstDropped, w.restart.firstDropErr = name, err
			}
			utilruntime.HandleErrorWithContext(ctx, err, "Dropping listed object", "type", w.description, "object", name)
		}
		// Let go of the decoded copy now: relist reuse or the transform may
		// have left it unreferenced, and the rest of the page need not pin it.
		objs[i] = nil
	}
	w.restart.objects += len(objs) - dropped
	w.restart.dropped += dropped
	w.metrics.restartPage(w.restart.strategy, w.restart.objects, dropped)
}

func (w *storeWriter) finishReplace(ctx context.Context, rv string) error {
	first := !w.listed
	diff, d, err := w.swapIn(ctx, rv, first)
	if err != nil {
		return err
	}
	if first {
		// Only now: a handler's HasSynced must not turn true before its
		// share of the first list is queued.
		w.listed = true
		close(w.synced)
	}

	reuse := 0.0
	if len(diff.Changes) > 0 {
		reuse = float64(diff.Reused) / float64(len(diff.Changes))
	}
	w.logger.V(2).Info("Restart done", "type", w.description, "reason", w.restart.reason,
		"strategy", w.restart.strategy, "resourceVersion", rv, "objects", len(diff.Changes),
		"pages", w.restart.pages, "reuseRatio", fmt.Sprintf("%.2f", reuse), "dropped", w.restart.dropped,
		"deleted", len(diff.Deleted), "duration", d)
	if w.restart.dropped > 0 {
		w.reportDropped(ctx, &DroppedObjectsError{
			Type:            w.description,
			ResourceVersion: rv,
			Count:           w.restart.dropped,
			First:           w.restart.firstDropped,
			Err:             w.restart.firstDropErr,
		})
	}
	return nil
}

// swapIn makes the restart's buffer the store at rv and queues its
// notifications, under changeMu, and returns the diff and how long the
// restart took. The lock is released by a defer: a panic on the way (the
// consistency detector's, by design) must not leave it held for the
// restart that follows.
func (w *storeWriter) swapIn(ctx context.Context, rv string, first bool) (*cache.Diff, time.Duration, error) {
	w.changeMu.Lock()
	defer w.changeMu.Unlock()
	diff, err := w.indexer.FinishReplace(rv)
	if err != nil {
		return nil, 0, fmt.Errorf("finishing restart at resourceVersion %q: %w", rv, err)
	}
	if w.restart.strategy == listerwatcher.StreamingList {
		// Before anything describes the new store, as client-go checks
		// before its Replace. It holds changeMu across a LIST: a cost
		// only paid in CI, where the detector is on.
		w.consistency.streamed(ctx, rv, w.indexer.List)
	}
	// Everything that describes the new store is recorded before handlers
	// hear of it, so that what they see is never ahead of it.
	w.commit(rv, true)
	d := w.clock.Since(w.restart.started)
	w.metrics.restartDone(d, len(diff.Changes), diff.Reused, rv)
	for _, c := range diff.Changes {
		w.mutations.AddObject(c.New)
	}
	w.processor.distributeReplace(diff, first)
	return diff, d, nil
}

// upsert applies an add or update event at resourceVersion rv. Like every
// live change, it commits rv once the store holds the change and before
// handlers hear of it, so that a handler never sees LastSyncResourceVersion
// older than its event. It reports whether the store took the event (and
// so its resourceVersion).
func (w *storeWriter) upsert(ctx context.Context, obj runtime.Object, rv string) bool {
	stored, err := w.transformed(obj)
	if err != nil {
		w.commit(rv, false)
		w.metrics.dropped(1)
		utilruntime.HandleErrorWithContext(ctx, err, "Dropping watch event", "type", w.description)
		return false
	}
	w.changeMu.Lock()
	defer w.changeMu.Unlock()
	kept, old, existed, err := w.indexer.UpsertStored(stored)
	w.commit(rv, false)
	if err != nil {
		w.metrics.dropped(1)
		utilruntime.HandleErrorWithContext(ctx, err, "Unable to store watch event object", "type", w.description)
		return false
	}
	w.mutations.AddObject(stored)
	if !existed {
		w.metrics.storeChanged(1) // stored, whether or not handlers hear of it
	}
	sync := existed && sameResourceVersion(old, stored)
	newObj, oldObj, err := w.notified(kept, old, existed)
	if err != nil {
		// Only a broken codec fails; the store has the new object.
		utilruntime.HandleErrorWithContext(ctx, err, "Dropping a notification", "type", w.description, "object", objectName(obj))
		return true
	}
	if existed {
		w.processor.distribute(notification{kind: notifyUpdate, oldObj: oldObj, newObj: newObj}, sync)
		return true
	}
	w.processor.distribute(notification{kind: notifyAdd, newObj: newObj}, false)
	return true
}

// notified returns the objects an upsert's notification carries, from what
// the store holds now (kept) and held before (old): for a plain store the
// stored objects; for an encoded store both decoded once, for every
// handler, so that handlers get objects of the same form as every read
// (see WithEncodedStore), but an object the codec refused is the stored
// one, as every other notification hands it out (not a read's copy).
func (w *storeWriter) notified(kept, old any, existed bool) (newObj, oldObj any, err error) {
	if !w.encoded {
		return kept, old, nil
	}
	if newObj, err = w.indexer.Decode(kept); err != nil {
		return nil, nil, err
	}
	if existed {
		if oldObj, err = w.indexer.Decode(old); err != nil {
			return nil, nil, err
		}
	}
	return newObj, oldObj, nil
}

// remove applies a delete event at resourceVersion rv, committing rv as
// upsert does, and reports whether the store took it.
func (w *storeWriter) remove(ctx context.Context, obj runtime.Object, rv string) bool {
	deleted, err := w.transformed(obj)
	if err != nil {
		return w.removeUntransformed(ctx, obj, rv, err)
	}
	w.changeMu.Lock()
	defer w.changeMu.Unlock()
	_, existed, err := w.indexer.Remove(deleted)
	w.commit(rv, false)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Unable to delete watch event object from store", "type", w.description)
		return false
	}
	if existed {
		w.metrics.storeChanged(-1)
	}
	if w.setReadKind != nil {
		// The watch's object, not one decoded from the store: without its
		// kind, a delete would be the only notification that lacks it.
		w.setReadKind(deleted)
	}
	// Like client-go, handlers hear of every delete event, stored or not.
	w.processor.distribute(notification{kind: notifyDelete, oldObj: deleted}, false)
	return true
}

// removeUntransformed applies a delete event whose object the transform
// failed on (transformErr). Handlers must only ever see transformed objects,
// and the object is gone from the server: client-go drops the event and
// keeps the object until its next relist; here it leaves the store at once
// and handlers get OnDelete(DeletedFinalStateUnknown) carrying its last
// stored, transformed state, as a relist that found it gone would give them.
// A delete of a key that is not stored is dropped: there is nothing to tell.
// Like remove, it reports whether the store took the event.
func (w *storeWriter) removeUntransformed(ctx context.Context, obj runtime.Object, rv string, transformErr error) bool {
	w.metrics.dropped(1)
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		w.commit(rv, false)
		utilruntime.HandleErrorWithContext(ctx, err, "Unable to delete watch event object from store", "type", w.description)
		return false
	}
	var existed bool
	var decodeErr error
	func() {
		w.changeMu.Lock()
		defer w.changeMu.Unlock() // a panicking handler queue must not leave it held
		var old any
		old, existed, err = w.indexer.Remove(obj)
		w.commit(rv, false)
		if err == nil && existed {
			w.metrics.storeChanged(-1)
			// An encoded store hands back its entry: handlers get objects.
			if old, decodeErr = w.indexer.Decode(old); decodeErr == nil {
				w.processor.distribute(notification{kind: notifyDelete, oldObj: toolscache.DeletedFinalStateUnknown{Key: key, Obj: old}}, false)
			}
		}
	}()
	switch {
	case err != nil:
		utilruntime.HandleErrorWithContext(ctx, err, "Unable to delete watch event object from store", "type", w.description, "object", key)
	case decodeErr != nil:
		// Only a broken codec fails; the object has left the store.
		utilruntime.HandleErrorWithContext(ctx, decodeErr, "Dropping a notification", "type", w.description, "object", key)
	case existed:
		utilruntime.HandleErrorWithContext(ctx, transformErr, "Transform failed on a delete event: deleting the stored object, handlers get it as DeletedFinalStateUnknown", "type", w.description, "object", key)
	default:
		utilruntime.HandleErrorWithContext(ctx, transformErr, "Transform failed on a delete event of an object not stored: dropping the event", "type", w.description, "object", key)
	}
	return err == nil
}

func (w *storeWriter) transformed(obj runtime.Object) (any, error) {
	if w.transform == nil {
		return obj, nil
	}
	out, err := w.transform(obj)
	if err != nil {
		return nil, fmt.Errorf("transforming: %w", err)
	}
	return out, nil
}

// checkedTransform wraps the user's transform so that a nil result is an
// error instead of a nil stored under some key.
func checkedTransform(t toolscache.TransformFunc) toolscache.TransformFunc {
	if t == nil {
		return nil
	}
	return func(obj any) (any, error) {
		out, err := t(obj)
		if err != nil {
			return nil, err
		}
		if out == nil {
			return nil, errTransformReturnedNil
		}
		return out, nil
	}
}

var errTransformReturnedNil = errors.New("transform returned nil")
