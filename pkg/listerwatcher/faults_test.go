package listerwatcher

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leaninformer/leaninformer/internal/errorcapture"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

var configMaps = schema.GroupResource{Resource: "configmaps"}

// live starts a ListWatch watcher on 3 objects and waits for its watch.
func live(t *testing.T, opts ...Option) (*harness, *fake.Server) {
	t.Helper()
	srv := newServer(t, 3)
	h := start(t, srv, nil, append([]Option{WithStrategy(ListWatch)}, opts...)...)
	h.restart()
	h.watchStarted()
	srv.ResetRequests()
	return h, srv
}

// change deletes an object and returns the event's resourceVersion.
func change(t *testing.T, h *harness, srv *fake.Server, name string) string {
	t.Helper()
	if _, err := srv.Delete("ns", name); err != nil {
		t.Fatal(err)
	}
	return h.nextOf(Deleted).ResourceVersion
}

func TestCleanWatchCloseResumesWithoutRelist(t *testing.T) {
	for _, strategy := range []Strategy{ListWatch, StreamingList} {
		t.Run(strategy.String(), func(t *testing.T) {
			srv := newServer(t, 5)
			h := start(t, srv, nil, WithStrategy(strategy))
			h.restart()
			h.watchStarted()
			rv := change(t, h, srv, "cm-00001")
			srv.ResetRequests()
			srv.CloseWatches()
			h.watchStarted()
			change(t, h, srv, "cm-00002")
			reqs := requests(srv)
			if want := (metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}); len(reqs) != 1 || !sameRequest(reqs[0], "watch", want) {
				t.Errorf("requests after the close %+v, want one watch %+v", reqs, want)
			}
		})
	}
}

func TestVeryShortWatchBacksOffAndWatchesAgain(t *testing.T) {
	h, srv := live(t)
	srv.CloseWatches() // at once, without any event
	if err := h.err(); !errors.Is(err, ErrVeryShortWatch) {
		t.Errorf("reported %v, want ErrVeryShortWatch", err)
	}
	h.backoff(testBackoff.Initial)
	h.watchStarted()
	change(t, h, srv, "cm-00001") // and no relist
	for _, req := range srv.Requests() {
		if req.Verb != "watch" {
			t.Errorf("request %+v after a very short watch, want only watches", req)
		}
	}
}

func TestWatchClosedAfterASecondIsNotVeryShort(t *testing.T) {
	h, srv := live(t)
	h.clock.Step(2 * time.Second)
	srv.CloseWatches()
	h.watchStarted() // no error, no backoff
	select {
	case err := <-h.errs:
		t.Errorf("reported %v for a watch that lasted 2s", err)
	default:
	}
}

func TestWatchFromCompactedResourceVersionRelists(t *testing.T) {
	h, srv := live(t)
	lastRV := change(t, h, srv, "cm-00000")

	// The connection drops; while the watcher backs off, the object it has
	// not seen changes and etcd compacts.
	srv.SetFault(func(_ context.Context, req fake.Request) error { return fake.ConnectionRefused() })
	srv.CloseWatches()
	h.expectErr(utilnet.IsConnectionRefused)
	h.backoff(testBackoff.Initial)
	h.expectErr(utilnet.IsConnectionRefused)
	srv.SetFault(nil)
	if _, err := srv.Delete("ns", "cm-00001"); err != nil {
		t.Fatal(err)
	}
	srv.Compact()
	srv.ResetRequests()
	h.backoff(2 * testBackoff.Initial)

	// The server answers the watch with a 410 ERROR event.
	if err := h.err(); !apierrors.IsResourceExpired(err) {
		t.Fatalf("reported %v, want Expired", err)
	}
	h.backoff(4 * testBackoff.Initial)
	startEv, names, done := h.restart()
	if startEv.Reason != Expired || len(names) != 1 || done.ResourceVersion != srv.ResourceVersion() {
		t.Errorf("relist %+v with %v at %s, want Expired with cm-00002 at %s", startEv, names, done.ResourceVersion, srv.ResourceVersion())
	}
	reqs := requests(srv)
	want := metav1.ListOptions{ResourceVersion: lastRV, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 500}
	if len(reqs) < 2 || !sameRequest(reqs[1], "list", want) {
		t.Errorf("requests %+v, want the relist %+v after the watch", reqs, want)
	}
}

func TestExpiredWatchEventRelistsFromLastResourceVersion(t *testing.T) {
	h, srv := live(t)
	lastRV := change(t, h, srv, "cm-00000")
	expired := apierrors.NewResourceExpired("too old resource version")
	srv.SendWatchError(&expired.ErrStatus)
	h.expectErr(apierrors.IsResourceExpired)
	h.backoff(testBackoff.Initial)
	if startEv, _, _ := h.restart(); startEv.Reason != Expired {
		t.Errorf("relist reason %v, want Expired", startEv.Reason)
	}
	want := metav1.ListOptions{ResourceVersion: lastRV, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 500}
	if reqs := requests(srv); !sameRequest(reqs[0], "list", want) {
		t.Errorf("relist request %+v, want %+v", reqs[0], want)
	}
}

func TestRelistFromUnavailableResourceVersionListsFromNewest(t *testing.T) {
	for name, answer := range map[string]error{
		"expired": apierrors.NewResourceExpired("too old resource version"),
		"gone": &apierrors.StatusError{ErrStatus: metav1.Status{ // as servers before 1.18 answered
			Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonGone, Message: "gone",
		}},
		"too large": fake.TooLargeResourceVersion(1000, 10),
	} {
		t.Run(name, func(t *testing.T) {
			h, srv := live(t)
			expired := apierrors.NewResourceExpired("too old resource version")
			srv.SendWatchError(&expired.ErrStatus)
			h.expectErr(apierrors.IsResourceExpired)
			srv.SetFault(func(_ context.Context, req fake.Request) error {
				if req.Verb == "list" && req.Options.ResourceVersion != "" {
					return answer
				}
				return nil
			})
			h.backoff(testBackoff.Initial)
			if err := h.err(); !errors.Is(err, answer) {
				t.Errorf("reported %v, want %v", err, answer)
			}
			// No backoff before the list from "".
			if startEv, names, _ := h.restart(); startEv.Reason != Expired || len(names) != 3 {
				t.Errorf("relist %+v with %d objects, want Expired with 3", startEv, len(names))
			}
			reqs := requests(srv)
			if want := (metav1.ListOptions{Limit: 500}); len(reqs) < 2 || !sameRequest(reqs[1], "list", want) {
				t.Errorf("requests %+v, want the list from \"\" %+v second", reqs, want)
			}
		})
	}
}

func TestExpiredContinueStartsTheListOver(t *testing.T) {
	srv := newServer(t, 30)
	// While the consumer handles the first page, etcd compacts past the
	// list's snapshot.
	compacted := false
	h := startHandled(t, srv, nil, func(_ context.Context, ev Event) error {
		if ev.Type == RestartPage && !compacted {
			compacted = true
			if _, err := srv.Delete("ns", "cm-00029"); err != nil {
				return err
			}
			srv.Compact()
		}
		return nil
	}, WithStrategy(ListWatch), WithPageSize(10))
	h.nextOf(RestartStart)
	h.nextOf(RestartPage)
	if err := h.err(); !apierrors.IsResourceExpired(err) {
		t.Errorf("reported %v, want the continue's Expired", err)
	}
	h.backoff(testBackoff.Initial)
	startEv, names, _ := h.restart()
	if startEv.Reason != ExpiredContinue || len(names) != 29 {
		t.Errorf("restart %+v with %d objects, want ExpiredContinue with 29", startEv, len(names))
	}
	reqs := requests(srv)
	if len(reqs) < 3 || !sameRequest(reqs[2], "list", metav1.ListOptions{Limit: 10}) {
		t.Errorf("requests %+v, want the list to start over with its first page", reqs)
	}
}

// A list slower than the life of its continue token (etcd compacts every 5
// minutes) would expire on every attempt: after the token of the restart an
// expired continue began expires too, the list is one LIST without a limit,
// at once, as client-go's pager falls back to.
func TestExpiredContinueTwiceListsWhole(t *testing.T) {
	srv := newServer(t, 30)
	// The first page of the first two restarts takes longer than the token
	// lives: a write and a compaction go by while the consumer handles it.
	// (Not the third's: the watch from its resourceVersion would answer 410.)
	first, restarts := false, 0
	h := startHandled(t, srv, nil, func(_ context.Context, ev Event) error {
		switch {
		case ev.Type == RestartStart:
			first = true
			restarts++
		case ev.Type == RestartPage && first && restarts <= 2:
			first = false
			if _, err := srv.Create(configMap(100 + restarts)); err != nil {
				return err
			}
			srv.Compact()
		}
		return nil
	}, WithStrategy(ListWatch), WithPageSize(10))
	for i := range 2 {
		h.nextOf(RestartStart)
		h.nextOf(RestartPage)
		if err := h.err(); !apierrors.IsResourceExpired(err) {
			t.Fatalf("attempt %d reported %v, want the continue's Expired", i+1, err)
		}
		if i == 0 {
			h.backoff(testBackoff.Initial)
		}
	}
	select {
	case b := <-h.obs.backoffs:
		t.Fatalf("backed off %v after the second expired continue, want one LIST without a limit at once", b.delay)
	case ev := <-h.events:
		if ev.Type != RestartStart || ev.Reason != ExpiredContinue {
			t.Fatalf("got %+v after the second expired continue, want the RestartStart of an ExpiredContinue restart", ev)
		}
	case <-time.After(guard):
		t.Fatal("nothing happened after the second expired continue")
	}
	if page := h.nextOf(RestartPage); len(page.Objects) != 32 {
		t.Errorf("the restart after two expired continues had a first page of %d objects, want all 32", len(page.Objects))
	}
	h.nextOf(RestartDone)
	h.watchStarted()
	reqs := requests(srv)
	if len(reqs) < 5 || !sameRequest(reqs[4], "list", metav1.ListOptions{}) {
		t.Errorf("requests %+v, want the fifth to be a LIST from \"\" without a limit", reqs)
	}
	select {
	case err := <-h.errs:
		t.Errorf("reported %v after the list without a limit", err)
	default:
	}
}

func TestThrottledListRetriesTheSamePage(t *testing.T) {
	srv := newServer(t, 30)
	calls := 0
	srv.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Options.Continue != "" {
			if calls++; calls == 1 {
				return apierrors.NewTooManyRequests("slow down", 5) // longer than the backoff
			}
			if calls == 2 {
				return apierrors.NewTooManyRequests("slow down", 1) // shorter
			}
		}
		return nil
	})
	h := start(t, srv, nil, WithStrategy(ListWatch), WithPageSize(20))
	h.nextOf(RestartStart)
	h.nextOf(RestartPage)
	h.backoff(5 * time.Second)
	h.backoff(2 * testBackoff.Initial)
	h.nextOf(RestartPage) // the same restart goes on
	h.nextOf(RestartDone)
	reqs := requests(srv)
	if len(reqs) < 4 || reqs[1].Options.Continue == "" || reqs[1] != reqs[2] || reqs[2] != reqs[3] {
		t.Errorf("requests %+v, want the first page, then the same continue request three times", reqs)
	}
}

func TestThrottledOrInternalWatchRetriesTheWatch(t *testing.T) {
	for name, fault := range map[string]error{
		"429":                apierrors.NewTooManyRequests("slow down", 0),
		"connection refused": fake.ConnectionRefused(),
		"500":                apierrors.NewInternalError(errors.New("etcd hiccup")),
	} {
		t.Run(name, func(t *testing.T) {
			h, srv := live(t)
			rv := change(t, h, srv, "cm-00000")
			srv.SetFault(func(context.Context, fake.Request) error { return fault })
			h.clock.Step(2 * time.Second)
			srv.CloseWatches()
			h.expectErr(isErr(fault))
			srv.SetFault(nil)
			srv.ResetRequests()
			h.backoff(testBackoff.Initial)
			h.watchStarted()
			change(t, h, srv, "cm-00001")
			want := metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}
			if reqs := requests(srv); len(reqs) != 1 || !sameRequest(reqs[0], "watch", want) {
				t.Errorf("requests %+v, want one watch %+v", reqs, want)
			}
		})
	}
}

func TestInternalErrorEventRetriesTheWatch(t *testing.T) {
	h, srv := live(t)
	rv := change(t, h, srv, "cm-00000")
	internal := apierrors.NewInternalError(errors.New("etcd hiccup"))
	srv.SendWatchError(&internal.ErrStatus)
	if err := h.err(); !apierrors.IsInternalError(err) {
		t.Errorf("reported %v, want the internal error", err)
	}
	h.backoff(testBackoff.Initial)
	if opts := h.watchStarted(); opts.ResourceVersion != rv {
		t.Errorf("watch again from %s, want %s", opts.ResourceVersion, rv)
	}
	change(t, h, srv, "cm-00001")
}

func TestOtherWatchErrorsRelist(t *testing.T) {
	forbidden := apierrors.NewForbidden(configMaps, "", errors.New("no"))
	for name, inject := range map[string]func(*fake.Server){
		"on open": func(srv *fake.Server) {
			srv.SetFault(func(context.Context, fake.Request) error {
				srv.SetFault(nil)
				return forbidden
			})
			srv.CloseWatches()
		},
		"as an event": func(srv *fake.Server) { srv.SendWatchError(&forbidden.ErrStatus) },
		"as an event without a Status": func(srv *fake.Server) {
			srv.SendWatchEvent(watch.Event{Type: watch.Error, Object: &corev1.ConfigMap{}})
		},
	} {
		t.Run(name, func(t *testing.T) {
			h, srv := live(t)
			h.clock.Step(2 * time.Second) // not a very short watch
			inject(srv)
			err := h.err()
			if name == "as an event without a Status" {
				if !strings.Contains(err.Error(), "*v1.ConfigMap instead of a *v1.Status") {
					t.Errorf("reported %q, want it to name the object it got", err)
				}
			} else if !apierrors.IsForbidden(err) {
				t.Errorf("reported %v, want Forbidden", err)
			}
			h.backoff(testBackoff.Initial)
			if startEv, _, _ := h.restart(); startEv.Reason != Error {
				t.Errorf("relist reason %v, want Error", startEv.Reason)
			}
		})
	}
}

func TestFailedFirstPageKeepsTheRestartReason(t *testing.T) {
	srv := newServer(t, 3)
	calls := 0
	srv.SetFault(func(context.Context, fake.Request) error {
		if calls++; calls == 1 {
			return apierrors.NewServiceUnavailable("starting")
		}
		return nil
	})
	h := start(t, srv, nil, WithStrategy(ListWatch))
	if err := h.err(); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("reported %v, want ServiceUnavailable", err)
	}
	h.backoff(testBackoff.Initial)
	if startEv, _, _ := h.restart(); startEv.Reason != Initial {
		t.Errorf("restart reason %v, want Initial: the consumer never saw the failed attempt", startEv.Reason)
	}
}

func TestFailedContinuePageRestartsWithError(t *testing.T) {
	srv := newServer(t, 30)
	calls := 0
	srv.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Options.Continue != "" {
			if calls++; calls == 1 {
				return apierrors.NewServiceUnavailable("restarting")
			}
		}
		return nil
	})
	h := start(t, srv, nil, WithStrategy(ListWatch), WithPageSize(20))
	h.nextOf(RestartStart)
	h.nextOf(RestartPage)
	h.expectErr(apierrors.IsServiceUnavailable)
	h.backoff(testBackoff.Initial)
	if startEv, names, _ := h.restart(); startEv.Reason != Error || len(names) != 30 {
		t.Errorf("restart %+v with %d objects, want Error with 30", startEv, len(names))
	}
}

func TestConsumerErrorRelistsAfterBackoff(t *testing.T) {
	srv := newServer(t, 3)
	boom := errors.New("boom")
	h := startHandled(t, srv, nil, func(_ context.Context, ev Event) error {
		if ev.Type == RestartDone {
			return boom
		}
		return nil
	}, WithStrategy(ListWatch))
	h.nextOf(RestartStart)
	h.nextOf(RestartPage)
	if err := h.err(); !errors.Is(err, boom) {
		t.Errorf("reported %v, want the consumer's error", err)
	}
	h.setHandle(nil)
	h.backoff(testBackoff.Initial)
	if startEv, _, _ := h.restart(); startEv.Reason != ConsumerError {
		t.Errorf("restart reason %v, want ConsumerError", startEv.Reason)
	}

	// And on a live event.
	h.watchStarted()
	h.setHandle(func(_ context.Context, ev Event) error {
		if ev.Type == Deleted {
			return boom
		}
		return nil
	})
	if _, err := srv.Delete("ns", "cm-00000"); err != nil {
		t.Fatal(err)
	}
	if err := h.err(); !errors.Is(err, boom) {
		t.Errorf("reported %v, want the consumer's error", err)
	}
	h.setHandle(nil)
	h.backoff(2 * testBackoff.Initial)
	if startEv, names, _ := h.restart(); startEv.Reason != ConsumerError || len(names) != 2 {
		t.Errorf("restart %+v with %v, want ConsumerError with 2 objects", startEv, names)
	}
}

// capturedErrors collects what utilruntime.HandleError gets during a test.
func capturedErrors(t *testing.T) <-chan string {
	ch := make(chan string, 100)
	t.Cleanup(errorcapture.Install(func(_ error, msg string) { ch <- msg }))
	return ch
}

// Events of an unknown type are dropped with an error; the watch goes on.
func TestEventsOfUnknownTypeAreDropped(t *testing.T) {
	dropped := capturedErrors(t)
	h, srv := live(t, WithExpectedType(&corev1.ConfigMap{}))
	srv.SendWatchEvent(watch.Event{Type: "SURPRISE", Object: &corev1.ConfigMap{}})
	if _, err := srv.Delete("ns", "cm-00000"); err != nil {
		t.Fatal(err)
	}
	// The next event the consumer gets is the deletion.
	if ev := h.nextOf(Deleted); ev.Object.(*corev1.ConfigMap).Name != "cm-00000" {
		t.Errorf("got %v, want the deletion of cm-00000", ev.Object)
	}
	select {
	case msg := <-dropped:
		if !strings.Contains(msg, "unknown type") {
			t.Errorf("dropped with %q, want %q", msg, "unknown type")
		}
	case <-time.After(guard):
		t.Fatal("no error for a dropped event")
	}
}

// An object of another type ends the watch with ErrUnexpectedObject and a
// relist from the last rv: dropping it would lose the change it stood for.
func TestObjectOfAnotherTypeRelists(t *testing.T) {
	h, srv := live(t, WithExpectedType(&corev1.ConfigMap{}))
	rv := srv.ResourceVersion()
	srv.SendWatchEvent(watch.Event{Type: watch.Added, Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "99"}}})
	h.expectErr(isErr(ErrUnexpectedObject))
	h.backoff(time.Second)
	start, names, done := h.restart()
	if start.Reason != Error || len(names) != 3 || done.ResourceVersion != rv {
		t.Errorf("restart %v of %v at %q, want Error of the 3 objects at %q", start.Reason, names, done.ResourceVersion, rv)
	}
}

// A Table (a ListerWatcher asking for as=Table) is an object of another kind
// even to a watcher that expects no type or kind (a stream's initial events
// go through the same check): client-go's reflector never stores one either.
func TestTableIsAnObjectOfAnotherKind(t *testing.T) {
	h, srv := live(t, WithExpectedType(nil))
	srv.SendWatchEvent(watch.Event{Type: watch.Added, Object: &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "meta.k8s.io/v1beta1", "kind": "Table",
		"metadata": map[string]any{"resourceVersion": "99"},
	}}})
	h.expectErr(isErr(ErrUnexpectedObject))
}

func TestBackoffGrowsToCapAndResetsAfterHealth(t *testing.T) {
	srv := newServer(t, 3)
	var fail atomic.Bool
	fail.Store(true)
	srv.SetFault(func(context.Context, fake.Request) error {
		if fail.Load() {
			return apierrors.NewServiceUnavailable("down")
		}
		return nil
	})
	h := start(t, srv, nil, WithStrategy(ListWatch))
	delays := []time.Duration{1, 2, 4, 8, 8}
	for i, want := range delays {
		h.expectErr(apierrors.IsServiceUnavailable)
		if i == len(delays)-1 {
			fail.Store(false) // read by the next request, after this backoff
		}
		h.backoff(want * time.Second)
	}
	h.restart()
	h.watchStarted()

	// A minute of health later, a failure backs off from the start.
	h.clock.Step(testBackoff.ResetAfter)
	internal := apierrors.NewInternalError(errors.New("etcd hiccup"))
	srv.SendWatchError(&internal.ErrStatus)
	h.expectErr(apierrors.IsInternalError)
	h.backoff(testBackoff.Initial)
}

func TestCancelStopsRunPromptly(t *testing.T) {
	blockList := func(ctx context.Context, req fake.Request) error {
		if req.Verb == "list" {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	for name, reach := range map[string]func(t *testing.T) *harness{
		"in a backoff": func(t *testing.T) *harness {
			srv := newServer(t, 3)
			srv.SetFault(func(context.Context, fake.Request) error { return apierrors.NewServiceUnavailable("down") })
			h := start(t, srv, nil, WithStrategy(ListWatch))
			<-h.obs.backoffs
			return h
		},
		"in a LIST": func(t *testing.T) *harness {
			srv := newServer(t, 3)
			entered := make(chan struct{})
			srv.SetFault(func(ctx context.Context, req fake.Request) error {
				close(entered)
				return blockList(ctx, req)
			})
			h := start(t, srv, nil, WithStrategy(ListWatch))
			<-entered
			return h
		},
		"in Handle": func(t *testing.T) *harness {
			srv := newServer(t, 3)
			entered := make(chan struct{})
			h := startHandled(t, srv, nil, func(ctx context.Context, _ Event) error {
				close(entered)
				<-ctx.Done()
				return ctx.Err()
			}, WithStrategy(ListWatch))
			<-entered
			return h
		},
		"waiting for watch events": func(t *testing.T) *harness {
			h, _ := live(t)
			return h
		},
		"streaming initial events": func(t *testing.T) *harness {
			srv := newServer(t, 3)
			h := start(t, srv, selectorLW{srv.ListerWatcher()}, WithStrategy(StreamingList), WithPageSize(1))
			h.nextOf(RestartStart)
			return h
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := reach(t)
			h.stop() // fails the test unless Run returns; goleak checks the rest
			if n := h.srv.OpenWatches(); n != 0 {
				t.Errorf("%d watches still open after Run returned", n)
			}
		})
	}
}

// Without an error handler, the watcher logs as errors only the failures a
// user must act on (Decision.Notify), as client-go's default watch error
// handler does; the others at the level client-go logs them.
func TestWithoutErrorHandlerOnlyNotifiedFailuresAreErrors(t *testing.T) {
	logged := capturedErrors(t)
	srv := newServer(t, 3)
	h := startHarness(t, srv, nil, nil, false, WithStrategy(ListWatch))
	h.restart()
	h.watchStarted()
	h.clock.Step(2 * time.Second) // not a very short watch
	refused := func(ctx context.Context, req fake.Request) error {
		srv.SetFault(nil)
		return fake.ConnectionRefused()
	}
	srv.SetFault(refused)
	srv.CloseWatches()
	h.backoff(testBackoff.Initial)
	h.watchStarted()
	change(t, h, srv, "cm-00000")
	select {
	case msg := <-logged:
		t.Fatalf("a refused watch open was logged as an error: %q", msg)
	default:
	}

	forbidden := apierrors.NewForbidden(configMaps, "", errors.New("no"))
	srv.SetFault(func(context.Context, fake.Request) error {
		srv.SetFault(nil)
		return forbidden
	})
	h.clock.Step(2 * time.Second)
	srv.CloseWatches()
	select {
	case msg := <-logged:
		if msg != "List and watch failed" {
			t.Errorf("logged %q for a forbidden watch", msg)
		}
	case <-time.After(guard):
		t.Fatal("a forbidden watch open was not logged as an error")
	}
}
