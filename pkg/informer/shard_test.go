package informer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	toolscache "k8s.io/client-go/tools/cache"

	lwfake "github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
	"github.com/leaninformer/leaninformer/pkg/metrics"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

// shardGroup runs shard members of one controller on a fake clientset.
type shardGroup struct {
	t      *testing.T
	leases coordinationclient.LeasesGetter
	stops  map[string]func()
}

func newShardGroup(t *testing.T) *shardGroup {
	return &shardGroup{t: t, leases: fake.NewClientset().CoordinationV1(), stops: map[string]func(){}}
}

// member returns a member that is not started.
func (g *shardGroup) member(id string) *shard.Member {
	g.t.Helper()
	m, err := shard.New(g.leases, "ns", "ctl", shard.WithIdentity(id), shard.WithLogger(logr.Discard()), shard.WithMetrics(nil),
		shard.WithLeaseDuration(2*time.Second), shard.WithRenewDeadline(time.Second), shard.WithRenewInterval(100*time.Millisecond))
	if err != nil {
		g.t.Fatal(err)
	}
	return m
}

// start runs m until stop(id) or the test's end.
func (g *shardGroup) start(id string, m *shard.Member) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			g.t.Errorf("member %s: %v", id, err)
		}
	}
	g.stops[id] = stop
	g.t.Cleanup(func() { g.stop(id) })
}

func (g *shardGroup) stop(id string) {
	if stop, ok := g.stops[id]; ok {
		delete(g.stops, id)
		stop()
	}
}

// randomUIDServer is a fake API server of n ConfigMaps with random UIDs, as
// a real API server gives them (the fake's own uid-1, uid-2, ... hash
// into one corner of the space).
func randomUIDServer(t *testing.T, n int) *lwfake.Server {
	t.Helper()
	s := lwfake.NewServer(&corev1.ConfigMapList{})
	t.Cleanup(s.Close)
	if err := s.CreateN(n, func(i int) kruntime.Object {
		cm := configMap(fmt.Sprintf("cm-%04d", i))
		cm.UID = uuid.NewUUID()
		return cm
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// inRange is the keys of the server's objects whose UID hash is in r.
func inRange(t *testing.T, s *lwfake.Server, r shard.Range) map[string]bool {
	t.Helper()
	list, err := s.ListerWatcher().List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, cm := range list.(*corev1.ConfigMapList).Items {
		if r.Contains(shard.Hash(string(cm.UID))) {
			out[testNamespace+"/"+cm.Name] = true
		}
	}
	return out
}

func storeKeys(s toolscache.Store) map[string]bool {
	out := map[string]bool{}
	for _, k := range s.ListKeys() {
		out[k] = true
	}
	return out
}

func sameKeys(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// TestShardedInformerFollowsItsMembersRange: an informer built WithShard
// holds the objects of its member's range only; when the range grows (the
// other member stops) and shrinks again (it comes back), it relists with
// the new range: handlers get adds for the objects that joined and
// DeletedFinalStateUnknown deletes for those that left, HasSynced never
// turns false, and SyncStatus says where objects are filtered (here on the
// client: the fake API server ignores shard selectors).
func TestShardedInformerFollowsItsMembersRange(t *testing.T) {
	server := randomUIDServer(t, 400)
	g := newShardGroup(t)
	a, b := g.member("a"), g.member("b")
	g.start("a", a)
	g.start("b", b)
	half := shard.Assign([]string{a.LeaseName(), b.LeaseName()}, shard.DefaultBuckets)
	eventually(t, "the two members to split the space", func() bool {
		return a.Serving().Equal(half[a.LeaseName()]) && b.Serving().Equal(half[b.LeaseName()])
	})

	m := metrics.New()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	inf := NewSharedIndexInformerWithOptions(server.ListerWatcher(), &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{},
		WithShard(a), WithBackoff(fastBackoff), WithMetrics(m))
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	want := inRange(t, server, a.Serving())
	if got := storeKeys(inf.GetStore()); !sameKeys(got, want) {
		t.Fatalf("the store holds %d objects, the range %d", len(got), len(want))
	}
	st := inf.SyncStatus()
	if !st.Shard.Sharded || st.Shard.Filtering != shard.FilteringClient || !st.Shard.Stored.Equal(a.Serving()) || st.Shard.Pending {
		t.Fatalf("sync status: %+v", st.Shard)
	}
	if !strings.Contains(st.String(), "filtered on the client") {
		t.Errorf("SyncStatus.String() = %q", st.String())
	}
	for filtering, want := range map[string]float64{"client": 1, "server": 0} {
		labels := map[string]string{"resource": "configmaps", "filtering": filtering}
		if got := gathered(t, reg, "leaninformer_shard_informers", labels); got != want {
			t.Errorf("leaninformer_shard_informers{filtering=%q} = %v, want %v", filtering, got, want)
		}
	}

	// Watch HasSynced through the range changes.
	unsynced := make(chan struct{}, 1)
	watchCtx, stopWatching := context.WithCancel(context.Background())
	defer stopWatching()
	go func() {
		for watchCtx.Err() == nil {
			if !inf.HasSynced() {
				unsynced <- struct{}{}
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()

	t.Log("b stops: a's range grows to everything")
	rec.reset()
	server.ResetRequests()
	g.stop("b")
	all := inRange(t, server, shard.FullRange())
	eventually(t, "the informer to hold everything", func() bool {
		s := inf.SyncStatus().Shard
		return sameKeys(storeKeys(inf.GetStore()), all) && !s.Pending && s.Stored.Equal(shard.FullRange())
	})
	// The initial list streamed (client-go's default); a range change
	// relists in pages (WithPaginatedRelists).
	for _, r := range server.Requests() {
		if r.Verb == "watch" && r.Options.SendInitialEvents != nil && *r.Options.SendInitialEvents {
			t.Errorf("the range change streamed its relist: %+v, want paginated LISTs", r)
		}
	}
	if lists := countVerb(server.Requests(), "list"); lists == 0 {
		t.Errorf("the range change sent no LIST: %+v", server.Requests())
	}
	eventually(t, "the handler to hear of everything", func() bool { return len(rec.stateCopy()) == len(all) })
	added := map[string]bool{}
	for _, c := range rec.snapshot() {
		if c.op == "add" {
			added[c.key] = true
		}
	}
	for k := range all {
		if !want[k] && !added[k] {
			t.Errorf("no add for %s, which joined the range", k)
		}
	}

	t.Log("b comes back: a's range shrinks")
	rec.reset()
	b2 := g.member("b")
	g.start("b", b2)
	eventually(t, "a to shrink", func() bool { return a.Serving().Equal(half[a.LeaseName()]) })
	eventually(t, "the informer to hold a's half again", func() bool {
		return sameKeys(storeKeys(inf.GetStore()), want) && !inf.SyncStatus().Shard.Pending
	})
	eventually(t, "the handler to hear of a's half", func() bool { return len(rec.stateCopy()) == len(want) })
	deleted := map[string]bool{}
	for _, c := range rec.snapshot() {
		if c.op == "delete" {
			if !c.tombstone {
				t.Errorf("%s left the range with a plain delete, want DeletedFinalStateUnknown", c.key)
			}
			deleted[c.key] = true
		}
	}
	for k := range all {
		if !want[k] && !deleted[k] {
			t.Errorf("no delete for %s, which left the range", k)
		}
	}
	select {
	case <-unsynced:
		t.Error("HasSynced turned false during a range change")
	default:
	}
}

// TestShardedInformerStartsBeforeItsMember: an informer whose member does
// not run yet syncs with the empty range (it must not wait: a
// controller-runtime manager syncs its caches before it starts the member)
// and relists once the member has claimed its range.
func TestShardedInformerStartsBeforeItsMember(t *testing.T) {
	server := randomUIDServer(t, 50)
	g := newShardGroup(t)
	m := g.member("a")
	inf := NewSharedIndexInformerWithOptions(server.ListerWatcher(), &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{},
		WithShard(m), WithMetrics(nil))
	run(t, inf)
	waitSynced(t, inf)
	if n := len(inf.GetStore().ListKeys()); n != 0 {
		t.Fatalf("before its member runs the informer holds %d objects", n)
	}
	if last := server.Requests()[len(server.Requests())-1]; !strings.Contains(last.Options.ShardSelector, "'0x0000000000000001'") {
		t.Errorf("the empty range's request carried %q", last.Options.ShardSelector)
	}
	if m.CachesHold(0) {
		t.Error("the member counts a cache holding nothing as holding hash 0")
	}
	g.start("a", m)
	eventually(t, "the informer to hold everything", func() bool {
		return len(inf.GetStore().ListKeys()) == 50 && inf.SyncStatus().Shard.Stored.Equal(shard.FullRange())
	})
	if !m.CachesHold(0) {
		t.Error("the member does not count the informer's store")
	}
}

func TestShardExclusionsAndValidation(t *testing.T) {
	g := newShardGroup(t)
	m := g.member("a")
	server := randomUIDServer(t, 5)
	inf := NewSharedIndexInformerWithOptions(server.ListerWatcher(), &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{},
		WithShard(m, &corev1.ConfigMap{}), WithMetrics(nil))
	if inf.SyncStatus().Shard.Sharded {
		t.Error("an excluded kind is sharded")
	}
	run(t, inf)
	waitSynced(t, inf) // without waiting for the member, which never runs
	if n := len(inf.GetStore().ListKeys()); n != 5 {
		t.Fatalf("an excluded informer holds %d of 5", n)
	}

	if err := ValidateOptions(WithShard(nil)); err == nil || !strings.Contains(err.Error(), "WithShard: the member is nil") {
		t.Errorf("WithShard(nil): %v", err)
	}
	type noKind struct{ corev1.ConfigMap }
	if err := ValidateOptions(WithShard(m, &noKind{})); err == nil || !strings.Contains(err.Error(), "WithShard: the exclusion") {
		t.Errorf("an exclusion without a kind: %v", err)
	}
	// A kind excluded twice is most likely another kind mistyped; a nil
	// exclusion, typed or not, is no kind at all.
	secretMeta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
	for _, tc := range []struct {
		what   string
		except []kruntime.Object
		want   string
	}{
		{"a kind excluded twice", []kruntime.Object{&corev1.ConfigMap{}, &corev1.Secret{}, &corev1.ConfigMap{}}, "WithShard: exclusions 0 and 2 are both ConfigMap"},
		{"a kind excluded twice, typed and metadata-only", []kruntime.Object{&corev1.Secret{}, secretMeta}, "WithShard: exclusions 0 and 1 are both Secret"},
		{"a nil exclusion", []kruntime.Object{nil}, "WithShard: exclusion 0 is nil"},
		{"a typed nil exclusion", []kruntime.Object{(*corev1.ConfigMap)(nil)}, "WithShard: exclusion 0 is nil"},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: ValidateOptions panicked: %v", tc.what, r)
				}
			}()
			if err := ValidateOptions(WithShard(m, tc.except...)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want an error saying %q", tc.what, err, tc.want)
			}
		}()
	}
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
	if !(&shardConfig{member: m, except: []kruntime.Object{&corev1.Secret{}}}).excludes(meta, defaultScheme) {
		t.Error("a typed exclusion does not match the metadata-only informer of its kind")
	}
}

// TestShardedInformerClusterScoped: a cluster-scoped kind is sharded by
// its objects' UIDs as a namespaced one is.
func TestShardedInformerClusterScoped(t *testing.T) {
	server := lwfake.NewServer(&corev1.NamespaceList{})
	t.Cleanup(server.Close)
	if err := server.CreateN(200, func(i int) kruntime.Object {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%03d", i), UID: uuid.NewUUID()}}
	}); err != nil {
		t.Fatal(err)
	}
	g := newShardGroup(t)
	a, b := g.member("a"), g.member("b")
	g.start("a", a)
	g.start("b", b)
	half := shard.Assign([]string{a.LeaseName(), b.LeaseName()}, shard.DefaultBuckets)
	eventually(t, "the two members to split the space", func() bool {
		return a.Serving().Equal(half[a.LeaseName()]) && b.Serving().Equal(half[b.LeaseName()])
	})
	inf := NewSharedIndexInformerWithOptions(server.ListerWatcher(), &corev1.Namespace{}, toolscache.SharedIndexInformerOptions{},
		WithShard(a), WithMetrics(nil))
	run(t, inf)
	waitSynced(t, inf)
	list, err := server.ListerWatcher().List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, ns := range list.(*corev1.NamespaceList).Items {
		if a.Serving().Contains(shard.Hash(string(ns.UID))) {
			want[ns.Name] = true
		}
	}
	if len(want) == 0 || len(want) == 200 {
		t.Fatalf("%d of 200 namespaces in a's half: the test's UIDs do not split", len(want))
	}
	eventually(t, "the informer to hold a's half", func() bool { return sameKeys(storeKeys(inf.GetStore()), want) })
}

func countVerb(reqs []lwfake.Request, verb string) (n int) {
	for _, r := range reqs {
		if r.Verb == verb {
			n++
		}
	}
	return n
}

// A sharded informer keeps RunWithContext's promise for ListerWatchers
// whose calls ignore their context: the shard's ListerWatcher calls its
// inner one with contexts, so a hung context-less LIST held Run up until it
// returned.
func TestShardedRunReturnsWhileAContextLessListHangs(t *testing.T) {
	server := randomUIDServer(t, 5)
	member := newShardGroup(t).member("a")
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	lw := &toolscache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (kruntime.Object, error) { //nolint:staticcheck // SA1019: the context-less call is under test
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
			return server.ListerWatcher().List(opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) { //nolint:staticcheck // SA1019: the context-less call is under test
			return server.ListerWatcher().Watch(opts)
		},
	}
	inf := NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{},
		WithShard(member), WithMetrics(nil), WithStrategy(ListWatch), WithBackoff(fastBackoff))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { close(release); <-done }()
	<-entered
	cancel()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Error("RunWithContext did not return within 3 s of its context's end while a context-less LIST hung")
	}
}
