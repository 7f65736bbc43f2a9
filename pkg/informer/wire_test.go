package informer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// Bad input from the wire that the fake server can send: an object of
// another kind, a bookmark without a resourceVersion, a watch that goes back
// in time. (A LIST page or watch event that does not decode needs a real
// decoder: test/envtest's "bad input from the wire".) Each must show in
// SyncStatus, in leaninformer_failures_total and in a log line, and leave
// the store as it was until the informer has recovered.

// heldRelistLW holds every LIST after the first until released, so that a
// test can look at the informer between a failure and the relist that
// clears SyncStatus.
type heldRelistLW struct {
	*fake.ListerWatcher
	lists   atomic.Int32
	release chan struct{}
}

func newHeldRelistLW(s *fake.Server) *heldRelistLW {
	return &heldRelistLW{ListerWatcher: s.ListerWatcher(), release: make(chan struct{})}
}

func (lw *heldRelistLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *heldRelistLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if lw.lists.Add(1) > 1 {
		select {
		case <-lw.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return lw.ListerWatcher.ListWithContext(ctx, opts)
}

// wireInformer is an informer of the fake server's ConfigMaps through lw,
// recording into its own metrics, with a handler, running and synced.
type wireInformer struct {
	inf  *SharedIndexInformer
	rec  *tolerantRecorder
	reg  *prometheus.Registry
	logs *logSink
}

func startWireInformer(t *testing.T, s *fake.Server, lw toolscache.ListerWatcher) *wireInformer {
	t.Helper()
	m := metrics.New()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	inf := NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{},
		WithStrategy(ListWatch), WithBackoff(fastBackoff), WithMetrics(m))
	rec := newTolerantRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	logs := runLogged(t, inf)
	waitSynced(t, inf)
	waitConverged(t, s, inf, rec)
	eventually(t, "an open watch", func() bool { return s.OpenWatches() > 0 })
	return &wireInformer{inf: inf, rec: rec, reg: reg, logs: logs}
}

// failures returns leaninformer_failures_total for cause.
func (w *wireInformer) failures(t *testing.T, cause listerwatcher.Cause) float64 {
	t.Helper()
	return gathered(t, w.reg, "leaninformer_failures_total", map[string]string{"cause": cause.String()})
}

// expectFailure waits until SyncStatus reports target with cause's
// description, then checks the metric and a log line holding logged.
func (w *wireInformer) expectFailure(t *testing.T, target error, cause listerwatcher.Cause, logged ...string) {
	t.Helper()
	eventually(t, "SyncStatus to report "+target.Error(), func() bool {
		return errors.Is(w.inf.SyncStatus().LastError, target)
	})
	if st := w.inf.SyncStatus(); st.Reason != cause.Description() || st.Failures < 1 {
		t.Errorf("SyncStatus reason %q after %d failures, want %q", st.Reason, st.Failures, cause.Description())
	}
	if got := w.failures(t, cause); got < 1 {
		t.Errorf("leaninformer_failures_total{cause=%q} = %v, want at least 1", cause, got)
	}
	expectLog(t, w.logs, logged...)
}

// informerLists counts the first LIST pages the informer sent (the test's
// fresh LISTs, serverState's, have no limit).
func informerLists(s *fake.Server) int {
	n := 0
	for _, req := range s.Requests() {
		if req.Verb == "list" && req.Options.Limit > 0 && req.Options.Continue == "" {
			n++
		}
	}
	return n
}

// An object of another kind on the watch is not stored and not dropped
// silently: the watch ends with ErrUnexpectedObject, told to the watch error
// handler (client-go's default logs "Failed to watch"), and the informer
// relists from the last resourceVersion, so a change the bad event stood for
// is not lost. Until the relist the store stays as it was.
func TestWireObjectOfAnotherKindRelists(t *testing.T) {
	s := newServer(t, 5)
	lw := newHeldRelistLW(s)
	w := startWireInformer(t, s, lw)
	before := storeState(w.inf.GetStore())

	s.SendWatchEvent(watch.Event{Type: watch.Modified, Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "cm-0001", ResourceVersion: "999999"}}})
	w.expectFailure(t, listerwatcher.ErrUnexpectedObject, listerwatcher.CauseUnexpectedObject,
		"Failed to watch", "unexpected type or kind", "*v1.Secret", "want *v1.ConfigMap")
	eventually(t, "the relist to be sent", func() bool { return lw.lists.Load() > 1 })
	mustUpdate(t, s, configMap("cm-0001", "changed", "while the informer relists"))
	if got := storeState(w.inf.GetStore()); !equalStates(before, got) {
		t.Fatalf("store changed before the relist:\n%s", diffStates(before, got))
	}

	close(lw.release)
	waitConverged(t, s, w.inf, w.rec)
	if _, _, deletes := w.rec.snapshot(); deletes != 0 {
		t.Errorf("handler got %d deletes, want none", deletes)
	}
	if st := w.inf.SyncStatus(); st.LastError != nil {
		t.Errorf("SyncStatus after the relist: %v, want no error", st.LastError)
	}
}

// A bookmark without a resourceVersion would make the next watch start from
// "" and replay the collection (client-go takes it). The watch ends with
// ErrBookmarkWithoutResourceVersion and the informer watches again from the
// last resourceVersion, without a relist: nothing is lost, so SyncStatus
// keeps the error.
func TestWireBookmarkWithoutResourceVersionWatchesOn(t *testing.T) {
	s := newServer(t, 5)
	w := startWireInformer(t, s, s.ListerWatcher())
	mustUpdate(t, s, configMap("cm-0002", "before", "the bookmark"))
	waitConverged(t, s, w.inf, w.rec)
	rv := w.inf.LastSyncResourceVersion()
	s.ResetRequests()

	s.SendWatchEvent(watch.Event{Type: watch.Bookmark, Object: &corev1.ConfigMap{}})
	w.expectFailure(t, listerwatcher.ErrBookmarkWithoutResourceVersion, listerwatcher.CauseBookmarkWithoutResourceVersion,
		"watch ended with error", "bookmark without a resourceVersion", "watch again from the last rv")
	if got := w.inf.LastSyncResourceVersion(); got != rv {
		t.Errorf("LastSyncResourceVersion %q after the bookmark, want %q", got, rv)
	}
	eventually(t, "the next watch", func() bool { return len(s.Requests()) > 0 })
	if req := s.Requests()[0]; req.Verb != "watch" || req.Options.ResourceVersion != rv {
		t.Errorf("next request %s from %q, want a watch from %q", req.Verb, req.Options.ResourceVersion, rv)
	}

	mustUpdate(t, s, configMap("cm-0003", "after", "the bookmark"))
	waitConverged(t, s, w.inf, w.rec)
	if got := informerLists(s); got != 0 {
		t.Errorf("%d relists after the bookmark, want none", got)
	}
	if !errors.Is(w.inf.SyncStatus().LastError, listerwatcher.ErrBookmarkWithoutResourceVersion) {
		t.Errorf("SyncStatus %v, want it to keep the bookmark's error", w.inf.SyncStatus().LastError)
	}
}

// A watch that sends an event older than the collection's resourceVersion
// (client-go applies it) must not undo newer state: the watch ends with
// ErrStaleEvent and the informer relists from the last resourceVersion.
// Until then the store keeps the newer object, and no handler sees the old
// one.
func TestWireEventOlderThanTheListRelists(t *testing.T) {
	s := newServer(t, 5)
	lw := newHeldRelistLW(s)
	w := startWireInformer(t, s, lw)
	newer := mustUpdate(t, s, configMap("cm-0001", "state", "newer")).(*corev1.ConfigMap)
	waitConverged(t, s, w.inf, w.rec)
	before := storeState(w.inf.GetStore())

	stale := newer.DeepCopy()
	stale.ResourceVersion = "1" // the fake server's first write
	stale.Data = map[string]string{"state": "stale"}
	s.SendWatchEvent(watch.Event{Type: watch.Modified, Object: stale})
	w.expectFailure(t, listerwatcher.ErrStaleEvent, listerwatcher.CauseStaleEvent,
		"watch ended with error", "older than what the consumer has", "Modified at resourceVersion 1, the stored object is at", "relist from the last rv")
	eventually(t, "the relist to be sent", func() bool { return lw.lists.Load() > 1 })
	if got := storeState(w.inf.GetStore()); !equalStates(before, got) {
		t.Fatalf("store changed by the stale event:\n%s", diffStates(before, got))
	}

	close(lw.release)
	waitConverged(t, s, w.inf, w.rec)
	if got, _, deletes := w.rec.snapshot(); got[key("cm-0001")] != rvOf(newer) || deletes != 0 {
		t.Errorf("handler holds cm-0001 at %q with %d deletes, want %q and none", got[key("cm-0001")], deletes, rvOf(newer))
	}
}
