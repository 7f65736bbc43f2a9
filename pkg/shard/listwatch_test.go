package shard

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	lwfake "github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

func idleMember(t *testing.T) *Member {
	t.Helper()
	m, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithLogger(logr.Discard()), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func configMapServer(t *testing.T, n int) *lwfake.Server {
	t.Helper()
	s := lwfake.NewServer(&corev1.ConfigMapList{})
	t.Cleanup(s.Close)
	if err := s.CreateN(n, func(i int) runtime.Object {
		// Random UIDs, as the API server's: the fake's own (uid-1, uid-2,
		// ...) differ in their last bytes only, which FNV-1a's high bits
		// barely notice.
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%03d", i), UID: uuid.NewUUID()}}
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestListerWatcherFiltersOnTheClient runs the wrapper on a server that
// ignores shard selectors (the fake, like an API server without the gate):
// lists and watches hold only the range, and Filtering says client.
func TestListerWatcherFiltersOnTheClient(t *testing.T) {
	server := configMapServer(t, 300)
	var reports []Filtering
	lw := NewListerWatcher(server.ListerWatcher(), idleMember(t), func(f Filtering, _ string) { reports = append(reports, f) })
	lower := NewRange(0, 1<<63)
	lw.SetRange(lower)

	obj, err := lw.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := obj.(*corev1.ConfigMapList).Items
	if len(items) == 0 || len(items) == 300 {
		t.Fatalf("listed %d of 300", len(items))
	}
	for _, cm := range items {
		if !lower.Contains(Hash(string(cm.UID))) {
			t.Fatalf("%s is outside the range", cm.Name)
		}
	}
	if lw.Filtering() != FilteringClient || len(reports) != 1 {
		t.Fatalf("filtering %q, reports %v", lw.Filtering(), reports)
	}
	if got := server.Requests()[len(server.Requests())-1].Options.ShardSelector; got != lower.Selector(KeyUID) {
		t.Fatalf("the LIST carried the selector %q", got)
	}

	w, err := lw.Watch(metav1.ListOptions{ResourceVersion: obj.(*corev1.ConfigMapList).ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var in string
	for i := 300; in == ""; i++ {
		created, err := server.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%03d", i), UID: uuid.NewUUID()}})
		if err != nil {
			t.Fatal(err)
		}
		if cm := created.(*corev1.ConfigMap); lower.Contains(Hash(string(cm.UID))) {
			in = cm.Name
		}
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != in {
			t.Fatalf("first watch event %s %s, want the add of %s (the objects created before it are outside the range)", ev.Type, ev.Object.(*corev1.ConfigMap).Name, in)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}

	lw.SetRange(Range{})
	obj, err = lw.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(obj.(*corev1.ConfigMapList).Items); n != 0 {
		t.Fatalf("the empty range lists %d objects", n)
	}
	if got := server.Requests()[len(server.Requests())-1].Options.ShardSelector; got != nothing(KeyUID) {
		t.Fatalf("the empty range's LIST carried %q", got)
	}
}

// echoingLW is a server that applies shard selectors: it lists and
// watches only the range (from a fake server's objects), and its lists echo
// the selector if echo is set.
type echoingLW struct {
	inner *lwfake.ListerWatcher
	r     Range
	echo  bool
}

func (e *echoingLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := e.inner.List(opts)
	if err != nil {
		return nil, err
	}
	list := obj.(*corev1.ConfigMapList)
	kept := list.Items[:0]
	for _, cm := range list.Items {
		if e.r.Contains(Hash(string(cm.UID))) {
			kept = append(kept, cm)
		}
	}
	list.Items = kept
	if e.echo {
		list.ShardInfo = &metav1.ShardInfo{Selector: opts.ShardSelector}
	}
	return list, nil
}

func (e *echoingLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	w, err := e.inner.Watch(opts)
	if err != nil {
		return nil, err
	}
	// Unfiltered, the initial events outside the range would tell the
	// ListerWatcher that the server does not filter, racing the probe.
	return newFilterWatch(w, func(ev watch.Event) bool {
		m, err := meta.Accessor(ev.Object)
		return ev.Type == watch.Bookmark || ev.Type == watch.Error || err != nil || e.r.Contains(Hash(string(m.GetUID())))
	}), nil
}

func TestListerWatcherTellsServerFiltering(t *testing.T) {
	server := configMapServer(t, 100)
	upper := NewRange(1<<63, 0)
	for _, tc := range []struct {
		echo bool
		want Filtering
	}{{true, FilteringServer}, {false, FilteringClient}} {
		lw := NewListerWatcher(&echoingLW{inner: server.ListerWatcher(), r: upper, echo: tc.echo}, idleMember(t), nil)
		lw.SetRange(upper)
		if _, err := lw.List(metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		if lw.Filtering() != tc.want {
			t.Errorf("echo %v: filtering %q, want %q", tc.echo, lw.Filtering(), tc.want)
		}
	}

	// A streaming list cannot tell: a one-object LIST before it does.
	lw := NewListerWatcher(&echoingLW{inner: server.ListerWatcher(), r: upper, echo: true}, idleMember(t), nil)
	lw.SetRange(upper)
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if lw.Filtering() != FilteringServer {
		t.Errorf("streaming: filtering %q", lw.Filtering())
	}
	var _ toolscache.ListerWatcherWithContext = lw
}
