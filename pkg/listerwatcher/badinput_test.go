package listerwatcher

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2/ktesting"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// Bad input the watcher must survive with a clear error or log. Already
// covered elsewhere: a nil ListerWatcher (TestNewRejectsNilListerWatcher),
// objects of another type and events of an unknown type
// (TestEventsOfAnotherTypeAreDropped), an ERROR event without a Status
// (TestOtherWatchErrorsRelist).

// keyless is an object without metadata.
type keyless struct{ metav1.TypeMeta }

func (k *keyless) DeepCopyObject() runtime.Object { c := *k; return &c }

// Live events without an object, or whose object has no metadata (so no
// resourceVersion and no key), are dropped with an error; the watch goes on.
func TestLiveEventsWithoutObjectOrMetadataAreDropped(t *testing.T) {
	dropped := capturedErrors(t)
	h, srv := live(t) // no expected type: nothing else would drop them
	srv.SendWatchEvent(watch.Event{Type: watch.Added, Object: nil})
	srv.SendWatchEvent(watch.Event{Type: watch.Modified, Object: &keyless{}})
	srv.SendWatchEvent(watch.Event{Type: watch.Bookmark, Object: &keyless{}})
	if _, err := srv.Delete("ns", "cm-00000"); err != nil {
		t.Fatal(err)
	}
	if ev := h.nextOf(Deleted); ev.Object.(*corev1.ConfigMap).Name != "cm-00000" {
		t.Errorf("got %v, want the deletion of cm-00000", ev.Object)
	}
	for _, want := range []string{"without an object", "no metadata", "no metadata"} {
		select {
		case msg := <-dropped:
			if !strings.Contains(msg, want) {
				t.Errorf("dropped with %q, want %q", msg, want)
			}
		case <-time.After(guard):
			t.Fatalf("no error for the event dropped for %q", want)
		}
	}
}

// noResourceVersionLW answers every LIST without a resourceVersion.
type noResourceVersionLW struct{ *fake.ListerWatcher }

func (lw noResourceVersionLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw noResourceVersionLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := lw.ListerWatcher.ListWithContext(ctx, opts)
	if err == nil {
		obj.(*corev1.ConfigMapList).ResourceVersion = ""
	}
	return obj, err
}

// A LIST without a resourceVersion ends its restart at "" and, as in
// client-go's reflector, the watch starts from "": the server replays the
// collection as ADDED events, then the changes, so a consumer loses nothing.
// The ADDED events a watch from "" begins with replay the collection in key
// order, not resourceVersion order: they are neither checked against one
// another nor taken as the collection's version (client-go's reflector does
// not propagate theirs either), so that a watch that ends among them starts
// from "" again instead of skipping what it had not replayed yet.
func TestWatchFromTheStartReplaysInAnyOrder(t *testing.T) {
	srv := newServer(t, 3) // cm-00000 .. cm-00002 at resourceVersions 1 .. 3
	cm := configMap(0).(*corev1.ConfigMap)
	cm.Data["index"] = "updated"
	if _, err := srv.Update(cm); err != nil { // cm-00000 at 4: replayed first, newest
		t.Fatal(err)
	}
	h := start(t, srv, noResourceVersionLW{srv.ListerWatcher()}, WithStrategy(ListWatch))
	h.restart()
	for round := range 2 {
		if opts := h.watchStarted(); opts.ResourceVersion != "" {
			t.Fatalf("round %d: watch from %q, want \"\"", round, opts.ResourceVersion)
		}
		for i := range 3 {
			select {
			case err := <-h.errs:
				t.Fatalf("round %d, replayed event %d: %v", round, i, err)
			case ev := <-h.events:
				if ev.Type != Added || ev.ResourceVersion != "" {
					t.Fatalf("round %d, replayed event %d: %v at %q, want Added without resourceVersion", round, i, ev.Type, ev.ResourceVersion)
				}
			case <-time.After(guard):
				t.Fatalf("round %d: no replayed event %d", round, i)
			}
		}
		if round == 0 {
			srv.CloseWatches() // among the replay, as far as the watcher knows
		}
	}
	if _, err := srv.Delete("ns", "cm-00001"); err != nil {
		t.Fatal(err)
	}
	if ev := h.nextOf(Deleted); ev.ResourceVersion != srv.ResourceVersion() {
		t.Fatalf("deletion at %q, want %q", ev.ResourceVersion, srv.ResourceVersion())
	}
}

// zeroResourceVersionLW answers every LIST at resourceVersion "0".
type zeroResourceVersionLW struct{ *fake.ListerWatcher }

func (lw zeroResourceVersionLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw zeroResourceVersionLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := lw.ListerWatcher.ListWithContext(ctx, opts)
	if err == nil {
		obj.(*corev1.ConfigMapList).ResourceVersion = "0"
	}
	return obj, err
}

// A watch from "0" begins, like one from "", with ADDED events replaying the
// collection in key order: they are not checked against one another either.
func TestWatchFromZeroReplaysInAnyOrder(t *testing.T) {
	srv := newServer(t, 3)
	cm := configMap(0).(*corev1.ConfigMap)
	cm.Data["index"] = "updated"
	if _, err := srv.Update(cm); err != nil { // cm-00000 replayed first, newest
		t.Fatal(err)
	}
	h := start(t, srv, zeroResourceVersionLW{srv.ListerWatcher()}, WithStrategy(ListWatch))
	if _, _, done := h.restart(); done.ResourceVersion != "0" {
		t.Fatalf("restart done at %q, want \"0\"", done.ResourceVersion)
	}
	if opts := h.watchStarted(); opts.ResourceVersion != "0" {
		t.Fatalf("watch from %q, want \"0\"", opts.ResourceVersion)
	}
	for i := range 3 {
		select {
		case err := <-h.errs:
			t.Fatalf("replayed event %d: %v", i, err)
		case ev := <-h.events:
			if ev.Type != Added || ev.ResourceVersion != "" {
				t.Fatalf("replayed event %d: %v at %q, want Added without resourceVersion", i, ev.Type, ev.ResourceVersion)
			}
		case <-time.After(guard):
			t.Fatalf("no replayed event %d", i)
		}
	}
	if _, err := srv.Delete("ns", "cm-00001"); err != nil {
		t.Fatal(err)
	}
	if ev := h.nextOf(Deleted); ev.ResourceVersion != srv.ResourceVersion() {
		t.Fatalf("deletion at %q, want %q", ev.ResourceVersion, srv.ResourceVersion())
	}
}

func TestListWithoutResourceVersionWatchesFromTheStart(t *testing.T) {
	srv := newServer(t, 3)
	h := start(t, srv, noResourceVersionLW{srv.ListerWatcher()}, WithStrategy(ListWatch), WithPageSize(2))
	_, names, done := h.restart()
	if len(names) != 3 || done.ResourceVersion != "" {
		t.Fatalf("restart of %v at %q, want the 3 objects at \"\"", names, done.ResourceVersion)
	}
	if opts := h.watchStarted(); opts.ResourceVersion != "" {
		t.Fatalf("watch from %q, want \"\"", opts.ResourceVersion)
	}
	replayed := map[string]bool{}
	for range 3 {
		replayed[h.nextOf(Added).Object.(*corev1.ConfigMap).Name] = true
	}
	if len(replayed) != 3 {
		t.Fatalf("replayed %v, want the 3 objects", replayed)
	}
	if _, err := srv.Delete("ns", "cm-00001"); err != nil {
		t.Fatal(err)
	}
	if ev := h.nextOf(Deleted); ev.ResourceVersion != srv.ResourceVersion() {
		t.Fatalf("deletion at %q, want %q", ev.ResourceVersion, srv.ResourceVersion())
	}
}

// versionedConsumer keeps the resourceVersion of every object it was
// handed, by name, and tells them to the watcher (StoredVersions).
type versionedConsumer struct {
	mu     sync.Mutex
	stored map[string]string
	events chan Event
}

func (c *versionedConsumer) Handle(_ context.Context, ev Event) error {
	c.mu.Lock()
	for _, o := range append(slices.Clone(ev.Objects), ev.Object) {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			c.stored[cm.Name] = cm.ResourceVersion
		}
	}
	c.mu.Unlock()
	c.events <- ev
	return nil
}

func (c *versionedConsumer) storedRV(obj runtime.Object) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stored[obj.(*corev1.ConfigMap).Name]
}

func (c *versionedConsumer) OlderThanStored(obj runtime.Object, rv string) (string, bool) {
	stored := c.storedRV(obj)
	cmp, ok := compareResourceVersions(rv, stored)
	return stored, ok && cmp < 0
}

// A consumer that tells its stored versions has changes judged against the
// object it holds, not the collection: a change older than that object is
// stale, one older than the collection but not than its object (a fake
// clientset's, whose objects keep their own resourceVersions) is applied.
func TestStaleChangesAgainstStoredVersions(t *testing.T) {
	srv := newServer(t, 3) // cm-00000 .. cm-00002 at 1 .. 3
	errs := make(chan error, 10)
	w, err := New(srv.ListerWatcher(), WithStrategy(ListWatch), WithBackoff(testBackoff),
		WithErrorHandler(func(_ context.Context, err error) { errs <- err }))
	if err != nil {
		t.Fatal(err)
	}
	c := &versionedConsumer{stored: map[string]string{}, events: make(chan Event, 100)}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx, c)
	}()
	defer func() { cancel(); <-done }()
	next := func(typ EventType) Event {
		t.Helper()
		for {
			select {
			case ev := <-c.events:
				if ev.Type == typ {
					return ev
				}
			case err := <-errs:
				t.Fatalf("reported %v, waiting for %v", err, typ)
			case <-time.After(guard):
				t.Fatalf("no %v", typ)
			}
		}
	}
	next(RestartDone)
	for srv.OpenWatches() == 0 {
		time.Sleep(time.Millisecond)
	}

	first, second := c.storedRV(configMap(0)), c.storedRV(configMap(1))
	if first >= second || second >= srv.ResourceVersion() {
		t.Fatalf("cm-00000 at %s, cm-00001 at %s, the collection at %s: want them in that order", first, second, srv.ResourceVersion())
	}
	same := configMap(0).(*corev1.ConfigMap)
	same.ResourceVersion, same.Data["index"] = first, "changed" // older than the collection, as old as its object
	srv.SendWatchEvent(watch.Event{Type: watch.Modified, Object: same})
	if ev := next(Modified); ev.ResourceVersion != first {
		t.Errorf("applied the change at %q, want %s", ev.ResourceVersion, first)
	}

	older := configMap(1).(*corev1.ConfigMap)
	older.ResourceVersion = first // older than cm-00001
	srv.SendWatchEvent(watch.Event{Type: watch.Modified, Object: older})
	select {
	case err := <-errs:
		if !errors.Is(err, ErrStaleEvent) || !strings.Contains(err.Error(), "the stored object is at "+second) {
			t.Errorf("reported %v, want the stale change against cm-00001's %s", err, second)
		}
	case ev := <-c.events:
		t.Errorf("got %v at %q, want the stale change refused", ev.Type, ev.ResourceVersion)
	case <-time.After(guard):
		t.Fatal("the stale change was not reported")
	}
}

// A consumer that does not tell its stored versions has events judged
// against the collection's resourceVersion (ErrStaleEvent): a change must be
// newer than it, a bookmark no older. A stale event is reported and not
// delivered.
func TestStaleEventsAgainstTheCollection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		typ   watch.EventType
		back  int // how far behind the collection
		stale bool
	}{
		{"an older change", watch.Modified, 1, true},
		{"a change as old as the collection", watch.Modified, 0, true},
		{"an older bookmark", watch.Bookmark, 1, true},
		{"a bookmark as old as the collection", watch.Bookmark, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, srv := live(t)
			collection, err := strconv.Atoi(srv.ResourceVersion())
			if err != nil {
				t.Fatal(err)
			}
			rv := strconv.Itoa(collection - tc.back)
			cm := configMap(0).(*corev1.ConfigMap)
			cm.ResourceVersion, cm.Data["index"] = rv, "changed"
			srv.SendWatchEvent(watch.Event{Type: tc.typ, Object: cm})
			if tc.stale {
				err := h.err()
				if !errors.Is(err, ErrStaleEvent) || !strings.Contains(err.Error(), "the collection is at "+strconv.Itoa(collection)) {
					t.Fatalf("reported %v, want a stale event against the collection at %d", err, collection)
				}
				if n := len(h.events); n != 0 {
					t.Fatalf("delivered %d events, the first %+v: want the stale one dropped", n, <-h.events)
				}
				return
			}
			if ev := h.next(); ev.Type != Bookmark || ev.ResourceVersion != rv {
				t.Fatalf("got %v at %q, want the bookmark at %s", ev.Type, ev.ResourceVersion, rv)
			}
			if got, want := change(t, h, srv, "cm-00001"), strconv.Itoa(collection+1); got != want {
				t.Fatalf("the next change at %q, want %s", got, want)
			}
			select {
			case err := <-h.errs:
				t.Fatalf("reported %v", err)
			default:
			}
		})
	}
}
