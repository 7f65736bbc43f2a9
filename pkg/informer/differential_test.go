package informer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// The differential tests run client-go's informer and ours side by side on
// the same fake API server and compare what their stores and handlers end up
// with.

func newClientGoInformer(s *fake.Server) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(s.ListerWatcher(), &corev1.ConfigMap{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
}

// notificationSet is a handler's calls as a sorted list of comparable lines.
func notificationSet(calls []call) []string {
	out := make([]string, 0, len(calls))
	for _, c := range calls {
		out = append(out, fmt.Sprintf("%s %s rv=%s old=%s initial=%v tombstone=%v", c.op, c.key, c.rv, c.oldRV, c.initial, c.tombstone))
	}
	sort.Strings(out)
	return out
}

func TestDifferentialRelistNotifications(t *testing.T) {
	for _, strategy := range strategies {
		t.Run(strategy.String(), func(t *testing.T) {
			s := newServer(t, 40)
			ours := newInformer(s, 0, WithStrategy(strategy))
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
			eventually(t, "initial lists", func() bool { return ourRec.len() == 40 && theirRec.len() == 40 })
			if o, c := notificationSet(ourRec.snapshot()), notificationSet(theirRec.snapshot()); fmt.Sprint(o) != fmt.Sprint(c) {
				t.Fatalf("initial list notifications differ:\nours:     %v\nclient-go: %v", o, c)
			}

			ourRec.reset()
			theirRec.reset()
			forceRelist(t, s, func() {
				for i := range 5 {
					mustDelete(t, s, fmt.Sprintf("cm-%04d", i))
				}
				for i := 5; i < 10; i++ {
					mustUpdate(t, s, configMap(fmt.Sprintf("cm-%04d", i), "changed", "yes"))
				}
				for i := range 5 {
					mustCreate(t, s, configMap(fmt.Sprintf("new-%d", i)))
				}
			})
			// 5 deletes + 40 objects in the new list.
			eventually(t, "both informers' relist notifications", func() bool { return ourRec.len() == 45 && theirRec.len() == 45 })
			if o, c := notificationSet(ourRec.snapshot()), notificationSet(theirRec.snapshot()); fmt.Sprint(o) != fmt.Sprint(c) {
				t.Fatalf("relist notifications differ:\nours:      %v\nclient-go: %v", o, c)
			}
			// client-go notifies every delete of a relist before its adds and updates; so do we.
			for _, rec := range []*recorder{ourRec, theirRec} {
				for i, c := range rec.snapshot() {
					if (c.op == "delete") != (i < 5) {
						t.Fatalf("call %d is %s: deletes must come first", i, c.op)
					}
				}
			}
		})
	}
}

// TestDifferentialRandomHistory drives a seeded random history of writes,
// dropped watches, bookmarks, failing lists and 410 relists through both
// informers and checks that both converge to the server's state, and that a
// handler rebuilding the store from its notifications ends equal to it.
func TestDifferentialRandomHistory(t *testing.T) {
	seeds := []uint64{1, 2}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			s := newServer(t, 30)
			ours := newInformer(s, 0)
			encoded := newInformer(s, 0, WithEncodedStore())
			theirs := newClientGoInformer(s)
			ourRec, encRec, theirRec := newRecorder(), newRecorder(), newRecorder()
			for inf, rec := range map[toolscache.SharedIndexInformer]*recorder{ours: ourRec, encoded: encRec, theirs: theirRec} {
				if _, err := inf.AddEventHandler(rec); err != nil {
					t.Fatal(err)
				}
			}
			run(t, ours)
			run(t, encoded)
			run(t, theirs)
			waitSynced(t, ours, encoded, theirs)

			// names holds the live objects' names; picks are seeded, so a seed
			// replays the same history of writes.
			names := make([]string, 0, 64)
			for i := range 30 {
				names = append(names, fmt.Sprintf("cm-%04d", i))
			}
			pick := func() string { return names[rng.IntN(len(names))] }
			remove := func() string {
				i := rng.IntN(len(names))
				name := names[i]
				names[i] = names[len(names)-1]
				names = names[:len(names)-1]
				return name
			}
			next := 0
			for step := range 400 {
				switch r := rng.IntN(100); {
				case r < 35 || len(names) < 5:
					name := fmt.Sprintf("gen-%d", next)
					next++
					mustCreate(t, s, configMap(name))
					names = append(names, name)
				case r < 70:
					mustUpdate(t, s, configMap(pick(), "step", fmt.Sprint(step)))
				case r < 90:
					mustDelete(t, s, remove())
				case r < 94:
					s.CloseWatches()
				case r < 97:
					s.SendBookmark()
				case r < 98:
					var failures atomic.Int32
					failures.Store(2)
					s.SetFault(func(_ context.Context, req fake.Request) error {
						if req.Verb == "list" && failures.Add(-1) >= 0 {
							return fmt.Errorf("injected list failure")
						}
						return nil
					})
					s.SendWatchError(gone())
				default:
					forceRelist(t, s, func() {
						for range 3 {
							mustDelete(t, s, remove())
						}
						mustUpdate(t, s, configMap(pick(), "relist", fmt.Sprint(step)))
					})
				}
				if rng.IntN(10) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
			s.SetFault(nil)
			want := serverState(t, s)
			for name, inf := range map[string]toolscache.SharedIndexInformer{"ours": ours, "ours encoded": encoded, "client-go": theirs} {
				eventually(t, name+" store to converge", func() bool { return equalStates(want, storeState(inf.GetStore())) })
			}
			eventually(t, "our handler to converge", func() bool { return equalStates(want, ourRec.stateCopy()) })
			eventually(t, "our encoded store's handler to converge", func() bool { return equalStates(want, encRec.stateCopy()) })
			eventually(t, "client-go's handler to converge", func() bool { return equalStates(want, theirRec.stateCopy()) })
		})
	}
}
