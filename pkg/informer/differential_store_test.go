package informer

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgofeatures "k8s.io/client-go/features"
	clientgofeaturestesting "k8s.io/client-go/features/testing"
	toolscache "k8s.io/client-go/tools/cache"
)

// GetController().LastSyncResourceVersion follows client-go's
// InformerResourceVersion feature gate (on by default): the informer's
// resourceVersion when on, "" when off, before and after Run. The store's
// LastStoreSyncResourceVersion follows the list and the watch either way.
func TestDifferentialControllerResourceVersion(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(fmt.Sprintf("InformerResourceVersion=%v", enabled), func(t *testing.T) {
			clientgofeaturestesting.SetFeatureDuringTest(t, clientgofeatures.InformerResourceVersion, enabled)
			s := newServer(t, 3)
			ours := newInformer(s, 0)
			theirs := newClientGoInformer(s)
			infs := map[string]toolscache.SharedIndexInformer{"ours": ours, "client-go": theirs}
			for name, inf := range infs {
				if rv := inf.GetController().LastSyncResourceVersion(); rv != "" {
					t.Fatalf("%s: the controller reports resourceVersion %q before Run", name, rv)
				}
			}
			run(t, ours)
			run(t, theirs)
			waitSynced(t, ours, theirs)
			mustCreate(t, s, configMap("x"))
			want := s.ResourceVersion()
			for name, inf := range infs {
				eventually(t, name+" to reach the server's resourceVersion", func() bool { return inf.LastSyncResourceVersion() == want })
				wantController := ""
				if enabled {
					wantController = want
				}
				if rv := inf.GetController().LastSyncResourceVersion(); rv != wantController {
					t.Fatalf("%s: the controller reports resourceVersion %q, want %q", name, rv, wantController)
				}
				if rv := inf.GetStore().LastStoreSyncResourceVersion(); rv != want {
					t.Fatalf("%s: the store reports resourceVersion %q, want %q", name, rv, want)
				}
			}
		})
	}
}

// storeOp is one call a user makes on an informer's store directly.
type storeOp struct {
	name string
	do   func(toolscache.Store) error
}

func rvConfigMap(name, rv string) *corev1.ConfigMap {
	cm := configMap(name)
	cm.ResourceVersion = rv
	return cm
}

// The cache.Store methods called directly on GetStore() of informers that
// never run (no ListerWatcher to speak of): every call leaves both stores
// with the same contents, index and LastStoreSyncResourceVersion and
// returns the same error, no handler hears of any of it, and neither
// informer counts as synced or reports a resourceVersion.
func TestDifferentialStoreMethodsWithoutRun(t *testing.T) {
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	ours := NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0, indexers)
	theirs := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0, indexers)
	ourRec, theirRec := newRecorder(), newRecorder()
	if _, err := ours.AddEventHandler(ourRec); err != nil {
		t.Fatal(err)
	}
	if _, err := theirs.AddEventHandler(theirRec); err != nil {
		t.Fatal(err)
	}
	ops := []storeOp{
		{"Add a", func(s toolscache.Store) error { return s.Add(rvConfigMap("a", "1")) }},
		{"Add b", func(s toolscache.Store) error { return s.Add(rvConfigMap("b", "2")) }},
		{"Update a", func(s toolscache.Store) error { return s.Update(rvConfigMap("a", "3")) }},
		{"Delete b", func(s toolscache.Store) error { return s.Delete(rvConfigMap("b", "4")) }},
		{"Delete missing", func(s toolscache.Store) error { return s.Delete(rvConfigMap("missing", "5")) }},
		{"Add keyless", func(s toolscache.Store) error { return s.Add(&keyless{}) }},
		{"Bookmark", func(s toolscache.Store) error { s.Bookmark("10"); return nil }},
		{"Replace", func(s toolscache.Store) error {
			return s.Replace([]any{rvConfigMap("c", "6"), rvConfigMap("a", "7")}, "8")
		}},
		{"Resync", func(s toolscache.Store) error { return s.Resync() }},
		{"Add without resourceVersion", func(s toolscache.Store) error { return s.Add(rvConfigMap("d", "")) }},
	}
	for _, op := range ops {
		ourErr, theirErr := op.do(ours.GetStore()), op.do(theirs.GetStore())
		if (ourErr == nil) != (theirErr == nil) {
			t.Fatalf("%s: ours returned %v, client-go's %v", op.name, ourErr, theirErr)
		}
		o, c := ours.GetStore(), theirs.GetStore()
		if !equalStates(storeState(o), storeState(c)) {
			t.Fatalf("%s: stores differ: %s", op.name, diffStates(storeState(c), storeState(o)))
		}
		if orv, crv := o.LastStoreSyncResourceVersion(), c.LastStoreSyncResourceVersion(); orv != crv {
			t.Fatalf("%s: LastStoreSyncResourceVersion is %q, client-go's %q", op.name, orv, crv)
		}
		ok, _ := ours.GetIndexer().IndexKeys(toolscache.NamespaceIndex, testNamespace)
		ck, _ := theirs.GetIndexer().IndexKeys(toolscache.NamespaceIndex, testNamespace)
		slices.Sort(ok)
		slices.Sort(ck)
		if !slices.Equal(ok, ck) {
			t.Fatalf("%s: the namespace index holds %v, client-go's %v", op.name, ok, ck)
		}
	}
	for name, inf := range map[string]toolscache.SharedIndexInformer{"ours": ours, "client-go": theirs} {
		if inf.HasSynced() || inf.LastSyncResourceVersion() != "" || inf.GetController().LastSyncResourceVersion() != "" {
			t.Errorf("%s: synced %v at %q after direct store calls, want unsynced at \"\"", name, inf.HasSynced(), inf.LastSyncResourceVersion())
		}
	}
	if n, m := ourRec.len(), theirRec.len(); n != 0 || m != 0 {
		t.Fatalf("handlers heard of direct store calls: ours %d calls, client-go's %d", n, m)
	}
}

// Objects written straight into a running informer's store are what the
// next watch event and relist start from, in both informers: a direct
// update is the old object of the next watch update, and an object the
// server lacks is deleted by the next relist with a DeletedFinalStateUnknown.
func TestDifferentialStoreWritesWhileRunning(t *testing.T) {
	s := newServer(t, 3)
	ours := newInformer(s, 0)
	theirs := newClientGoInformer(s)
	ourRec, theirRec := newRecorder(), newRecorder()
	if _, err := ours.AddEventHandler(ourRec); err != nil {
		t.Fatal(err)
	}
	if _, err := theirs.AddEventHandler(theirRec); err != nil {
		t.Fatal(err)
	}
	run(t, ours)
	run(t, theirs)
	waitSynced(t, ours, theirs)
	eventually(t, "the initial lists", func() bool { return ourRec.len() == 3 && theirRec.len() == 3 })
	ourRec.reset()
	theirRec.reset()

	for _, inf := range []toolscache.SharedIndexInformer{ours, theirs} {
		if err := inf.GetStore().Update(rvConfigMap("cm-0000", "999")); err != nil {
			t.Fatal(err)
		}
		if err := inf.GetStore().Add(rvConfigMap("ghost", "998")); err != nil {
			t.Fatal(err)
		}
	}
	mustUpdate(t, s, configMap("cm-0000", "k", "v"))
	forceRelist(t, s, func() { mustCreate(t, s, configMap("relisted")) })
	eventually(t, "both handlers to hear of the ghost's delete", func() bool {
		return len(callsFor(ourRec.snapshot(), key("ghost"))) > 0 && len(callsFor(theirRec.snapshot(), key("ghost"))) > 0
	})
	for name, rec := range map[string]*recorder{"ours": ourRec, "client-go": theirRec} {
		update := callsFor(rec.snapshot(), key("cm-0000"))
		if len(update) == 0 || update[0].op != "update" || update[0].oldRV != "999" {
			t.Errorf("%s: the watch update of cm-0000 is %+v, want it to start from the direct write at 999", name, update)
		}
		ghost := callsFor(rec.snapshot(), key("ghost"))
		if len(ghost) != 1 || !ghost[0].tombstone || ghost[0].rv != "998" {
			t.Errorf("%s: the relist told the handler %+v of the ghost, want one DeletedFinalStateUnknown at 998", name, ghost)
		}
	}
}

// client-go's store resourceVersion metric is set by its store, so it
// follows direct writes to GetStore() too; ours is set by the informer's
// list and watch only (a documented difference).
func TestDifferentialStoreMetricIgnoresDirectWrites(t *testing.T) {
	options := func(name string) (toolscache.SharedIndexInformerOptions, *fakeProvider) {
		n, err := toolscache.NewInformerName(t.Name() + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Release)
		p := &fakeProvider{}
		return toolscache.SharedIndexInformerOptions{
			Identifier:              n.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}),
			InformerMetricsProvider: p,
		}, p
	}
	ourOpts, ourMetrics := options("ours")
	theirOpts, theirMetrics := options("client-go")
	ours := NewSharedIndexInformerWithOptions(&toolscache.ListWatch{}, &corev1.ConfigMap{}, ourOpts, WithMetrics(nil))
	theirs := toolscache.NewSharedIndexInformerWithOptions(&toolscache.ListWatch{}, &corev1.ConfigMap{}, theirOpts)
	ours.GetStore().Bookmark("42")
	theirs.GetStore().Bookmark("42")
	if v, n := theirMetrics.rv.get(); n != 1 || v != 42 {
		t.Fatalf("client-go's store resourceVersion gauge is %v (set %d times), want 42", v, n)
	}
	if _, n := ourMetrics.rv.get(); n != 0 {
		t.Fatalf("our store resourceVersion gauge was set %d times by a direct Bookmark, want never", n)
	}
}

// A caller that writes into an object the store holds breaks the store's
// contract. client-go's relist replaces the object by the listed copy,
// undoing the write; relist reuse keeps the stored object when the listed
// one has its resourceVersion, write included (docs/compatibility.md, relist
// reuse). Without reuse the relist undoes the write, as client-go's.
func TestDifferentialRelistReuseKeepsACallersWrite(t *testing.T) {
	s := newServer(t, 3)
	informers := map[string]toolscache.SharedIndexInformer{
		"ours, reuse":    newInformer(s, 0),
		"ours, no reuse": newInformer(s, 0, WithRelistReuse(false)),
		"client-go":      newClientGoInformer(s),
	}
	for _, inf := range informers {
		run(t, inf)
		waitSynced(t, inf)
		obj, _, _ := inf.GetStore().GetByKey(key("cm-0000"))
		obj.(*corev1.ConfigMap).Data["written"] = "by a caller" // into the stored object
	}
	forceRelist(t, s, func() { mustCreate(t, s, configMap("new")) })
	for name, inf := range informers {
		eventually(t, name+" to relist", func() bool { _, ok, _ := inf.GetStore().GetByKey(key("new")); return ok })
		obj, _, _ := inf.GetStore().GetByKey(key("cm-0000"))
		_, kept := obj.(*corev1.ConfigMap).Data["written"]
		if want := name == "ours, reuse"; kept != want {
			t.Errorf("%s: after the relist the caller's write is stored: %v, want %v", name, kept, want)
		}
	}
}
