package listerwatcher

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

func TestListWatchPagesThenWatches(t *testing.T) {
	srv := newServer(t, 1234)
	listRV := srv.ResourceVersion()
	h := start(t, srv, nil, WithStrategy(ListWatch))

	startEv, sizes, done := h.pages()
	if startEv.Reason != Initial || startEv.Strategy != ListWatch {
		t.Errorf("restart start %+v, want reason Initial, strategy ListWatch", startEv)
	}
	if want := []int{500, 500, 234}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("page sizes %v, want %v", sizes, want)
	}
	if done.ResourceVersion != listRV || done.Strategy != ListWatch {
		t.Errorf("restart done %+v, want resourceVersion %s, strategy ListWatch", done, listRV)
	}
	h.watchStarted()

	reqs := requests(srv)
	if len(reqs) != 4 {
		t.Fatalf("requests %+v, want 3 LISTs and a WATCH", reqs)
	}
	// A consistent first page, then only limit and continue.
	if want := (metav1.ListOptions{Limit: 500}); reqs[0].Verb != "list" || reqs[0].Options != want {
		t.Errorf("first request %+v, want list %+v", reqs[0], want)
	}
	for _, req := range reqs[1:3] {
		if req.Verb != "list" || req.Options.Continue == "" || req.Options != (metav1.ListOptions{Limit: 500, Continue: req.Options.Continue}) {
			t.Errorf("continue request %+v, want only limit and continue", req)
		}
	}
	if want := (metav1.ListOptions{ResourceVersion: listRV, AllowWatchBookmarks: true}); reqs[3].Verb != "watch" || reqs[3].Options != want {
		t.Errorf("watch request %+v, want %+v", reqs[3], want)
	}

	created, err := srv.Create(configMap(5000))
	if err != nil {
		t.Fatal(err)
	}
	cm := created.DeepCopyObject().(*corev1.ConfigMap)
	cm.Data["index"] = "changed"
	updated, err := srv.Update(cm)
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := srv.Delete("ns", "cm-00000")
	if err != nil {
		t.Fatal(err)
	}
	srv.SendBookmark()
	for _, want := range []struct {
		typ EventType
		obj k8sruntime.Object
	}{{Added, created}, {Modified, updated}, {Deleted, deleted}} {
		ev := h.nextOf(want.typ)
		if !reflect.DeepEqual(ev.Object, want.obj) {
			t.Errorf("%v event object %+v, want %+v", want.typ, ev.Object, want.obj)
		}
		if rv := want.obj.(*corev1.ConfigMap).ResourceVersion; ev.ResourceVersion != rv {
			t.Errorf("%v event resourceVersion %s, want the object's %s", want.typ, ev.ResourceVersion, rv)
		}
	}
	if ev := h.nextOf(Bookmark); ev.ResourceVersion != srv.ResourceVersion() || ev.Object != nil {
		t.Errorf("bookmark %+v, want resourceVersion %s and no object", ev, srv.ResourceVersion())
	}
}

func TestListWatchDeliversEveryObjectOnceInKeyOrder(t *testing.T) {
	srv := newServer(t, 1001)
	h := start(t, srv, nil, WithStrategy(ListWatch), WithPageSize(100))
	_, names, _ := h.restart()
	if len(names) != 1001 {
		t.Fatalf("got %d objects, want 1001", len(names))
	}
	for i, name := range names {
		if want := fmt.Sprintf("cm-%05d", i); name != want {
			t.Fatalf("object %d is %s, want %s", i, name, want)
		}
	}
}

func TestListWatchPageSizeZeroListsOnce(t *testing.T) {
	srv := newServer(t, 1234)
	h := start(t, srv, nil, WithStrategy(ListWatch), WithPageSize(0))
	_, sizes, _ := h.pages()
	if want := []int{1234}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("page sizes %v, want %v", sizes, want)
	}
	h.watchStarted()
	if reqs := requests(srv); reqs[0].Options != (metav1.ListOptions{}) {
		t.Errorf("list options %+v, want none (a consistent, unpaginated LIST)", reqs[0].Options)
	}
}

func TestListWatchEmptyCollection(t *testing.T) {
	srv := newServer(t, 0)
	h := start(t, srv, nil, WithStrategy(ListWatch))
	h.nextOf(RestartStart)
	if done := h.nextOf(RestartDone); done.ResourceVersion != srv.ResourceVersion() {
		t.Errorf("restart done at %s, want %s", done.ResourceVersion, srv.ResourceVersion())
	}
}

func TestWatchTimeoutIsRandomisedBetweenMinAndTwiceMin(t *testing.T) {
	srv := newServer(t, 1)
	h := start(t, srv, nil, WithStrategy(ListWatch), WithMinWatchTimeout(DefaultMinWatchTimeout))
	h.restart()
	for i := range 20 {
		h.watchStarted()
		if _, err := srv.Create(configMap(1000 + i)); err != nil {
			t.Fatal(err)
		}
		h.nextOf(Added) // not a very short watch: it had an event
		srv.CloseWatches()
	}
	seen := map[int64]bool{}
	for _, req := range srv.Requests() {
		if req.Verb != "watch" {
			continue
		}
		s := req.Options.TimeoutSeconds
		if s == nil || *s < 300 || *s > 600 {
			t.Fatalf("watch timeoutSeconds %v, want within [300, 600]", s)
		}
		seen[*s] = true
	}
	// 21 draws from 301 values: all equal would mean no randomisation.
	if len(seen) < 2 {
		t.Errorf("every watch asked for the same timeout %v", seen)
	}
}

// selectorLW adds a label selector to every request and turns bookmarks off
// on watches, as controller-runtime's ListerWatcher may.
type selectorLW struct{ *fake.ListerWatcher }

// everyObject is selectorLW's label selector: the fake server applies it,
// and it selects every object of these tests (none has the label app).
const everyObject = "app!=x"

func (lw selectorLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
	opts.LabelSelector = everyObject
	return lw.ListerWatcher.ListWithContext(ctx, opts)
}

func (lw selectorLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.LabelSelector = everyObject
	opts.AllowWatchBookmarks = false
	return lw.ListerWatcher.WatchWithContext(ctx, opts)
}

func TestListWatchKeepsWhatTheListerWatcherAdds(t *testing.T) {
	srv := newServer(t, 700)
	h := start(t, srv, selectorLW{srv.ListerWatcher()}, WithStrategy(ListWatch))
	h.restart()
	h.watchStarted()
	reqs := requests(srv)
	if len(reqs) != 3 {
		t.Fatalf("requests %+v, want 2 LISTs and a WATCH", reqs)
	}
	// With a selector the server does not say how many objects remain: the
	// second page doubles the first.
	want := []metav1.ListOptions{
		{LabelSelector: everyObject, Limit: 500},
		{LabelSelector: everyObject, Limit: 1000, Continue: reqs[1].Options.Continue},
		{LabelSelector: everyObject, ResourceVersion: srv.ResourceVersion()},
	}
	for i := range want {
		if reqs[i].Options != want[i] {
			t.Errorf("request %d options %+v, want %+v", i, reqs[i].Options, want[i])
		}
	}
}

// contextLessLW has only client-go's deprecated context-less methods.
type contextLessLW struct{ lw *fake.ListerWatcher }

func (c contextLessLW) List(opts metav1.ListOptions) (k8sruntime.Object, error) {
	return c.lw.List(opts)
}

func (c contextLessLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return c.lw.Watch(opts)
}

func TestContextLessListerWatcher(t *testing.T) {
	for _, strategy := range []Strategy{ListWatch, StreamingList} {
		t.Run(strategy.String(), func(t *testing.T) {
			srv := newServer(t, 10)
			h := start(t, srv, contextLessLW{srv.ListerWatcher()}, WithStrategy(strategy))
			if _, names, _ := h.restart(); len(names) != 10 {
				t.Errorf("got %d objects, want 10", len(names))
			}
			if _, err := srv.Delete("ns", "cm-00003"); err != nil {
				t.Fatal(err)
			}
			h.nextOf(Deleted)
		})
	}
}

// pinLW remembers each LIST response weakly and, at the next LIST request,
// records whether the previous one is still reachable.
type pinLW struct {
	*fake.ListerWatcher
	prevItems weak.Pointer[corev1.ConfigMap]
	prevList  weak.Pointer[corev1.ConfigMapList]
	pinned    []string
}

func (lw *pinLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
	if lw.prevList != (weak.Pointer[corev1.ConfigMapList]{}) {
		runtime.GC()
		if lw.prevList.Value() != nil {
			lw.pinned = append(lw.pinned, "list object")
		}
		if lw.prevItems.Value() != nil {
			lw.pinned = append(lw.pinned, "items array")
		}
	}
	obj, err := lw.ListerWatcher.ListWithContext(ctx, opts)
	if list, ok := obj.(*corev1.ConfigMapList); ok && len(list.Items) > 0 {
		lw.prevList = weak.Make(list)
		lw.prevItems = weak.Make(&list.Items[0])
	}
	return obj, err
}

func TestListPageIsUnreachableBeforeTheNextRequest(t *testing.T) {
	srv := newServer(t, 50)
	lw := &pinLW{ListerWatcher: srv.ListerWatcher()}
	// The consumer keeps one object of every page: the page must not stay
	// reachable through it.
	var kept []k8sruntime.Object
	h := startHandled(t, srv, lw, func(_ context.Context, ev Event) error {
		if ev.Type == RestartPage {
			kept = append(kept, ev.Objects[0])
		}
		return nil
	}, WithStrategy(ListWatch), WithPageSize(10))
	h.restart()
	h.watchStarted()
	if len(kept) != 5 {
		t.Fatalf("consumer kept %d objects, want 5", len(kept))
	}
	if len(lw.pinned) > 0 {
		t.Errorf("previous LIST response still reachable at the next request: %v", lw.pinned)
	}
}
