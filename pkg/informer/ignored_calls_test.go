package informer

import (
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/cache"
)

// A handler made of functions that has none for adds and updates (a
// delete-only handler, as pkg/shard's ObjectKey adds) is handed only
// deletes: an encoded store decodes nothing for the initial list, a resync
// or a relist's adds and updates on its behalf, only the tombstones it is
// given, and the pending gauge drains.
func TestHandlerWithoutAFunctionDecodesNothingForIt(t *testing.T) {
	const n = 50
	s := newServer(t, n)
	m, reg := registeredMetrics(t)
	inf := newInformer(s, 0, WithEncodedStore(), WithMetrics(m))
	run(t, inf)
	waitSynced(t, inf)

	countingDecode, decodes := countingDecoder(inf)
	var deleted []string
	var others atomic.Int64
	for _, h := range []toolscache.ResourceEventHandler{
		toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
			tomb, ok := obj.(toolscache.DeletedFinalStateUnknown)
			if !ok {
				t.Errorf("OnDelete got a %T, want a tombstone", obj)
				return
			}
			if _, err := meta.Accessor(tomb.Obj); err != nil {
				t.Errorf("the tombstone of %s carries a %T, not a decoded object: %v", tomb.Key, tomb.Obj, err)
			}
			deleted = append(deleted, tomb.Key)
		}},
		&toolscache.ResourceEventHandlerDetailedFuncs{DeleteFunc: func(any) { others.Add(1) }},
	} {
		decodes.Store(0)
		deleted = nil
		others.Store(0)
		l := newListener(klog.Background(), inf.cfg.clock, h, false, inf.HasSyncedChecker(), inf.metrics, countingDecode)
		keys, stored := inf.indexer.ListStored()
		// The initial list, a resync, and a relist that deletes two
		// objects, adds one and updates the rest.
		l.add(notification{kind: notifyObjects, keys: keys, objects: stored, isInInitialList: true, countsForSync: true})
		l.add(notification{kind: notifyObjects, keys: keys, objects: stored})
		diff := &cache.Diff{Deleted: []toolscache.DeletedFinalStateUnknown{
			{Key: keys[0], Obj: stored[0]}, {Key: keys[1], Obj: stored[1]},
		}}
		diff.Changes = append(diff.Changes, cache.Change{Key: "new/object", New: stored[2]})
		for i := 2; i < n; i++ {
			diff.Changes = append(diff.Changes, cache.Change{Key: keys[i], Old: stored[i], New: stored[(i+1)%n]})
		}
		l.add(notification{kind: notifyReplace, diff: diff, receiveSyncs: true})
		go l.watchSynced()
		go l.run()
		eventually(t, "the handler's HasSynced", l.HasSynced)
		eventually(t, "the pending gauge to drain", func() bool {
			return gathered(t, reg, "leaninformer_handler_pending_notifications", nil) == 0
		})
		l.stop()
		<-l.ShutdownChan()
		if _, detailed := h.(*toolscache.ResourceEventHandlerDetailedFuncs); detailed {
			if got := others.Load(); got != 2 {
				t.Errorf("%T: %d deletes delivered, want 2", h, got)
			}
		} else if len(deleted) != 2 {
			t.Errorf("%T: deletes delivered %q, want the relist's two", h, deleted)
		}
		if got := decodes.Load(); got != 2 {
			t.Errorf("%T: %d objects decoded, want only the 2 tombstones' (none of %d adds and %d updates it has no function for)", h, got, n+1, 2*n-2)
		}
	}
}
