package informer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/leaninformer/leaninformer/pkg/intern"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

func TestOptionDefaults(t *testing.T) {
	fakeClock := clocktesting.NewFakeClock(time.Now())
	otherMetrics := metrics.New()
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	backoff := Backoff{Initial: time.Second, Factor: 3, Cap: time.Minute, Jitter: 0.1, ResetAfter: time.Hour}
	// What an informer gets without options, spelled out.
	defaults := config{
		strategy:    Auto,
		backoff:     Backoff{Initial: 800 * time.Millisecond, Factor: 2, Cap: 30 * time.Second, Jitter: 1, ResetAfter: 2 * time.Minute},
		relistReuse: true,
		clock:       clock.RealClock{},
		metrics:     metrics.Default,
		syncWarning: 30 * time.Second,
		scheme:      defaultScheme,
	}
	for _, tc := range []struct {
		name string
		opts []Option
		want func(*config)
	}{
		{name: "no options", want: func(*config) {}},
		{name: "strategy", opts: []Option{WithStrategy(ListWatch)}, want: func(c *config) { c.strategy = ListWatch }},
		{name: "later options win", opts: []Option{WithPageSize(10), WithStrategy(StreamingList), WithPageSize(20)},
			want: func(c *config) { c.pageSize, c.strategy = new(int64(20)), StreamingList }},
		{name: "one page of everything", opts: []Option{WithPageSize(0)}, want: func(c *config) { c.pageSize = new(int64(0)) }},
		{name: "backoff", opts: []Option{WithBackoff(backoff)}, want: func(c *config) { c.backoff = backoff }},
		{name: "relist reuse off", opts: []Option{WithRelistReuse(false)}, want: func(c *config) { c.relistReuse = false }},
		{name: "clock", opts: []Option{WithClock(fakeClock)}, want: func(c *config) { c.clock = fakeClock }},
		{name: "other metrics", opts: []Option{WithMetrics(otherMetrics)}, want: func(c *config) { c.metrics = otherMetrics }},
		{name: "no metrics", opts: []Option{WithMetrics(nil)}, want: func(c *config) { c.metrics = nil }},
		{name: "resource", opts: []Option{WithResource(gvr)}, want: func(c *config) { c.resource = &gvr }},
		{name: "no sync warning", opts: []Option{WithSyncWarningAfter(0)}, want: func(c *config) { c.syncWarning = 0 }},
		{name: "interning", opts: []Option{WithInterning()}, want: func(c *config) { c.interner = intern.Default() }},
		{name: "encoded store", opts: []Option{WithEncodedStore()}, want: func(c *config) { c.encoded = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := defaults
			tc.want(&want)
			got, err := newConfig(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := ValidateOptions(tc.opts...); err != nil {
				t.Fatalf("ValidateOptions: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("config\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// Without WithPageSize the watcher sizes the pages: a relist of 10,000
// objects fits client-go's default rate-limit burst (10 requests) with its
// watch; WithPageSize(500) makes it 20 LISTs.
func TestInformerSizesItsPagesUnlessTold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []Option
		lists func(n int) bool
	}{
		{"sized", nil, func(n int) bool { return n > 1 && n <= 8 }},
		{"WithPageSize(500)", []Option{WithPageSize(500)}, func(n int) bool { return n == 20 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, 10_000)
			inf := NewSharedIndexInformerWithOptions(s.ListerWatcher(), &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{},
				append([]Option{WithStrategy(ListWatch), WithMetrics(nil)}, tc.opts...)...)
			run(t, inf)
			waitSynced(t, inf)
			lists := 0
			for _, req := range s.Requests() {
				if req.Verb == "list" {
					lists++
				}
			}
			if !tc.lists(lists) {
				t.Errorf("the informer listed 10,000 objects in %d LISTs", lists)
			}
		})
	}
}

// invalidOptions are options an informer cannot work with, and a part of
// the error each must cause: the option's name.
var invalidOptions = []struct {
	name string
	opt  Option
	want string
}{
	{"nil option", nil, "option 0 is nil"},
	{"unknown strategy", WithStrategy(Strategy(7)), "WithStrategy: unknown strategy Strategy(7)"},
	{"negative page size", WithPageSize(-1), "WithPageSize: page size -1 is negative"},
	{"backoff factor below 1", WithBackoff(Backoff{Initial: time.Second, Factor: 0.5, Cap: time.Second}), "WithBackoff: backoff Factor 0.5 is below 1"},
	{"backoff cap below initial", WithBackoff(Backoff{Initial: time.Second, Factor: 2, Cap: time.Millisecond}), "WithBackoff: backoff Cap 1ms is below Initial 1s"},
	{"nil clock", WithClock(nil), "WithClock: the clock is nil"},
	{"resource without name", WithResource(schema.GroupVersionResource{Group: "apps", Version: "v1"}), `WithResource: "apps/v1, Resource=" names no resource`},
	{"negative sync warning", WithSyncWarningAfter(-time.Second), "WithSyncWarningAfter: -1s is negative"},
	{"nil watcher option", WithWatcherOptions(nil), "WithWatcherOptions: option 0 is nil"},
	{"invalid watcher option", WithWatcherOptions(listerwatcher.WithMinWatchTimeout(time.Millisecond)), "WithWatcherOptions: listerwatcher.New: minimum watch timeout 1ms"},
	{"nil observer", WithWatcherOptions(listerwatcher.WithObserver(nil)), "WithWatcherOptions: listerwatcher.New: observer is nil"},
	{"nil codec option", WithEncodedStore(nil), "WithEncodedStore: codec option 0 is nil"},
}

func TestInvalidOptionsAreRejectedNamingTheOption(t *testing.T) {
	for _, tc := range invalidOptions {
		t.Run(tc.name, func(t *testing.T) {
			if err := ValidateOptions(tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ValidateOptions: %v, want an error containing %q", err, tc.want)
			}
			if _, err := NewCacheWith(tc.opt)(&rest.Config{Host: "https://unused.invalid"}, crcache.Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewCacheWith's function: %v, want an error containing %q", err, tc.want)
			}
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
						t.Errorf("NewSharedIndexInformerWithOptions panicked with %v, want a panic containing %q", r, tc.want)
					}
				}()
				NewSharedIndexInformerWithOptions(&toolscache.ListWatch{}, &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{}, tc.opt)
			}()
		})
	}
}

// Options that set different things are all reported at once.
func TestEveryInvalidOptionIsReported(t *testing.T) {
	err := ValidateOptions(
		WithPageSize(-1),
		nil,
		WithStrategy(Strategy(7)),
		WithBackoff(Backoff{Initial: time.Second, Factor: 0.5, Cap: time.Second}),
		WithClock(nil),
		WithResource(schema.GroupVersionResource{}),
		WithSyncWarningAfter(-time.Second),
		WithWatcherOptions(listerwatcher.WithMinWatchTimeout(time.Millisecond), listerwatcher.WithObserver(nil)),
	)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"WithPageSize:", "option 1 is nil", "WithStrategy:", "WithBackoff:", "WithClock:", "WithResource:",
		"WithSyncWarningAfter:", "minimum watch timeout 1ms", "observer is nil",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// An observer and an error handler given through WithWatcherOptions are
// called in addition to the informer's own: its metrics and its watch error
// handler keep working.
func TestWatcherObserverAndErrorHandlerAddToTheInformers(t *testing.T) {
	s := newServer(t, 3)
	var failed sync.Once
	s.SetFault(func(_ context.Context, req fake.Request) (err error) {
		if req.Verb == "list" {
			failed.Do(func() {
				err = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no"))
			})
		}
		return err
	})
	m := metrics.New()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	userObserver := &listCounter{}
	userErrs := make(chan error, 10)
	inf := newInformer(s, 0, WithStrategy(ListWatch), WithMetrics(m), WithWatcherOptions(
		listerwatcher.WithObserver(userObserver),
		listerwatcher.WithErrorHandler(func(_ context.Context, err error) { userErrs <- err }),
	))
	handlerErrs := make(chan error, 10)
	if err := inf.SetWatchErrorHandler(func(_ *toolscache.Reflector, err error) { handlerErrs <- err }); err != nil {
		t.Fatal(err)
	}
	stop := run(t, inf)
	waitSynced(t, inf)
	stop()

	for name, ch := range map[string]chan error{"the user's error handler": userErrs, "the watch error handler": handlerErrs} {
		select {
		case err := <-ch:
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s got %v, want the Forbidden list", name, err)
			}
		default:
			t.Errorf("%s was not called", name)
		}
	}
	errorsSeen := gathered(t, reg, "leaninformer_list_requests_total", map[string]string{"resource": "configmaps", "result": "error"})
	successes := gathered(t, reg, "leaninformer_list_requests_total", map[string]string{"resource": "configmaps", "result": "success"})
	if errorsSeen != 1 || successes < 1 {
		t.Errorf("list_requests_total: %v errors, %v successes; want 1 and at least 1 (the informer's observer)", errorsSeen, successes)
	}
	if got := userObserver.lists(); got != int(errorsSeen+successes) {
		t.Errorf("the user's observer saw %d LISTs, the metrics %v", got, errorsSeen+successes)
	}
}

// listCounter is an Observer that counts LIST requests.
type listCounter struct {
	listerwatcher.NoopObserver
	mu sync.Mutex
	n  int
}

func (c *listCounter) ListRequest(metav1.ListOptions, int, time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
}

func (c *listCounter) lists() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// WithResource labels one informer; given to NewCacheWith it would label
// every informer of the cache alike, so that the gauges of all types added
// up in one series. NewCacheWith refuses it.
func TestNewCacheWithRefusesWithResource(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	_, err := NewCacheWith(WithResource(gvr))(&rest.Config{Host: "https://unused.invalid"}, crcache.Options{})
	if err == nil || !strings.Contains(err.Error(), "labels each of its informers with its own resource") {
		t.Fatalf("NewCacheWith(WithResource(%s)): %v, want an error saying why", gvr, err)
	}
}
