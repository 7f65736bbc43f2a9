package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// poisonTransform marks every object it accepts and fails on those whose
// data says "poison".
func poisonTransform(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, fmt.Errorf("not a ConfigMap: %T", obj)
	}
	if cm.Data["state"] == "poison" {
		return nil, errors.New("poisoned")
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations["transformed"] = "yes"
	return cm, nil
}

// untransformed names the objects among calls that did not go through the
// transform, tombstones' objects included.
func untransformed(calls []call) []string {
	var out []string
	for _, c := range calls {
		for _, obj := range []any{c.obj, c.old} {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Annotations["transformed"] != "yes" {
				out = append(out, c.op+" "+c.key)
			}
		}
	}
	return out
}

// callsFor returns the calls among calls for key k.
func callsFor(calls []call, k string) []call {
	var out []call
	for _, c := range calls {
		if c.key == k {
			out = append(out, c)
		}
	}
	return out
}

// Issue 15, item 4: a delete event whose object the transform fails on.
// client-go drops the event and keeps the object until its next relist,
// which then delivers the delete as a DeletedFinalStateUnknown. Ours
// deletes the stored object at once and delivers that DeletedFinalStateUnknown
// then, carrying the last stored (transformed) object. Neither handler ever
// sees an object that did not go through the transform, and a delete of an
// object never stored reaches neither.
func TestDifferentialTransformFailsOnDelete(t *testing.T) {
	t.Run("plain store", func(t *testing.T) { testTransformFailsOnDelete(t) })
	t.Run("encoded store", func(t *testing.T) { testTransformFailsOnDelete(t, WithEncodedStore()) })
}

func testTransformFailsOnDelete(t *testing.T, opts ...Option) {
	s := newServer(t, 3)
	ours := newInformer(s, 0, opts...)
	theirs := newClientGoInformer(s)
	ourRec, theirRec := newRecorder(), newRecorder()
	for _, inf := range []toolscache.SharedIndexInformer{ours, theirs} {
		if err := inf.SetTransform(poisonTransform); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ours.AddEventHandler(ourRec); err != nil {
		t.Fatal(err)
	}
	if _, err := theirs.AddEventHandler(theirRec); err != nil {
		t.Fatal(err)
	}
	run(t, ours)
	run(t, theirs)
	waitSynced(t, ours, theirs)
	good, _, _ := theirs.GetStore().GetByKey(key("cm-0001"))
	goodRV := rvOf(good)

	mustUpdate(t, s, configMap("cm-0001", "state", "poison")) // dropped by both
	mustDelete(t, s, "cm-0001")                               // its last state is poisoned too
	mustCreate(t, s, configMap("never-stored", "state", "poison"))
	mustDelete(t, s, "never-stored")
	mustCreate(t, s, configMap("marker"))
	eventually(t, "both handlers to get the marker", func() bool {
		_, o := ourRec.stateCopy()[key("marker")]
		_, c := theirRec.stateCopy()[key("marker")]
		return o && c
	})

	if _, ok, _ := theirs.GetStore().GetByKey(key("cm-0001")); !ok {
		t.Fatal("client-go's store lost cm-0001: its delete event should have been dropped")
	}
	if got := callsFor(theirRec.snapshot(), key("cm-0001")); len(got) != 1 || got[0].op != "add" {
		t.Fatalf("client-go's handler got %+v for cm-0001, want only its initial add", got)
	}
	if _, ok, _ := ours.GetStore().GetByKey(key("cm-0001")); ok {
		t.Fatal("our store still holds cm-0001 after its delete event")
	}
	got := callsFor(ourRec.snapshot(), key("cm-0001"))
	if len(got) != 2 || got[1].op != "delete" || !got[1].tombstone || got[1].rv != goodRV {
		t.Fatalf("our handler got %+v for cm-0001, want its add, then a DeletedFinalStateUnknown at its last stored resourceVersion %s", got, goodRV)
	}
	for name, rec := range map[string]*recorder{"ours": ourRec, "client-go": theirRec} {
		if bad := untransformed(rec.snapshot()); len(bad) > 0 {
			t.Errorf("%s: the handler saw untransformed objects: %v", name, bad)
		}
		if c := callsFor(rec.snapshot(), key("never-stored")); len(c) > 0 {
			t.Errorf("%s: the handler heard of an object never stored: %+v", name, c)
		}
	}

	// A relist: client-go's store catches up, and its handler hears of the
	// delete as ours did.
	ourRec.reset()
	theirRec.reset()
	forceRelist(t, s, func() { mustCreate(t, s, configMap("relisted")) })
	eventually(t, "client-go's relist to delete cm-0001", func() bool { return len(callsFor(theirRec.snapshot(), key("cm-0001"))) > 0 })
	if got := callsFor(theirRec.snapshot(), key("cm-0001")); len(got) != 1 || !got[0].tombstone || got[0].rv != goodRV {
		t.Fatalf("client-go's relist delivered %+v for cm-0001, want one DeletedFinalStateUnknown at %s", got, goodRV)
	}
	want := serverState(t, s)
	for name, inf := range map[string]toolscache.SharedIndexInformer{"ours": ours, "client-go": theirs} {
		eventually(t, name+" store to equal the server", func() bool { return equalStates(want, storeState(inf.GetStore())) })
	}
	eventually(t, "both handlers to equal the server", func() bool {
		return equalStates(want, ourRec.stateCopy()) && equalStates(want, theirRec.stateCopy())
	})
	if got := callsFor(ourRec.snapshot(), key("cm-0001")); len(got) != 0 {
		t.Fatalf("our relist delivered %+v for cm-0001, which was already deleted", got)
	}
}

// watchErrors collects what a watch error handler is given.
type watchErrors struct {
	mu   sync.Mutex
	errs []error
}

func (w *watchErrors) handler(_ context.Context, _ *toolscache.Reflector, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, err)
}

func (w *watchErrors) get() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]error(nil), w.errs...)
}

// Issue 15, item 5: a transform that fails on a listed object. In LIST mode
// client-go refuses the whole list, tells its watch error handler and never
// syncs; in streaming mode it drops the object and syncs. Ours drops the
// object and syncs in both modes, and says so: the watch error handler and
// SyncStatus get a DroppedObjectsError naming the object, a log line names
// it, and leaninformer_dropped_objects_total counts it.
func TestDifferentialTransformFailsOnListedObject(t *testing.T) {
	for _, strategy := range strategies {
		t.Run(strategy.String(), func(t *testing.T) {
			s := newServer(t, 3)
			mustUpdate(t, s, configMap("cm-0001", "state", "poison"))
			m := metrics.New()
			reg := prometheus.NewRegistry()
			if err := m.Register(reg); err != nil {
				t.Fatal(err)
			}
			ours := newInformer(s, 0, WithStrategy(strategy), WithMetrics(m))
			lw := s.ListerWatcher()
			lw.WatchListUnsupported = strategy == ListWatch
			theirs := toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil)
			ourErrs, theirErrs := &watchErrors{}, &watchErrors{}
			for inf, errs := range map[toolscache.SharedIndexInformer]*watchErrors{ours: ourErrs, theirs: theirErrs} {
				if err := inf.SetTransform(poisonTransform); err != nil {
					t.Fatal(err)
				}
				if err := inf.SetWatchErrorHandlerWithContext(errs.handler); err != nil {
					t.Fatal(err)
				}
			}
			logs := runLogged(t, ours)
			run(t, theirs)

			waitSynced(t, ours)
			if got := storeState(ours.GetStore()); len(got) != 2 || got[key("cm-0001")] != "" {
				t.Fatalf("our store holds %v, want the two objects the transform accepted", got)
			}
			eventually(t, "our watch error handler", func() bool { return len(ourErrs.get()) > 0 })
			var dropped *DroppedObjectsError
			if errs := ourErrs.get(); len(errs) != 1 || !errors.As(errs[0], &dropped) || dropped.First != key("cm-0001") || dropped.Count != 1 {
				t.Fatalf("our watch error handler got %v, want one DroppedObjectsError naming %s", errs, key("cm-0001"))
			}
			if st := ours.SyncStatus(); st.Dropped != dropped || !strings.Contains(st.String(), key("cm-0001")) {
				t.Fatalf("SyncStatus %q (Dropped %v), want the handler's DroppedObjectsError", st, st.Dropped)
			}
			expectLog(t, logs, "Dropping listed object", key("cm-0001"), "poisoned")
			if n := gathered(t, reg, "leaninformer_dropped_objects_total", map[string]string{"resource": "configmaps"}); n != 1 {
				t.Fatalf("leaninformer_dropped_objects_total = %v, want 1", n)
			}

			if strategy == StreamingList {
				waitSynced(t, theirs)
				if got := storeState(theirs.GetStore()); !equalStates(got, storeState(ours.GetStore())) {
					t.Fatalf("client-go's streaming store holds %v, ours %v: both should drop cm-0001", got, storeState(ours.GetStore()))
				}
			} else {
				// client-go retries the list and fails it every time: two
				// reports prove it retried, and it has not synced.
				eventually(t, "client-go's watch error handler, twice", func() bool { return len(theirErrs.get()) >= 2 })
				if theirs.HasSynced() {
					t.Fatal("client-go's informer synced a list its transform refused")
				}
				if err := theirErrs.get()[0]; !strings.Contains(err.Error(), "poisoned") {
					t.Fatalf("client-go's watch error handler got %v, want the transform's error", err)
				}
			}

			// Once the object is repaired, the next complete list has it:
			// both informers hold the server's objects (client-go's LIST
			// mode syncs at its next retry), and ours no longer reports the
			// drop.
			forceRelist(t, s, func() { mustUpdate(t, s, configMap("cm-0001", "state", "repaired")) })
			want := serverState(t, s)
			for name, inf := range map[string]toolscache.SharedIndexInformer{"ours": ours, "client-go": theirs} {
				eventually(t, name+" store to hold the repaired object", func() bool { return equalStates(want, storeState(inf.GetStore())) })
			}
			waitSynced(t, theirs)
			if st := ours.SyncStatus(); st.Dropped != nil || st.String() != "synced" {
				t.Fatalf("SyncStatus %q (Dropped %v) after a complete list, want plain synced", st, st.Dropped)
			}
			reports := 0
			for _, err := range ourErrs.get() {
				if errors.As(err, &dropped) {
					reports++
				}
			}
			if reports != 1 {
				t.Fatalf("our watch error handler got %d DroppedObjectsErrors, want only the first list's", reports)
			}
		})
	}
}
