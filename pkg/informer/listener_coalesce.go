package informer

import (
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/cache"
)

// foldLocked adds n to a coalescing listener's keyed queue, object by
// object; the caller holds l.mu. Replace and snapshot notifications hold
// the store's values (an encoded store's entries), which stay so in the
// queue and are decoded as they are delivered.
//
// Every initial-list add is one piece of work the handler's HasSynced waits
// for, delivered or cancelled on its own. n itself, when it counts for
// sync, holds HasSynced back while it is expanded (add started it), so that
// a delivery racing the expansion cannot let it turn true half-way.
func (l *listener) foldLocked(n notification) {
	switch n.kind {
	case notifyAdd:
		l.foldOne(coalesceKey(n.newObj), changeAdd, nil, n.newObj, false)
	case notifyUpdate:
		l.foldOne(coalesceKey(n.newObj), changeUpdate, n.oldObj, n.newObj, false)
	case notifyDelete:
		l.foldOne(coalesceKey(n.oldObj), changeDelete, nil, n.oldObj, false)
	case notifyReplace:
		for _, tomb := range n.diff.Deleted {
			l.foldOne(tomb.Key, changeDelete, nil, tomb, false)
		}
		for _, c := range n.diff.Changes {
			switch {
			case c.Old == nil:
				l.foldOne(c.Key, changeAdd, nil, c.New, n.isInInitialList)
			case n.receiveSyncs || !sameResourceVersion(c.Old, c.New):
				l.foldOne(c.Key, changeUpdate, c.Old, c.New, false)
			}
			// else: an unchanged object, which client-go sends only to
			// handlers due for resync.
		}
	case notifyObjects:
		// Folded by the store's keys: an encoded entry is not decoded
		// here, under the informer's changeMu, only as it is delivered.
		for i, stored := range n.objects {
			if n.isInInitialList {
				l.foldOne(n.keys[i], changeAdd, nil, stored, true)
			} else {
				l.foldOne(n.keys[i], changeUpdate, stored, stored, false)
			}
		}
	}
	if n.countsForSync {
		l.syncTracker.Finished()
	}
}

// foldOne folds one change of key into the keyed queue.
func (l *listener) foldOne(key string, kind changeKind, old, obj any, isInInitialList bool) {
	syncs := 0
	if isInInitialList && kind == changeAdd {
		l.syncTracker.Start()
		syncs = 1
	}
	before := l.keyed.len
	folded, cancelledSyncs := l.keyed.fold(key, kind, old, obj, isInInitialList, syncs)
	switch {
	case l.keyed.len > before:
		l.metrics.enqueued(1)
	case l.keyed.len < before: // an add cancelled by its delete
		l.metrics.skipped()
	}
	l.metrics.coalesced(folded)
	for range cancelledSyncs {
		l.syncTracker.Finished()
	}
}

// deliverChange calls the handler for one coalesced change, decoding what
// the store handed out as it is called.
func (d *delivery) deliverChange(c *pendingChange) {
	h := d.l.handler
	ign := ignoredCalls(h)
	switch {
	case c.kind == changeAdd && ign.adds, c.kind == changeUpdate && ign.updates, c.kind == changeDelete && ign.deletes:
		d.l.metrics.skipped()
	case c.kind == changeAdd:
		if obj, ok := d.l.decode.decodeForHandler(c.obj, "OnAdd of "+c.key); ok {
			d.call(func() { h.OnAdd(obj, c.isInInitialList) })
		} else {
			d.l.metrics.skipped()
		}
	case c.kind == changeUpdate:
		if oldObj, newObj, ok := d.decodePair(cache.Change{Key: c.key, Old: c.old, New: c.obj}); ok {
			d.call(func() { h.OnUpdate(oldObj, newObj) })
		} else {
			d.l.metrics.skipped()
		}
	case c.kind == changeDelete:
		obj := c.obj
		ok := true
		if tomb, isTomb := obj.(toolscache.DeletedFinalStateUnknown); isTomb {
			obj, ok = d.l.decode.decodeTombstone(tomb)
		}
		if ok {
			d.call(func() { h.OnDelete(obj) })
		} else {
			d.l.metrics.skipped()
		}
	}
	for range c.syncs {
		d.l.syncTracker.Finished()
	}
}
