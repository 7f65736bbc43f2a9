package listerwatcher

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// expectRequestedRestart reads a whole restart and fails unless its reason
// is Requested and it holds n objects.
func expectRequestedRestart(t *testing.T, h *harness, n int) {
	t.Helper()
	startEv, names, _ := h.restart()
	if startEv.Reason != Requested || len(names) != n {
		t.Fatalf("restart %+v with %d objects, want a Requested one with %d", startEv, len(names), n)
	}
}

func TestRelistDuringAWatch(t *testing.T) {
	h, srv := live(t)
	lastRV := change(t, h, srv, "cm-00000")
	srv.ResetRequests()
	h.w.Relist()
	expectRequestedRestart(t, h, 2)
	h.watchStarted()
	reqs := requests(srv)
	want := metav1.ListOptions{Limit: 500, ResourceVersion: lastRV, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	if len(reqs) != 2 || !sameRequest(reqs[0], "list", want) || reqs[1].Verb != "watch" {
		t.Errorf("requests %+v, want a list from the last rv %+v, then a watch", reqs, want)
	}
	if n := srv.OpenWatches(); n != 1 {
		t.Errorf("%d watches open, want the new one only", n)
	}
}

func TestRelistDuringAPagedList(t *testing.T) {
	srv := newServer(t, 30)
	var h *harness
	started := make(chan struct{})
	pages := 0
	h = startHandled(t, srv, nil, func(_ context.Context, ev Event) error {
		if ev.Type == RestartPage {
			if pages++; pages == 1 {
				<-started    // h is set
				h.w.Relist() // from the consumer, between two pages
			}
		}
		return nil
	}, WithStrategy(ListWatch), WithPageSize(10))
	close(started)
	h.nextOf(RestartStart)
	h.nextOf(RestartPage)
	expectRequestedRestart(t, h, 30)
	h.watchStarted()
	reqs := requests(srv)
	if len(reqs) != 5 || !sameRequest(reqs[1], "list", metav1.ListOptions{Limit: 10}) {
		t.Errorf("requests %+v, want the first page, then a new first page and its two continues, then a watch", reqs)
	}
}

func TestRelistDuringAStreamingList(t *testing.T) {
	srv := newServer(t, 3)
	// Without bookmarks the stream never ends: the relist comes mid-stream.
	h := start(t, srv, selectorLW{srv.ListerWatcher()}, WithStrategy(StreamingList), WithPageSize(1))
	h.nextOf(RestartStart)
	for range 3 {
		h.nextOf(RestartPage)
	}
	h.watchStarted()
	h.w.Relist()
	h.watchStarted() // the new stream
	if startEv := h.nextOf(RestartStart); startEv.Reason != Requested {
		t.Errorf("restart %+v, want reason Requested", startEv)
	}
	h.nextOf(RestartPage)
	if n := srv.OpenWatches(); n != 1 {
		t.Errorf("%d watches open, want the new stream only", n)
	}
}

func TestRelistWhileBackingOff(t *testing.T) {
	srv := newServer(t, 3)
	srv.SetFault(func(context.Context, fake.Request) error { return apierrors.NewServiceUnavailable("down") })
	h := start(t, srv, nil, WithStrategy(ListWatch))
	h.expectErr(apierrors.IsServiceUnavailable)
	<-h.obs.backoffs // backing off, and the fake clock does not move
	srv.SetFault(nil)
	h.w.Relist()
	expectRequestedRestart(t, h, 3)
}

func TestRelistCallsCoalesce(t *testing.T) {
	h, srv := live(t)
	entered, release := make(chan struct{}), make(chan struct{})
	h.setHandle(func(_ context.Context, ev Event) error {
		if ev.Type == Deleted {
			close(entered)
			<-release
		}
		return nil
	})
	if _, err := srv.Delete("ns", "cm-00000"); err != nil {
		t.Fatal(err)
	}
	<-entered
	h.setHandle(nil)
	for range 5 {
		h.w.Relist() // while the consumer holds the event
	}
	close(release)
	h.nextOf(Deleted)
	expectRequestedRestart(t, h, 2)
	h.watchStarted()
	if _, err := srv.Delete("ns", "cm-00001"); err != nil {
		t.Fatal(err)
	}
	h.nextOf(Deleted) // and no second restart before it
	lists := 0
	for _, req := range srv.Requests() {
		if req.Verb == "list" {
			lists++
		}
	}
	if lists != 1 {
		t.Errorf("%d LISTs after five Relist calls, want 1", lists)
	}
}

func TestRelistBeforeRunIsTheInitialRestart(t *testing.T) {
	srv := newServer(t, 3)
	w, err := New(srv.ListerWatcher(), WithStrategy(ListWatch))
	if err != nil {
		t.Fatal(err)
	}
	w.Relist()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got []string
	err = w.Run(ctx, ConsumerFunc(func(_ context.Context, ev Event) error {
		got = append(got, ev.Type.String()+" "+string(ev.Reason))
		switch ev.Type {
		case RestartDone:
			_, err := srv.Delete("ns", "cm-00000")
			return err
		case Deleted:
			cancel()
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"RestartStart Initial", "RestartPage ", "RestartDone ", "Deleted "}; strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("events %q, want %q: the Relist before Run is the initial restart", got, want)
	}
}

// With WithPaginatedRelists a Watcher that streams its initial list lists a
// requested relist in pages, from its last resourceVersion, then watches;
// restarts it did not ask for keep streaming.
func TestPaginatedRelistsListWhateverTheStrategy(t *testing.T) {
	srv := newServer(t, 30)
	h := start(t, srv, nil, WithStrategy(StreamingList), WithPaginatedRelists(true), WithPageSize(10))
	if startEv, names, _ := h.restart(); startEv.Strategy != StreamingList || len(names) != 30 {
		t.Fatalf("initial restart %+v with %d objects, want a streamed one with 30", startEv, len(names))
	}
	h.watchStarted()
	lastRV := change(t, h, srv, "cm-00000")
	srv.ResetRequests()
	h.w.Relist()
	startEv, names, _ := h.restart()
	if startEv.Reason != Requested || startEv.Strategy != ListWatch || len(names) != 29 {
		t.Fatalf("requested restart %+v with %d objects, want a paginated one (ListWatch) with 29", startEv, len(names))
	}
	h.watchStarted()
	reqs := requests(srv)
	want := metav1.ListOptions{Limit: 10, ResourceVersion: lastRV, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	if len(reqs) != 4 || !sameRequest(reqs[0], "list", want) || reqs[1].Verb != "list" || reqs[2].Verb != "list" || reqs[3].Verb != "watch" {
		t.Fatalf("requests %+v, want three pages from the last rv %+v, then a watch", reqs, want)
	}
	if reqs[3].Options.SendInitialEvents != nil && *reqs[3].Options.SendInitialEvents {
		t.Errorf("the watch after the paginated relist asked for initial events: %+v", reqs[3])
	}

	// A restart after a failure streams again.
	expired := apierrors.NewResourceExpired("too old resource version")
	srv.SendWatchError(&expired.ErrStatus)
	h.expectErr(apierrors.IsResourceExpired)
	h.backoff(testBackoff.Initial)
	if startEv, _, _ := h.restart(); startEv.Strategy != StreamingList {
		t.Errorf("restart after a 410: %+v, want a streamed one", startEv)
	}
}

// A Relist already pending when a streaming restart is about to open its
// stream becomes that restart, as it does before a LIST: no stream is
// opened only to be cut at once.
func TestRelistBeforeAStreamOpensOpensNone(t *testing.T) {
	srv := newServer(t, 3)
	w, err := New(srv.ListerWatcher(), WithStrategy(StreamingList))
	if err != nil {
		t.Fatal(err)
	}
	m := &machine{Watcher: w, c: ConsumerFunc(func(context.Context, Event) error { return nil }),
		logger: klog.Background(), backoff: newBackoff(w.backoff, w.clock), sizer: newPageSizer(w.pageSize, w.fixedPageSize), canStream: true}
	w.Relist()
	next := m.stream(context.Background(), streaming{attempt{reason: Initial}})
	if p, ok := next.(streaming); !ok || p.reason != Requested {
		t.Errorf("next phase %#v, want a streaming restart for the Relist", next)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("sent %v, want nothing before the requested restart", reqs)
	}
}

// The same before a watch: a Relist pending when the watch after a list is
// about to open (one the consumer asked for while storing the list, as a
// sharded informer does when its range changes) becomes the next restart,
// with no watch opened only to be cut at once.
func TestRelistBeforeAWatchOpensOpensNone(t *testing.T) {
	srv := newServer(t, 3)
	w, err := New(srv.ListerWatcher(), WithStrategy(ListWatch))
	if err != nil {
		t.Fatal(err)
	}
	m := &machine{Watcher: w, c: ConsumerFunc(func(context.Context, Event) error { return nil }),
		logger: klog.Background(), backoff: newBackoff(w.backoff, w.clock), sizer: newPageSizer(w.pageSize, w.fixedPageSize)}
	w.Relist()
	next := m.watch(context.Background(), watching{rv: srv.ResourceVersion()})
	if p, ok := next.(listing); !ok || p.reason != Requested {
		t.Errorf("next phase %#v, want a paginated restart for the Relist", next)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("sent %v, want nothing before the requested restart", reqs)
	}
}
