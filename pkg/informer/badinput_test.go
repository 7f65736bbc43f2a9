package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// Bad input the informer must survive with a clear error or log and no lost
// state. Already covered elsewhere: a nil ListerWatcher
// (TestNilListerWatcherPanicsWithClearMessage), a transform that fails or
// returns nil on listed and created objects (TestTransform), a handler that
// blocks (TestSlowHandlerBlocksNeitherPipelineNorOthers) or panics with
// crashing off (TestPanickingHandlerWithCrashingOff), and bad input from the
// wire (wire_test.go and test/envtest's "bad input from the wire").

// logSink collects the log lines of an informer run, errors included.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

// context returns a context whose logger writes to the sink at every
// verbosity.
func (l *logSink) context() context.Context {
	logger := funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
	return klog.NewContext(context.Background(), logger)
}

// find returns the first line holding every one of parts, or "".
func (l *logSink) find(parts ...string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if containsAll(line, parts) {
			return line
		}
	}
	return ""
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// runLogged is run with the informer's logs going to a sink.
func runLogged(t *testing.T, inf toolscache.SharedIndexInformer) *logSink {
	t.Helper()
	logs := &logSink{}
	ctx, cancel := context.WithCancel(logs.context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("informer did not stop within 30s")
		}
	})
	return logs
}

// expectLog waits for a log line holding every one of parts.
func expectLog(t *testing.T, logs *logSink, parts ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("a log line with %q", parts), func() bool {
		return logs.find(parts...) != ""
	})
}

// keyless is an object without metadata: no key can be computed for it.
type keyless struct{ metav1.TypeMeta }

func (k *keyless) DeepCopyObject() runtime.Object { c := *k; return &c }

// tolerantRecorder records what handlers get without assuming every object
// has a key: it counts objects it cannot key instead of panicking.
type tolerantRecorder struct {
	mu      sync.Mutex
	state   map[string]string // key -> resourceVersion
	unkeyed int
	deletes int
}

func newTolerantRecorder() *tolerantRecorder { return &tolerantRecorder{state: map[string]string{}} }

func (r *tolerantRecorder) set(obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		r.unkeyed++
		return
	}
	r.state[k] = rvOf(obj)
}

func (r *tolerantRecorder) OnAdd(obj any, _ bool) { r.set(obj) }
func (r *tolerantRecorder) OnUpdate(_, obj any)   { r.set(obj) }
func (r *tolerantRecorder) OnDelete(obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deletes++
	k, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		r.unkeyed++
		return
	}
	delete(r.state, k)
}

func (r *tolerantRecorder) snapshot() (state map[string]string, unkeyed, deletes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	state = make(map[string]string, len(r.state))
	for k, v := range r.state {
		state[k] = v
	}
	return state, r.unkeyed, r.deletes
}

// waitConverged waits until the store and the handler equal the server.
func waitConverged(t *testing.T, s *fake.Server, inf toolscache.SharedIndexInformer, rec *tolerantRecorder) {
	t.Helper()
	eventually(t, "the store and the handler to equal the server", func() bool {
		want := serverState(t, s)
		got, _, _ := rec.snapshot()
		return equalStates(want, storeState(inf.GetStore())) && equalStates(want, got)
	})
}

// As in client-go, a nil example object is accepted and turns off the type
// check: the informer stores whatever the watch sends.
func TestNilExampleObjectTurnsOffTheTypeCheck(t *testing.T) {
	s := newServer(t, 2)
	inf := NewSharedIndexInformerWithOptions(s.ListerWatcher(), nil, toolscache.SharedIndexInformerOptions{}, WithBackoff(fastBackoff))
	rec := newTolerantRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "secret", ResourceVersion: "999999"}}
	s.SendWatchEvent(watch.Event{Type: watch.Added, Object: secret})
	eventually(t, "the secret in the store", func() bool {
		obj, ok, _ := inf.GetStore().GetByKey(key("secret"))
		_, isSecret := obj.(*corev1.Secret)
		return ok && isSecret
	})
	eventually(t, "the handler to see everything", func() bool {
		got, _, _ := rec.snapshot()
		return len(got) == 3
	})
}

// keylessLW serves the fake server's collection with an object that has no
// metadata in the first LIST page and first in the streamed initial events.
type keylessLW struct{ *fake.ListerWatcher }

func (lw keylessLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw keylessLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := lw.ListerWatcher.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	cms := obj.(*corev1.ConfigMapList)
	list := &metav1.List{ListMeta: cms.ListMeta}
	if opts.Continue == "" {
		list.Items = append(list.Items, runtime.RawExtension{Object: &keyless{}})
	}
	for i := range cms.Items {
		list.Items = append(list.Items, runtime.RawExtension{Object: &cms.Items[i]})
	}
	return list, nil
}

func (lw keylessLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

func (lw keylessLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := lw.ListerWatcher.WatchWithContext(ctx, opts)
	if err != nil || opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
		return w, err
	}
	return prepend(w, watch.Event{Type: watch.Added, Object: &keyless{}}), nil
}

// prepend returns a watch that sends ev, then w's events.
func prepend(w watch.Interface, ev watch.Event) watch.Interface {
	out := make(chan watch.Event)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		for {
			select {
			case out <- ev:
			case <-stop:
				return
			}
			var ok bool
			if ev, ok = <-w.ResultChan(); !ok {
				return
			}
		}
	}()
	return &prependedWatch{Interface: w, out: out, stop: sync.OnceFunc(func() {
		close(stop)
		w.Stop()
		<-done
	})}
}

type prependedWatch struct {
	watch.Interface
	out  chan watch.Event
	stop func()
}

func (w *prependedWatch) ResultChan() <-chan watch.Event { return w.out }
func (w *prependedWatch) Stop()                          { w.stop() }

// An object whose key cannot be computed is dropped with a logged KeyError,
// in a list page or streamed initial events and as a live watch event; the
// rest of the collection is stored and handlers never see it.
func TestObjectsWithoutKeyAreDroppedAndLogged(t *testing.T) {
	for _, strategy := range strategies {
		t.Run(strategy.String(), func(t *testing.T) {
			s := newServer(t, 5)
			// A nil example object, so that no type check drops the
			// keyless objects before the store sees them.
			inf := NewSharedIndexInformerWithOptions(keylessLW{s.ListerWatcher()}, nil, toolscache.SharedIndexInformerOptions{},
				WithBackoff(fastBackoff), WithStrategy(strategy), WithPageSize(2))
			rec := newTolerantRecorder()
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
			logs := runLogged(t, inf)
			waitSynced(t, inf)
			expectLog(t, logs, "Dropping listed object", "object has no meta")
			waitConverged(t, s, inf, rec)

			// Reporting the dropped object may delay the watch past the sync.
			eventually(t, "the watch", func() bool { return s.OpenWatches() == 1 })
			s.SendWatchEvent(watch.Event{Type: watch.Added, Object: &keyless{}})
			mustCreate(t, s, configMap("after"))
			expectLog(t, logs, "Dropped a watch event whose object has no metadata")
			waitConverged(t, s, inf, rec)
			if _, unkeyed, deletes := rec.snapshot(); unkeyed != 0 || deletes != 0 {
				t.Fatalf("handler got %d objects without a key and %d deletes, want none", unkeyed, deletes)
			}
		})
	}
}

// The watcher drops watch events without metadata before they reach the
// store writer; should one arrive anyway, the store writer logs it and
// changes nothing.
func TestStoreWriterLogsLiveObjectsWithoutKey(t *testing.T) {
	s := newServer(t, 0)
	inf := newInformer(s, 0)
	logs := &logSink{}
	w := inf.newStoreWriter(logr.Discard(), nil)
	ctx := logs.context()
	cm := configMap("kept")
	cm.ResourceVersion = "5"
	for _, ev := range []listerwatcher.Event{
		{Type: listerwatcher.RestartStart},
		{Type: listerwatcher.RestartPage, Objects: []runtime.Object{cm}},
		{Type: listerwatcher.RestartDone, ResourceVersion: "5"},
		{Type: listerwatcher.Added, Object: &keyless{}, ResourceVersion: "6"},
		{Type: listerwatcher.Deleted, Object: &keyless{}, ResourceVersion: "7"},
	} {
		if err := w.Handle(ctx, ev); err != nil {
			t.Fatalf("Handle(%v): %v", ev.Type, err)
		}
	}
	for _, msg := range []string{"Unable to store watch event object", "Unable to delete watch event object from store"} {
		if logs.find(msg, "object has no meta") == "" {
			t.Errorf("no log line %q with the KeyError; got %q", msg, logs.lines)
		}
	}
	if keys := inf.GetStore().ListKeys(); len(keys) != 1 || keys[0] != key("kept") {
		t.Fatalf("store holds %v, want only %s", keys, key("kept"))
	}
}

// A transform that fails (or returns nil) on an update drops that update and
// keeps the last good object; on a delete, the stored object is deleted all
// the same (handlers get it as DeletedFinalStateUnknown). Every drop is
// logged; the handler's state follows the store.
func TestTransformFailureKeepsTheLastGoodObject(t *testing.T) {
	for name, bad := range map[string]func() (any, error){
		"error": func() (any, error) { return nil, errors.New("poisoned") },
		"nil":   func() (any, error) { return nil, nil },
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, 0)
			good := mustCreate(t, s, configMap("a", "state", "good")).(*corev1.ConfigMap)
			mustCreate(t, s, configMap("b", "state", "good"))
			inf := newInformer(s, 0)
			if err := inf.SetTransform(func(obj any) (any, error) {
				if obj.(*corev1.ConfigMap).Data["state"] == "poison" {
					return bad()
				}
				return obj, nil
			}); err != nil {
				t.Fatal(err)
			}
			rec := newTolerantRecorder()
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
			logs := runLogged(t, inf)
			waitSynced(t, inf)

			mustUpdate(t, s, configMap("a", "state", "poison"))
			mustUpdate(t, s, configMap("b", "state", "poison"))
			mustDelete(t, s, "b") // its last state is poisoned too
			mustCreate(t, s, configMap("marker"))
			eventually(t, "the marker", func() bool {
				got, _, _ := rec.snapshot()
				_, ok := got[key("marker")]
				return ok
			})
			expectLog(t, logs, "Dropping watch event", "transforming")
			expectLog(t, logs, "Transform failed on a delete event: deleting the stored object", "ns/b")
			kept, ok, _ := inf.GetStore().GetByKey(key("a"))
			if !ok || kept.(*corev1.ConfigMap).ResourceVersion != good.ResourceVersion {
				t.Fatalf("store holds %v for a, want the last good version %s", kept, good.ResourceVersion)
			}
			if _, ok, _ := inf.GetStore().GetByKey(key("b")); ok {
				t.Fatal("b is still stored after its delete event")
			}
			got, _, _ := rec.snapshot()
			if want := storeState(inf.GetStore()); !equalStates(want, got) {
				t.Fatalf("handler differs from the store: %s", diffStates(want, got))
			}

			mustUpdate(t, s, configMap("a", "state", "good again"))
			waitConverged(t, s, inf, rec)
		})
	}
}

// An ERROR watch event that carries no Status ends the watch with a logged
// error naming what it carried; the informer relists and keeps its store
// meanwhile: nothing is deleted, changes made in between arrive.
func TestErrorEventWithoutStatusRelistsKeepingTheStore(t *testing.T) {
	for _, strategy := range strategies {
		t.Run(strategy.String(), func(t *testing.T) {
			s := newServer(t, 10)
			inf := newInformer(s, 0, WithStrategy(strategy))
			rec := newTolerantRecorder()
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
			logs := runLogged(t, inf)
			waitSynced(t, inf)
			waitConverged(t, s, inf, rec)
			restarts := func() int {
				n := 0
				for _, req := range s.Requests() {
					if (req.Verb == "list" && req.Options.Continue == "") || req.Options.SendInitialEvents != nil {
						n++
					}
				}
				return n
			}
			before := restarts()

			// The fake sends the event to open watches only: after a LIST, the
			// watch may still be opening.
			eventually(t, "an open watch", func() bool { return s.OpenWatches() > 0 })
			s.SendWatchEvent(watch.Event{Type: watch.Error, Object: configMap("not-a-status")})
			expectLog(t, logs, "watch ended with error", "ERROR event carrying *v1.ConfigMap instead of a *v1.Status")
			mustUpdate(t, s, configMap("cm-0003", "changed", "yes"))
			eventually(t, "a relist", func() bool { return restarts() > before })
			waitConverged(t, s, inf, rec)
			if _, _, deletes := rec.snapshot(); deletes != 0 {
				t.Fatalf("handler got %d deletes, want none: the relist lost state", deletes)
			}
		})
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

// A LIST without a resourceVersion still fills the store. As client-go's
// reflector does, the informer then watches from "", which on a real server
// (and the fake) replays the collection as ADDED events before the changes:
// no state is lost, and later changes arrive.
func TestListWithoutResourceVersion(t *testing.T) {
	s := newServer(t, 5)
	inf := NewSharedIndexInformerWithOptions(noResourceVersionLW{s.ListerWatcher()}, &corev1.ConfigMap{},
		toolscache.SharedIndexInformerOptions{}, WithBackoff(fastBackoff), WithStrategy(ListWatch), WithPageSize(2))
	rec := newTolerantRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	logs := runLogged(t, inf)
	waitSynced(t, inf)
	waitConverged(t, s, inf, rec)
	mustCreate(t, s, configMap("after"))
	mustDelete(t, s, "cm-0001")
	waitConverged(t, s, inf, rec)
	eventually(t, "LastSyncResourceVersion to follow the watch", func() bool {
		return inf.LastSyncResourceVersion() == s.ResourceVersion()
	})

	expectLog(t, logs, "LIST returned no resourceVersion")
}
