package listerwatcher

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// streamOpts are the options of a streaming restart from rv.
func streamOpts(rv string) metav1.ListOptions {
	return metav1.ListOptions{
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
	}
}

func sameRequest(got fake.Request, verb string, opts metav1.ListOptions) bool {
	return got.Verb == verb && reflect.DeepEqual(got.Options, opts)
}

func TestStreamingListBatchesInitialEventsAndKeepsTheStream(t *testing.T) {
	srv := newServer(t, 1234)
	rv := srv.ResourceVersion()
	h := start(t, srv, nil, WithStrategy(StreamingList))

	startEv, sizes, done := h.pages()
	if startEv.Reason != Initial || startEv.Strategy != StreamingList {
		t.Errorf("restart start %+v, want reason Initial, strategy StreamingList", startEv)
	}
	// Batches of MaxStreamingBatch, not of the default page size (500).
	if want := []int{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 34}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("page sizes %v, want %v", sizes, want)
	}
	if done.ResourceVersion != rv || done.Strategy != StreamingList {
		t.Errorf("restart done %+v, want resourceVersion %s, strategy StreamingList", done, rv)
	}

	// The same stream goes on as the live watch.
	if _, err := srv.Delete("ns", "cm-00001"); err != nil {
		t.Fatal(err)
	}
	h.nextOf(Deleted)
	reqs := requests(srv)
	if len(reqs) != 1 || !sameRequest(reqs[0], "watch", streamOpts("")) {
		t.Errorf("requests %+v, want one streaming watch %+v", reqs, streamOpts(""))
	}
	if s := srv.Requests()[0].Options.TimeoutSeconds; s == nil || *s < 300 || *s > 600 {
		t.Errorf("streaming watch timeoutSeconds %v, want within [300, 600]", s)
	}
}

func TestStreamingListPageSizeZeroIsOnePage(t *testing.T) {
	srv := newServer(t, 1234)
	h := start(t, srv, nil, WithStrategy(StreamingList), WithPageSize(0))
	if _, sizes, _ := h.pages(); !reflect.DeepEqual(sizes, []int{1234}) {
		t.Errorf("page sizes %v, want one page of 1234", sizes)
	}
}

func TestStreamingReconnectDoesNotAskForInitialEvents(t *testing.T) {
	srv := newServer(t, 10)
	h := start(t, srv, nil, WithStrategy(StreamingList))
	h.restart()
	h.watchStarted()
	if _, err := srv.Delete("ns", "cm-00001"); err != nil {
		t.Fatal(err)
	}
	lastRV := h.nextOf(Deleted).ResourceVersion

	srv.CloseWatches()
	if opts := h.watchStarted(); opts.SendInitialEvents != nil || opts.ResourceVersion != lastRV || opts.ResourceVersionMatch != "" {
		t.Errorf("reconnect options %+v, want a plain watch from %s", opts, lastRV)
	}
	if _, err := srv.Delete("ns", "cm-00002"); err != nil {
		t.Fatal(err)
	}
	h.nextOf(Deleted) // and no restart in between
}

// A stream that closes right after its end bookmark, with no live event, is
// a very short watch, as client-go's reflector counts its watch from the
// end bookmark: a server (or a proxy) that drops every watch at once is
// backed off from, not watched again at once.
func TestStreamClosedRightAfterItsEndBookmarkIsVeryShort(t *testing.T) {
	srv := newServer(t, 10)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := startHandled(t, srv, nil, func(_ context.Context, ev Event) error {
		if ev.Type == RestartStart {
			clk.Step(2 * time.Second) // the initial events took a while
		}
		return nil
	}, WithStrategy(StreamingList), WithClock(clk))
	h.clock = clk
	h.watchStarted()
	_, _, done := h.restart()
	srv.CloseWatches()
	select {
	case err := <-h.errs:
		if !errors.Is(err, ErrVeryShortWatch) {
			t.Fatalf("reported %v, want ErrVeryShortWatch", err)
		}
	case opts := <-h.obs.watches:
		t.Fatalf("watched again at once (%+v) after the stream closed right after its end bookmark, want ErrVeryShortWatch and a backoff", opts)
	case <-time.After(guard):
		t.Fatal("nothing happened after the stream closed")
	}
	h.backoff(testBackoff.Initial)
	if opts := h.watchStarted(); opts.ResourceVersion != done.ResourceVersion || opts.SendInitialEvents != nil {
		t.Errorf("watch after the backoff %+v, want a plain watch from %s", opts, done.ResourceVersion)
	}
}

// A stream that lives on for a second after its end bookmark closes cleanly.
func TestStreamClosedASecondAfterItsEndBookmarkIsNotVeryShort(t *testing.T) {
	srv := newServer(t, 10)
	h := start(t, srv, nil, WithStrategy(StreamingList))
	h.restart()
	h.watchStarted()
	h.clock.Step(time.Second)
	srv.CloseWatches()
	h.watchStarted() // no error, no backoff
	select {
	case err := <-h.errs:
		t.Errorf("reported %v for a stream that lived a second after its end bookmark", err)
	default:
	}
}

func TestAutoStreamsByDefault(t *testing.T) {
	srv := newServer(t, 3)
	h := start(t, srv, nil)
	if startEv, _, _ := h.restart(); startEv.Strategy != StreamingList {
		t.Errorf("Auto restarted with %v, want StreamingList", startEv.Strategy)
	}
}

var refuseStreaming = func(_ context.Context, req fake.Request) error {
	if req.Verb == "watch" && req.Options.SendInitialEvents != nil {
		return apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "",
			nil) // what a server with the WatchList feature off answers, in short
	}
	return nil
}

// A fallback TTL of 0 remembers no fallback, but the restart the fallback
// itself leads to lists all the same: streaming again at once, as it did,
// looped on refused streams without ever listing.
func TestAutoWithZeroFallbackTTLListsOnce(t *testing.T) {
	srv := newServer(t, 3)
	srv.SetFault(refuseStreaming)
	h := start(t, srv, nil, WithFallbackTTL(0))
	if err := h.fallback(); !apierrors.IsInvalid(err) {
		t.Errorf("fallback after %v, want the server's Invalid", err)
	}
	if !apierrors.IsInvalid(h.err()) {
		t.Error("the refusal was not reported")
	}
	if startEv, names, _ := h.restart(); startEv.Strategy != ListWatch || len(names) != 3 {
		t.Fatalf("restart %+v with %d objects, want one by ListWatch with 3", startEv, len(names))
	}
	h.watchStarted()

	// Nothing is remembered: the next restart streams.
	srv.SetFault(nil)
	expired := apierrors.NewResourceExpired("gone")
	srv.SendWatchError(&expired.ErrStatus)
	h.expectErr(apierrors.IsResourceExpired)
	h.backoff(testBackoff.Initial)
	if startEv, _, _ := h.restart(); startEv.Strategy != StreamingList {
		t.Errorf("restart %+v, want one by StreamingList once the 0 TTL has run out", startEv)
	}
}

// A stream open refused because the resource is not served or the client
// may not read it (a CRD not installed yet, RBAC not granted yet) says
// nothing of streaming: Auto lists that once, as client-go lists at every
// attempt, and streams at the next, so that an informer started before its
// CRD streams its list once the CRD is served.
func TestAutoListsOnceWhenTheResourceIsMissingOrForbidden(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		is   func(error) bool
	}{
		{"NotFound", apierrors.NewNotFound(configMaps, ""), apierrors.IsNotFound},
		{"Forbidden", apierrors.NewForbidden(configMaps, "", errors.New("no RBAC yet")), apierrors.IsForbidden},
		{"Unauthorized", apierrors.NewUnauthorized("no token yet"), apierrors.IsUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, 3)
			var refused atomic.Bool
			refused.Store(true)
			srv.SetFault(func(context.Context, fake.Request) error {
				if refused.Load() {
					return tc.err
				}
				return nil
			})
			h := start(t, srv, nil, WithFallbackTTL(DefaultFallbackTTL))
			h.expectErr(tc.is) // the stream's open
			h.expectErr(tc.is) // the LIST in its stead
			refused.Store(false)
			h.backoff(testBackoff.Initial)
			if startEv, names, _ := h.restart(); startEv.Strategy != StreamingList || len(names) != 3 {
				t.Errorf("restart %+v with %d objects once the resource is served, want one by StreamingList with 3", startEv, len(names))
			}
			var verbs []string
			for _, req := range srv.Requests() {
				verb := req.Verb
				if req.Options.SendInitialEvents != nil {
					verb = "stream"
				}
				verbs = append(verbs, verb)
			}
			if want := []string{"stream", "list", "stream"}; !reflect.DeepEqual(verbs, want) {
				t.Errorf("requests %v, want %v", verbs, want)
			}
			select {
			case err := <-h.obs.fallbacks:
				t.Errorf("Auto fell back to ListWatch after %v", err)
			default:
			}
		})
	}
}

func TestAutoFallsBackWhenTheServerRefusesAndRemembersIt(t *testing.T) {
	srv := newServer(t, 3)
	srv.SetFault(refuseStreaming)
	h := start(t, srv, nil, WithFallbackTTL(DefaultFallbackTTL))

	if err := h.fallback(); !apierrors.IsInvalid(err) {
		t.Errorf("fallback after %v, want the server's Invalid", err)
	}
	if !apierrors.IsInvalid(h.err()) {
		t.Error("the refusal was not reported")
	}
	startEv, names, _ := h.restart()
	if startEv.Strategy != ListWatch || startEv.Reason != Initial || len(names) != 3 {
		t.Errorf("restart %+v with %d objects, want the initial one by ListWatch with 3", startEv, len(names))
	}
	h.watchStarted()

	// Within the TTL a relist lists again, without trying to stream.
	srv.SetFault(nil)
	srv.ResetRequests()
	expired := apierrors.NewResourceExpired("gone")
	srv.SendWatchError(&expired.ErrStatus)
	h.expectErr(apierrors.IsResourceExpired)
	h.backoff(testBackoff.Initial)
	if startEv, _, _ := h.restart(); startEv.Strategy != ListWatch || startEv.Reason != Expired {
		t.Errorf("relist within the fallback TTL: %+v, want Expired by ListWatch", startEv)
	}
	if reqs := requests(srv); reqs[0].Verb != "list" {
		t.Errorf("first request within the TTL %+v, want a LIST", reqs[0])
	}
	h.watchStarted()

	// After it, Auto streams again.
	h.clock.Step(DefaultFallbackTTL)
	srv.SendWatchError(&expired.ErrStatus)
	h.expectErr(apierrors.IsResourceExpired)
	h.backoff(testBackoff.Initial)
	if startEv, _, _ := h.restart(); startEv.Strategy != StreamingList {
		t.Errorf("relist after the fallback TTL: %+v, want StreamingList", startEv)
	}
}

func TestAutoListsWhenTheListerWatcherCannotStream(t *testing.T) {
	srv := newServer(t, 3)
	lw := srv.ListerWatcher()
	lw.WatchListUnsupported = true
	for _, strategy := range []Strategy{Auto, StreamingList} {
		t.Run(strategy.String(), func(t *testing.T) {
			srv.ResetRequests()
			h := start(t, srv, lw, WithStrategy(strategy))
			if startEv, _, _ := h.restart(); startEv.Strategy != ListWatch {
				t.Errorf("restart by %v, want ListWatch", startEv.Strategy)
			}
			h.watchStarted()
			h.stop()
			for _, req := range srv.Requests() {
				if req.Options.SendInitialEvents != nil {
					t.Errorf("streaming request %+v to a ListerWatcher that cannot stream", req)
				}
			}
		})
	}
}

func TestAutoHonoursClientGoFeatureGate(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	srv := newServer(t, 3)
	h := start(t, srv, nil)
	if startEv, _, _ := h.restart(); startEv.Strategy != ListWatch {
		t.Errorf("Auto with WatchListClient off restarted by %v, want ListWatch", startEv.Strategy)
	}
	h.stop()

	h = start(t, srv, nil, WithStrategy(StreamingList))
	if startEv, _, _ := h.restart(); startEv.Strategy != StreamingList {
		t.Errorf("explicit StreamingList with WatchListClient off restarted by %v, want StreamingList", startEv.Strategy)
	}
}

func TestAutoFallsBackWithoutEndBookmark(t *testing.T) {
	srv := newServer(t, 1234)
	// The caller's ListerWatcher turns bookmarks off: the server streams the
	// initial events but never ends them.
	h := start(t, srv, selectorLW{srv.ListerWatcher()})
	startEv := h.nextOf(RestartStart)
	if startEv.Strategy != StreamingList {
		t.Fatalf("first restart by %v, want StreamingList", startEv.Strategy)
	}
	for range 1234 / MaxStreamingBatch { // every full batch; the rest waits for the end
		h.nextOf(RestartPage)
	}
	var err error
	h.idleUntil(DefaultStreamingIdleTimeout, poll(h.obs.fallbacks, &err))
	if !errors.Is(err, ErrNoEndBookmark) {
		t.Errorf("fallback after %v, want ErrNoEndBookmark", err)
	}
	startEv, names, _ := h.restart()
	if startEv.Strategy != ListWatch || startEv.Reason != StreamingFallback || len(names) != 1234 {
		t.Errorf("restart %+v with %d objects, want a StreamingFallback by ListWatch with 1234", startEv, len(names))
	}
}

// TestProgressBookmarksDoNotDelayTheFallback: a server that ignores
// sendInitialEvents sends no initial event and no end bookmark, but may send
// progress bookmarks. Only an initial event restarts the idle timer: with
// a bookmark every 6 s, Auto must still fall back once 10 s have passed
// without one. Before, each bookmark restarted it and Auto never fell back.
func TestProgressBookmarksDoNotDelayTheFallback(t *testing.T) {
	srv := newServer(t, 0, fake.WithoutWatchList())
	h := start(t, srv, nil)
	h.watchStarted()
	step := DefaultStreamingIdleTimeout * 6 / 10
	for range 2 {
		srv.SendBookmark()
		time.Sleep(20 * time.Millisecond) // for the watcher to take it
		h.clock.Step(step)
	}
	var err error
	select {
	case err = <-h.obs.fallbacks:
	case <-time.After(time.Second):
		t.Fatalf("%v after the watch opened, with progress bookmarks and no initial event, Auto has not fallen back", 2*step)
	}
	if !errors.Is(err, ErrNoEndBookmark) {
		t.Errorf("fallback after %v, want ErrNoEndBookmark", err)
	}
}

func TestAutoFallsBackWhenTheServerSendsChangesFirst(t *testing.T) {
	srv := newServer(t, 5, fake.WithoutWatchList())
	h := start(t, srv, nil, WithPageSize(2))
	h.watchStarted()
	if _, err := srv.Delete("ns", "cm-00001"); err != nil {
		t.Fatal(err)
	}
	if err := h.fallback(); !errors.Is(err, ErrNotStreaming) {
		t.Errorf("fallback after %v, want ErrNotStreaming", err)
	}
	// The synthetic ADDED events made pages, so the consumer saw a start.
	h.nextOf(RestartStart)
	h.nextOf(RestartPage)
	h.nextOf(RestartPage)
	startEv, names, _ := h.restart()
	if startEv.Strategy != ListWatch || startEv.Reason != StreamingFallback || len(names) != 4 {
		t.Errorf("restart %+v with %d objects, want a StreamingFallback by ListWatch with 4", startEv, len(names))
	}
}

func TestExplicitStreamingListNeverFallsBack(t *testing.T) {
	srv := newServer(t, 3)
	srv.SetFault(refuseStreaming)
	h := start(t, srv, nil, WithStrategy(StreamingList))
	for _, want := range []int{1, 2} {
		if err := h.err(); !apierrors.IsInvalid(err) {
			t.Fatalf("reported %v, want the server's Invalid", err)
		}
		h.backoff(testBackoff.Initial * (1 << (want - 1)))
	}
	srv.SetFault(nil)
	if startEv, _, _ := h.restart(); startEv.Strategy != StreamingList {
		t.Errorf("restart by %v, want StreamingList", startEv.Strategy)
	}
	for _, req := range srv.Requests() {
		if req.Verb == "list" {
			t.Errorf("explicit StreamingList sent a LIST: %+v", req)
		}
	}
	select {
	case err := <-h.obs.fallbacks:
		t.Errorf("explicit StreamingList fell back after %v", err)
	default:
	}
}

func TestExplicitStreamingListRetriesWithoutEndBookmark(t *testing.T) {
	srv := newServer(t, 3)
	h := start(t, srv, selectorLW{srv.ListerWatcher()}, WithStrategy(StreamingList), WithPageSize(1))
	h.nextOf(RestartStart)
	var err error
	h.idleUntil(DefaultStreamingIdleTimeout, poll(h.errs, &err))
	if !errors.Is(err, ErrNoEndBookmark) {
		t.Errorf("reported %v, want ErrNoEndBookmark", err)
	}
	// The idle steps may have run the backoff through already.
	if b := <-h.obs.backoffs; b.delay != testBackoff.Initial {
		t.Errorf("backed off %v, want %v", b.delay, testBackoff.Initial)
	}
	h.clock.Step(testBackoff.Initial)
	if startEv := h.skipTo(RestartStart); startEv.Strategy != StreamingList || startEv.Reason != Error {
		t.Errorf("retry %+v, want an Error restart by StreamingList", startEv)
	}
}

func TestStreamingThrottledRetriesTheStream(t *testing.T) {
	srv := newServer(t, 3)
	calls := 0
	srv.SetFault(func(context.Context, fake.Request) error {
		if calls++; calls == 1 {
			return apierrors.NewTooManyRequests("slow down", 0)
		}
		if calls == 2 {
			return fake.ConnectionRefused()
		}
		return nil
	})
	h := start(t, srv, nil)
	h.backoff(testBackoff.Initial)
	h.backoff(2 * testBackoff.Initial)
	if startEv, _, _ := h.restart(); startEv.Strategy != StreamingList || startEv.Reason != Initial {
		t.Errorf("restart %+v, want the initial one by StreamingList", startEv)
	}
	for i, req := range requests(srv) {
		if !sameRequest(req, "watch", streamOpts("")) {
			t.Errorf("request %d %+v, want the same streaming watch", i, req)
		}
	}
}

func TestStreamingFromAnUnavailableResourceVersionStreamsFromNewest(t *testing.T) {
	srv := newServer(t, 3)
	h := start(t, srv, nil, WithStrategy(StreamingList))
	_, _, done := h.restart()
	h.watchStarted()
	srv.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Verb == "watch" && req.Options.ResourceVersion != "" {
			return fake.TooLargeResourceVersion(99, 1)
		}
		return nil
	})
	srv.ResetRequests()
	expired := apierrors.NewResourceExpired("gone")
	srv.SendWatchError(&expired.ErrStatus)
	if err := h.err(); !apierrors.IsResourceExpired(err) {
		t.Errorf("reported %v, want the watch's Expired", err)
	}
	h.backoff(testBackoff.Initial)
	if err := h.err(); !isTooLarge(err) {
		t.Errorf("reported %v, want too large resource version", err)
	}
	// No backoff: the stream from "" follows at once.
	if startEv, _, _ := h.restart(); startEv.Reason != Expired || startEv.Strategy != StreamingList {
		t.Errorf("restart %+v, want Expired by StreamingList", startEv)
	}
	reqs := requests(srv)
	if len(reqs) != 2 || !sameRequest(reqs[0], "watch", streamOpts(done.ResourceVersion)) || !sameRequest(reqs[1], "watch", streamOpts("")) {
		t.Errorf("requests %+v, want streams from %s then from \"\"", reqs, done.ResourceVersion)
	}
}

// tableFirstLW streams a Table (what an API server answers a ListerWatcher
// asking for as=Table) as the first initial event of its first stream, and
// then the server's events.
type tableFirstLW struct {
	*fake.ListerWatcher
	sent atomic.Bool
}

func (lw *tableFirstLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := lw.ListerWatcher.WatchWithContext(ctx, opts)
	if err != nil || opts.SendInitialEvents == nil || !*opts.SendInitialEvents || lw.sent.Swap(true) {
		return w, err
	}
	table := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "meta.k8s.io/v1", "kind": "Table",
		"metadata": map[string]any{"resourceVersion": "1"},
	}}
	p := &prepended{inner: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go p.run(watch.Event{Type: watch.Added, Object: table})
	return p, nil
}

// prepended is a watch that delivers first, and then inner's events.
type prepended struct {
	inner    watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (p *prepended) run(first watch.Event) {
	defer close(p.out)
	defer p.inner.Stop()
	ev, ok := first, true
	for ok {
		select {
		case p.out <- ev:
		case <-p.stop:
			return
		}
		ev, ok = <-p.inner.ResultChan()
	}
}

func (p *prepended) ResultChan() <-chan watch.Event { return p.out }
func (p *prepended) Stop()                          { p.stopOnce.Do(func() { close(p.stop) }) }

// A Table among a stream's initial events is refused as on a watch
// (TestTableIsAnObjectOfAnotherKind), even by a watcher that expects no
// type or kind: the stream ends with ErrUnexpectedObject, no page carries
// the Table, and the next stream lists the server's objects.
func TestStreamRefusesATableAmongItsInitialEvents(t *testing.T) {
	srv := newServer(t, 3)
	h := start(t, srv, &tableFirstLW{ListerWatcher: srv.ListerWatcher()}, WithStrategy(StreamingList), WithExpectedType(nil))
	h.expectErr(isErr(ErrUnexpectedObject))
	h.backoff(time.Second)
	var names []string
	for done := false; !done; {
		switch ev := h.next(); ev.Type {
		case RestartPage:
			for _, obj := range ev.Objects {
				cm, ok := obj.(*corev1.ConfigMap)
				if !ok {
					t.Fatalf("a page carried a %T (%v)", obj, obj.GetObjectKind().GroupVersionKind())
				}
				names = append(names, cm.Name)
			}
		case RestartDone:
			done = true
		}
	}
	if len(names) != 3 {
		t.Errorf("the restart delivered %v, want the server's 3 ConfigMaps", names)
	}
}
