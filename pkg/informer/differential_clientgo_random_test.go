package informer

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
)

// clientGoVariants are the informers of ours TestDifferentialClientGoRandomObjects
// runs beside client-go's: default options, and each strategy with relist
// reuse on and off. Every one has fastBackoff: backoff only times retries.
var clientGoVariants = []struct {
	name string
	opts []Option
}{
	{"default", nil},
	{"ListWatch, reuse", []Option{WithStrategy(ListWatch), WithRelistReuse(true), WithPageSize(4)}},
	{"ListWatch, no reuse", []Option{WithStrategy(ListWatch), WithRelistReuse(false), WithPageSize(4)}},
	{"StreamingList, reuse", []Option{WithStrategy(StreamingList), WithRelistReuse(true)}},
	{"StreamingList, no reuse", []Option{WithStrategy(StreamingList), WithRelistReuse(false)}},
}

// TestDifferentialClientGoRandomObjects runs client-go's
// cache.NewSharedIndexInformer and ours (clientGoVariants) on one fake API
// server, for every kind testobjects.Random makes, through a seeded history
// of creates, updates (of everything, of pointer times, of labels, of
// nothing but the resourceVersion), deletes, deletes and creates under the
// same name (another UID), creates under deleted objects' names, and one
// relist forced by a 410 with creates, updates, deletes and deletes and
// creates under the same name made while the watches were down, followed
// for every other kind by another as soon as every informer listed.
// After every step each of our handlers must have received client-go's
// calls: op, key, resourceVersions, isInInitialList, tombstones (first in
// a relist; see relistOrder for the order of a list's calls), and the same
// objects by reflect.DeepEqual, with no
// normalisation: both informers decode nothing here (the fake server hands
// out deep copies), and the plain store keeps what it was handed. Reads
// (List, ListKeys, GetByKey, ByIndex of every namespace) must return
// client-go's objects.
//
// client-go's reflector waits 0.8 s and more, doubling, before each relist
// (its backoff cannot be set through an informer): one relist per kind, two
// for every other kind (1.6 s and more for the second), the kinds at once.
func TestDifferentialClientGoRandomObjects(t *testing.T) {
	steps := 24
	if testing.Short() {
		steps = 12
	}
	covered := map[string]int{}
	t.Cleanup(func() {
		t.Logf("covered: %v", covered)
		for _, what := range []string{"initial add", "add", "update of labels", "update of other fields", "update of nothing",
			"delete", "relist add", "relist update", "relist update of an unchanged object", "relist delete",
			"add of a deleted key", "relist update to another UID", "back-to-back relists"} {
			if covered[what] == 0 && !t.Failed() {
				t.Errorf("the histories had no %s", what)
			}
		}
	})
	// The kinds run at once, past -parallel (GOMAXPROCS): they mostly wait
	// for client-go's relist. t.Run may be called from several goroutines.
	results := make(chan map[string]int, len(randomKinds))
	var wg sync.WaitGroup
	for k, kind := range randomKinds {
		wg.Go(func() {
			t.Run(reflect.TypeOf(kind.example).Elem().Name(), func(t *testing.T) {
				d := newClientGoDifferential(t, k, kind)
				d.run(steps)
				results <- d.covered
			})
		})
	}
	wg.Wait()
	close(results)
	for c := range results {
		for what, n := range c {
			covered[what] += n
		}
	}
}

// clientGoDifferential is a randomHistory (its server, objects and writes)
// watched by client-go's informer and ours.
type clientGoDifferential struct {
	h        *randomHistory
	theirs   toolscache.SharedIndexInformer
	theirRec *recorder
	ours     []*SharedIndexInformer
	ourRecs  []*recorder
	checked  int
	covered  map[string]int
}

func newClientGoDifferential(t *testing.T, k int, kind randomKind) *clientGoDifferential {
	d := &clientGoDifferential{h: newRandomServer(t, k, kind, int64(k+1)*104729), covered: map[string]int{}}
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	d.theirs = toolscache.NewSharedIndexInformer(d.h.s.ListerWatcher(), kind.example, 0, indexers)
	d.theirRec = newRecorder()
	if _, err := d.theirs.AddEventHandler(d.theirRec); err != nil {
		t.Fatal(err)
	}
	run(t, d.theirs)
	for _, v := range clientGoVariants {
		inf := NewSharedIndexInformerWithOptions(d.h.s.ListerWatcher(), kind.example,
			toolscache.SharedIndexInformerOptions{Indexers: indexers}, append([]Option{WithBackoff(fastBackoff)}, v.opts...)...)
		rec := newRecorder()
		if _, err := inf.AddEventHandler(rec); err != nil {
			t.Fatal(err)
		}
		run(t, inf)
		d.ours, d.ourRecs = append(d.ours, inf), append(d.ourRecs, rec)
	}
	return d
}

// run makes steps steps, one of them (at a seeded place past the first
// quarter) a relist, followed at once by another for every other kind,
// and checks after each.
func (d *clientGoDifferential) run(steps int) {
	h := d.h
	h.expected = len(h.live) // the initial list's adds
	d.check("the initial list", false)
	relistAt := steps/4 + h.rng.IntN(steps-steps/4)
	for step := range steps {
		what := "relist"
		if step == relistAt {
			h.relist(forceRelistHeld)
			if h.index%2 == 1 {
				what = "back-to-back relists"
				h.relistAgain(forceRelistHeld, d.listed)
			}
		} else {
			what = h.write(h.rng.IntN(88))
		}
		d.check(fmt.Sprintf("step %d (%s)", step, what), step == relistAt)
	}
}

// listed waits until every informer has listed at the server's
// resourceVersion.
func (d *clientGoDifferential) listed(when string) {
	waitListed(d.h.t, when, d.h.s.ResourceVersion(), append([]toolscache.SharedIndexInformer{d.theirs}, toSharedIndexInformers(d.ours)...))
}

// check waits until every informer reached the server's resourceVersion
// and its handler received the calls the history caused, and compares our
// handlers' calls since the last check and our reads with client-go's.
func (d *clientGoDifferential) check(when string, relist bool) {
	h, t := d.h, d.h.t
	t.Helper()
	rv := h.s.ResourceVersion()
	recs := append([]*recorder{d.theirRec}, d.ourRecs...)
	for i, rec := range recs {
		inf := d.theirs
		if i > 0 {
			inf = d.ours[i-1]
		}
		deadline := time.Now().Add(20 * time.Second)
		for !inf.HasSynced() || inf.LastSyncResourceVersion() != rv || rec.len() < h.expected {
			if time.Now().After(deadline) {
				t.Fatalf("%s: informer %d is at %q (synced %v) with %d handler calls, want %q and %d calls", when, i,
					inf.LastSyncResourceVersion(), inf.HasSynced(), rec.len(), rv, h.expected)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	// No call more than the history caused, in any informer.
	time.Sleep(time.Millisecond)
	want := d.theirRec.snapshot()
	if len(want) != h.expected {
		t.Fatalf("%s: client-go's handler received %d calls, want %d", when, len(want), h.expected)
	}
	// Each relist's calls apart (back-to-back relists).
	var w []call
	for _, seg := range segments(want[d.checked:], d.checked, h.marks) {
		w = append(w, relistOrder(t, when, "client-go", seg)...)
	}
	identity := func(obj any, _ bool) any { return obj }
	for i, v := range clientGoVariants {
		got := d.ourRecs[i].snapshot()
		if len(got) != len(want) {
			t.Fatalf("%s: %s: the handler received %d calls, client-go's %d", when, v.name, len(got), len(want))
		}
		var g []call
		for _, seg := range segments(got[d.checked:], d.checked, h.marks) {
			g = append(g, relistOrder(t, when, v.name, seg)...)
		}
		for j := range w {
			compareCall(t, when, v.name, w[j], g[j], identity)
		}
		compareReads(t, when, v.name, d.theirs.GetIndexer(), d.ours[i].GetIndexer(), w, func(obj any) any { return obj })
	}
	for _, c := range w {
		d.count(c, relist)
	}
	for what, n := range h.covered {
		d.covered[what] += n
	}
	d.checked, h.marks, h.covered = len(want), nil, map[string]int{}
}

// relistOrder returns a step's calls with their tombstones, which must
// come first, sorted by key, and then the others sorted by key: client-go
// makes a relist's deletes in the map order of its store's keys, and its
// adds and updates in list order from a LIST but in map order from a
// streamed list (its reflector collects the stream in a temporary store
// and hands the store its List()), which it makes by default
// (WatchListClient). A relist's calls are one per key; a write's too, or
// a delete and then an add (the sort is stable).
func relistOrder(t *testing.T, when, name string, calls []call) []call {
	t.Helper()
	n := 0
	for i, c := range calls {
		if c.tombstone {
			if i != n {
				t.Fatalf("%s: %s: the handler received the tombstone of %s after %s %s: a relist's deletes come first", when, name, c.key, calls[i-1].op, calls[i-1].key)
			}
			n++
		}
	}
	out := slices.Clone(calls)
	byKey := func(a, b call) int { return cmp.Compare(a.key, b.key) }
	slices.SortStableFunc(out[:n], byKey)
	slices.SortStableFunc(out[n:], byKey)
	return out
}

// count counts what the history covered, from client-go's calls.
func (d *clientGoDifferential) count(c call, relist bool) {
	if recreated(c, d.h.deleted) {
		d.covered["add of a deleted key"]++
	}
	what := c.op
	switch {
	case c.op == "add" && c.initial:
		what = "initial add"
	case c.op == "delete" && c.tombstone:
		what = "relist delete"
	case c.op == "update" && c.rv == c.oldRV:
		what = "relist update of an unchanged object"
	case c.op == "update" && accessor(c.old.(kruntime.Object)).GetUID() != accessor(c.obj.(kruntime.Object)).GetUID():
		what = "relist update to another UID"
	case c.op == "update" && relist:
		what = "relist update"
	case c.op == "update":
		old, obj := c.old.(kruntime.Object).DeepCopyObject(), c.obj.(kruntime.Object).DeepCopyObject()
		accessor(old).SetResourceVersion("")
		accessor(obj).SetResourceVersion("")
		switch {
		case reflect.DeepEqual(old, obj):
			what = "update of nothing"
		case !reflect.DeepEqual(accessor(old).GetLabels(), accessor(obj).GetLabels()):
			what = "update of labels"
		default:
			what = "update of other fields"
		}
	case relist:
		what = "relist " + c.op
	}
	d.covered[what]++
}
