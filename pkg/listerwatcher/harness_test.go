package listerwatcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// guard bounds every wait of a test for the watcher, so that a bug fails the
// test instead of hanging it. It is never part of an assertion.
const guard = 10 * time.Second

// testBackoff has no jitter, so that tests can assert exact delays.
var testBackoff = Backoff{Initial: time.Second, Factor: 2, Cap: 8 * time.Second, ResetAfter: time.Minute}

// harness runs a Watcher on a fake clock and records what it does. The
// consumer hands each event to the test and returns at once (unless the test
// set handle), so events queue up in order on h.events.
type harness struct {
	t      *testing.T
	srv    *fake.Server
	clock  *clocktesting.FakeClock
	w      *Watcher
	events chan Event
	errs   chan error
	obs    *recorder
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	handle func(ctx context.Context, ev Event) error
}

// newServer returns a fake server with n ConfigMaps, closed at test end.
func newServer(t *testing.T, n int, opts ...fake.Option) *fake.Server {
	t.Helper()
	srv := fake.NewServer(&corev1.ConfigMapList{}, opts...)
	t.Cleanup(srv.Close)
	if err := srv.CreateN(n, configMap); err != nil {
		t.Fatal(err)
	}
	return srv
}

func configMap(i int) runtime.Object {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%05d", i)},
		Data:       map[string]string{"index": fmt.Sprint(i)},
	}
}

// start runs a Watcher on lw (the server's when nil) with the test backoff,
// a fake clock and opts, until the test ends.
func start(t *testing.T, srv *fake.Server, lw toolscache.ListerWatcher, opts ...Option) *harness {
	t.Helper()
	return startHandled(t, srv, lw, nil, opts...)
}

// startHandled is start with handle called on every event before the test
// gets it; an error from handle is the consumer's error.
func startHandled(t *testing.T, srv *fake.Server, lw toolscache.ListerWatcher, handle func(context.Context, Event) error, opts ...Option) *harness {
	t.Helper()
	return startHarness(t, srv, lw, handle, true, opts...)
}

// startHarness is startHandled; with record false the harness sets no error
// handler (h.errs stays empty), so that the watcher logs failures itself.
func startHarness(t *testing.T, srv *fake.Server, lw toolscache.ListerWatcher, handle func(context.Context, Event) error, record bool, opts ...Option) *harness {
	t.Helper()
	h := &harness{
		handle: handle,
		t:      t,
		srv:    srv,
		clock:  clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		events: make(chan Event, 100_000),
		errs:   make(chan error, 1000),
		obs:    newRecorder(),
		done:   make(chan struct{}),
	}
	if lw == nil {
		lw = srv.ListerWatcher()
	}
	defaults := []Option{WithBackoff(testBackoff), WithClock(h.clock), WithObserver(h.obs)}
	if record {
		defaults = append(defaults, WithErrorHandler(func(_ context.Context, err error) { h.errs <- err }))
	}
	opts = append(defaults, opts...)
	w, err := New(lw, opts...)
	if err != nil {
		t.Fatal(err)
	}
	h.w = w
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	h.cancel = cancel
	go func() {
		defer close(h.done)
		if err := w.Run(ctx, ConsumerFunc(h.consume)); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) consume(ctx context.Context, ev Event) error {
	ev.Objects = slices.Clone(ev.Objects) // the watcher reuses the slice
	h.mu.Lock()
	handle := h.handle
	h.mu.Unlock()
	if handle != nil {
		if err := handle(ctx, ev); err != nil {
			return err
		}
	}
	h.events <- ev
	return nil
}

func (h *harness) setHandle(f func(ctx context.Context, ev Event) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handle = f
}

// stop cancels Run and waits for it to return.
func (h *harness) stop() {
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(guard):
		h.t.Fatal("Run did not return after its context ended")
	}
}

// next returns the next event the consumer got.
func (h *harness) next() Event {
	h.t.Helper()
	select {
	case ev := <-h.events:
		return ev
	case <-time.After(guard):
		h.t.Fatal("no event")
		return Event{}
	}
}

// nextOf returns the next event and fails unless it has type typ.
func (h *harness) nextOf(typ EventType) Event {
	h.t.Helper()
	ev := h.next()
	if ev.Type != typ {
		h.t.Fatalf("got a %v event (%+v), want %v", ev.Type, ev, typ)
	}
	return ev
}

// skipTo drops events until one of type typ, and returns it.
func (h *harness) skipTo(typ EventType) Event {
	h.t.Helper()
	for {
		if ev := h.next(); ev.Type == typ {
			return ev
		}
	}
}

// restart reads one whole restart and returns its start, the names of its
// objects in order, and its done event.
func (h *harness) restart() (startEv Event, names []string, done Event) {
	h.t.Helper()
	startEv = h.nextOf(RestartStart)
	for {
		ev := h.next()
		switch ev.Type {
		case RestartPage:
			for _, obj := range ev.Objects {
				names = append(names, obj.(*corev1.ConfigMap).Name)
			}
		case RestartDone:
			return startEv, names, ev
		default:
			h.t.Fatalf("got a %v event inside a restart", ev.Type)
		}
	}
}

// pages reads one whole restart and returns the size of each page.
func (h *harness) pages() (startEv Event, sizes []int, done Event) {
	h.t.Helper()
	startEv = h.nextOf(RestartStart)
	for {
		ev := h.next()
		switch ev.Type {
		case RestartPage:
			sizes = append(sizes, len(ev.Objects))
		case RestartDone:
			return startEv, sizes, ev
		default:
			h.t.Fatalf("got a %v event inside a restart", ev.Type)
		}
	}
}

// err returns the next error reported to the error handler.
func (h *harness) err() error {
	h.t.Helper()
	select {
	case err := <-h.errs:
		return err
	case <-time.After(guard):
		h.t.Fatal("no error reported")
		return nil
	}
}

// expectErr reads the next reported error and fails unless match(err).
func (h *harness) expectErr(match func(error) bool) {
	h.t.Helper()
	if err := h.err(); !match(err) {
		h.t.Errorf("reported %v, not the error expected", err)
	}
}

// isErr returns a matcher of target for expectErr.
func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// backoff waits until the watcher backs off, checks the delay and lets the
// fake clock run through it.
func (h *harness) backoff(want time.Duration) {
	h.t.Helper()
	select {
	case b := <-h.obs.backoffs:
		if b.delay != want {
			h.t.Fatalf("backed off %v after %v, want %v", b.delay, b.err, want)
		}
		h.clock.Step(b.delay)
	case <-time.After(guard):
		h.t.Fatal("the watcher did not back off")
	}
}

// watchStarted waits until a watch opened and returns its options.
func (h *harness) watchStarted() metav1.ListOptions {
	h.t.Helper()
	select {
	case opts := <-h.obs.watches:
		return opts
	case <-time.After(guard):
		h.t.Fatal("no watch opened")
		return metav1.ListOptions{}
	}
}

// idleUntil keeps advancing the fake clock by d while the watcher waits on
// it, until got returns true: the watcher may re-arm a timer between two
// events, so one step is not enough to be sure it expires while idle.
func (h *harness) idleUntil(d time.Duration, got func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(guard)
	for !got() {
		if time.Now().After(deadline) {
			h.t.Fatal("the watcher never gave up waiting")
		}
		if h.clock.HasWaiters() {
			h.clock.Step(d)
		}
		time.Sleep(time.Millisecond)
	}
}

// fallback returns the error of the next StrategyFallback.
func (h *harness) fallback() error {
	h.t.Helper()
	select {
	case err := <-h.obs.fallbacks:
		return err
	case <-time.After(guard):
		h.t.Fatal("no fallback")
		return nil
	}
}

// poll returns a function reporting whether ch has a value, storing it in v.
func poll[T any](ch <-chan T, v *T) func() bool {
	return func() bool {
		select {
		case *v = <-ch:
			return true
		default:
			return false
		}
	}
}

// requests returns the server's request log without the options no test
// looks at, so that tests can compare whole requests.
func requests(srv *fake.Server) []fake.Request {
	reqs := srv.Requests()
	for i := range reqs {
		reqs[i].Options.TimeoutSeconds = nil
	}
	return reqs
}

type backoffCall struct {
	delay time.Duration
	err   error
}

// recorder is an Observer that records into channels the tests read.
type recorder struct {
	NoopObserver
	backoffs  chan backoffCall
	watches   chan metav1.ListOptions
	fallbacks chan error

	mu    sync.Mutex
	lists []metav1.ListOptions
	ended []error
}

func newRecorder() *recorder {
	return &recorder{
		backoffs:  make(chan backoffCall, 1000),
		watches:   make(chan metav1.ListOptions, 1000),
		fallbacks: make(chan error, 1000),
	}
}

func (r *recorder) ListRequest(opts metav1.ListOptions, _ int, _ time.Duration, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists = append(r.lists, opts)
}
func (r *recorder) WatchStarted(opts metav1.ListOptions) { r.watches <- opts }
func (r *recorder) WatchEnded(_ time.Duration, _ int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, err)
}
func (r *recorder) StrategyFallback(err error)         { r.fallbacks <- err }
func (r *recorder) Backoff(d time.Duration, err error) { r.backoffs <- backoffCall{d, err} }
