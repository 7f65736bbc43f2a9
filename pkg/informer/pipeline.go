package informer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
)

// pipeline applies the listerwatcher's events to the store and queues the
// matching notifications. It runs in the watcher's goroutine, one event at a
// time: a restart page goes straight into the indexer's restart buffer, so at
// most one page is held outside the store.
type pipeline struct {
	s      *SharedIndexInformer
	logger klog.Logger

	transform toolscache.TransformFunc

	// The restart in progress, for its summary log line.
	restartReason   listerwatcher.RestartReason
	restartStrategy listerwatcher.Strategy
	restartStarted  time.Time
	restartPages    int
	restartObjects  int
	restartDropped  int
}

var _ listerwatcher.Consumer = (*pipeline)(nil)

// Handle implements listerwatcher.Consumer.
func (p *pipeline) Handle(ctx context.Context, ev listerwatcher.Event) error {
	start := time.Now()
	err := p.handle(ctx, ev)
	p.s.clientMetrics.processed(time.Since(start), p.s.processor.pending())
	return err
}

func (p *pipeline) handle(ctx context.Context, ev listerwatcher.Event) error {
	switch ev.Type {
	case listerwatcher.RestartStart:
		p.startRestart(ev)
	case listerwatcher.RestartPage:
		p.addPage(ctx, ev.Objects)
	case listerwatcher.RestartDone:
		return p.finishRestart(ev.ResourceVersion)
	case listerwatcher.Added, listerwatcher.Modified:
		p.upsert(ctx, ev.Object)
		p.applied(ev)
	case listerwatcher.Deleted:
		p.remove(ctx, ev.Object)
		p.applied(ev)
	case listerwatcher.Bookmark:
		p.s.indexer.Bookmark(ev.ResourceVersion)
		p.applied(ev)
	default:
		return fmt.Errorf("unknown pipeline event type %v", ev.Type)
	}
	return nil
}

// applied records a live event's resourceVersion.
func (p *pipeline) applied(ev listerwatcher.Event) {
	p.s.setLastSyncResourceVersion(ev.ResourceVersion)
	p.s.metrics.Event(eventNames[ev.Type], ev.ResourceVersion)
	p.s.clientMetrics.setResourceVersion(ev.ResourceVersion)
}

var eventNames = map[listerwatcher.EventType]string{
	listerwatcher.Added:    "added",
	listerwatcher.Modified: "modified",
	listerwatcher.Deleted:  "deleted",
	listerwatcher.Bookmark: "bookmark",
}

func (p *pipeline) startRestart(ev listerwatcher.Event) {
	if p.transform == nil {
		p.s.startedMu.Lock()
		p.transform = p.s.cfg.storeTransform(checkedTransform(p.s.transform))
		p.s.startedMu.Unlock()
	}
	p.s.indexer.StartReplace()
	p.restartReason = ev.Reason
	p.restartStrategy = ev.Strategy
	p.restartStarted = time.Now()
	p.restartPages, p.restartObjects, p.restartDropped = 0, 0, 0
	p.s.metrics.RestartStarted(string(ev.Reason))
}

func (p *pipeline) addPage(ctx context.Context, objs []runtime.Object) {
	p.restartPages++
	dropped := 0
	for i, obj := range objs {
		if _, _, err := p.s.indexer.AddToReplace(obj, p.transform); err != nil {
			dropped++
			utilruntime.HandleErrorWithContext(ctx, err, "Dropping listed object", "type", p.s.objectDescription)
		}
		// Let go of the decoded copy now: relist reuse or the transform may
		// have left it unreferenced, and the rest of the page need not pin it.
		objs[i] = nil
	}
	p.restartObjects += len(objs) - dropped
	p.restartDropped += dropped
	p.s.metrics.Dropped(dropped)
	p.s.metrics.Page(p.restartStrategy.String(), p.restartObjects)
}

func (p *pipeline) finishRestart(rv string) error {
	isInitial := !p.s.HasSynced()
	p.s.blockDeltas.Lock()
	diff, err := p.s.indexer.FinishReplace(rv)
	if err != nil {
		p.s.blockDeltas.Unlock()
		return fmt.Errorf("finishing restart at resourceVersion %q: %w", rv, err)
	}
	// Everything that describes the new store is recorded before handlers
	// hear of it, so that what they see is never ahead of it.
	p.s.setLastSyncResourceVersion(rv)
	p.s.clientMetrics.setResourceVersion(rv)
	p.s.diagSynced()
	d := time.Since(p.restartStarted)
	p.s.metrics.RestartDone(d, len(diff.Changes), diff.Reused)
	p.s.metrics.ResourceVersion(rv)
	for _, c := range diff.Changes {
		p.s.mutationDetector.AddObject(c.New)
	}
	p.s.processor.distributeRestart(diff, isInitial)
	p.s.blockDeltas.Unlock()
	if isInitial {
		close(p.s.synced)
	}

	reuse := 0.0
	if len(diff.Changes) > 0 {
		reuse = float64(diff.Reused) / float64(len(diff.Changes))
	}
	p.logger.V(2).Info("Restart done", "type", p.s.objectDescription, "reason", p.restartReason,
		"strategy", p.restartStrategy, "resourceVersion", rv, "objects", len(diff.Changes),
		"pages", p.restartPages, "reuseRatio", fmt.Sprintf("%.2f", reuse), "dropped", p.restartDropped,
		"deleted", len(diff.Deleted), "duration", d)
	return nil
}

func (p *pipeline) upsert(ctx context.Context, obj runtime.Object) {
	stored, err := p.transformed(obj)
	if err != nil {
		p.s.metrics.Dropped(1)
		utilruntime.HandleErrorWithContext(ctx, err, "Dropping watch event", "type", p.s.objectDescription)
		return
	}
	p.s.blockDeltas.Lock()
	defer p.s.blockDeltas.Unlock()
	old, existed, err := p.s.indexer.Upsert(stored)
	if err != nil {
		p.s.metrics.Dropped(1)
		utilruntime.HandleErrorWithContext(ctx, err, "Unable to store watch event object", "type", p.s.objectDescription)
		return
	}
	if !existed {
		p.s.metrics.AddStoreObjects(1)
	}
	p.s.mutationDetector.AddObject(stored)
	if existed {
		p.s.processor.distribute(notification{kind: notifyUpdate, oldObj: old, newObj: stored}, sameResourceVersion(old, stored))
		return
	}
	p.s.processor.distribute(notification{kind: notifyAdd, newObj: stored}, false)
}

func (p *pipeline) remove(ctx context.Context, obj runtime.Object) {
	deleted, err := p.transformed(obj)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Dropping delete event's object, deleting by key", "type", p.s.objectDescription)
		deleted = obj
	}
	p.s.blockDeltas.Lock()
	defer p.s.blockDeltas.Unlock()
	_, existed, err := p.s.indexer.Remove(deleted)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Unable to delete watch event object from store", "type", p.s.objectDescription)
		return
	}
	if existed {
		p.s.metrics.AddStoreObjects(-1)
	}
	// Like client-go, handlers hear of every delete event, stored or not.
	p.s.processor.distribute(notification{kind: notifyDelete, oldObj: deleted}, false)
}

func (p *pipeline) transformed(obj runtime.Object) (any, error) {
	if p.transform == nil {
		return obj, nil
	}
	out, err := p.transform(obj)
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
