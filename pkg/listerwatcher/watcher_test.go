package listerwatcher

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

func TestNewRejectsNilListerWatcher(t *testing.T) {
	var nilListWatch *toolscache.ListWatch
	for name, lw := range map[string]toolscache.ListerWatcher{"nil": nil, "typed nil": nilListWatch} {
		if _, err := New(lw); err == nil || !strings.Contains(err.Error(), "ListerWatcher is nil") {
			t.Errorf("%s: New returned %v, want an error saying the ListerWatcher is nil", name, err)
		}
	}
}

func TestNewValidatesOptions(t *testing.T) {
	lw := fake.NewServer(&corev1.ConfigMapList{}).ListerWatcher()
	for name, tc := range map[string]struct {
		opt  Option
		want string
	}{
		"strategy":      {WithStrategy(Strategy(9)), "unknown strategy"},
		"page size":     {WithPageSize(-1), "page size -1 is negative"},
		"factor":        {WithBackoff(Backoff{Initial: time.Second, Factor: 0.5, Cap: time.Second}), "Factor 0.5 is below 1"},
		"zero initial":  {WithBackoff(Backoff{Factor: 1}), "Initial 0s is not positive"},
		"NaN factor":    {WithBackoff(Backoff{Initial: time.Second, Factor: math.NaN(), Cap: time.Second}), "Factor NaN is not finite"},
		"NaN jitter":    {WithBackoff(Backoff{Initial: time.Second, Factor: 2, Cap: time.Second, Jitter: math.NaN()}), "Jitter NaN is not finite"},
		"inf jitter":    {WithBackoff(Backoff{Initial: time.Second, Factor: 2, Cap: time.Second, Jitter: math.Inf(1)}), "Jitter +Inf is not finite"},
		"cap":           {WithBackoff(Backoff{Initial: time.Second, Factor: 2, Cap: time.Millisecond}), "Cap 1ms is below Initial 1s"},
		"watch timeout": {WithMinWatchTimeout(time.Millisecond), "minimum watch timeout 1ms"},
		"idle timeout":  {WithStreamingIdleTimeout(0), "streaming idle timeout 0s is not positive"},
		"fallback TTL":  {WithFallbackTTL(-time.Second), "fallback TTL -1s is negative"},
		"observer":      {WithObserver(nil), "observer is nil"},
		"clock":         {WithClock(nil), "clock is nil"},
	} {
		if _, err := New(lw, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New returned %v, want an error containing %q", name, err, tc.want)
		}
	}
}

func TestRunRejectsNilConsumerAndSecondRun(t *testing.T) {
	srv := newServer(t, 1)
	h := start(t, srv, nil)
	h.restart()
	if err := h.w.Run(context.Background(), nil); err == nil {
		t.Error("Run(nil consumer) returned nil, want an error")
	}
	if err := h.w.Run(context.Background(), ConsumerFunc(func(context.Context, Event) error { return nil })); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Run returned %v, want an error saying it is already running", err)
	}
	h.stop()
	// Once stopped, it runs again.
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	err := h.w.Run(ctx, ConsumerFunc(func(context.Context, Event) error { cancel(); return nil }))
	if err != nil {
		t.Errorf("Run after a stop returned %v", err)
	}
}

func TestExpectedKindOfUnstructured(t *testing.T) {
	example := &unstructured.Unstructured{}
	example.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	w, err := New(fake.NewServer(&corev1.ConfigMapList{}).ListerWatcher(), WithExpectedType(example))
	if err != nil {
		t.Fatal(err)
	}
	m := &machine{Watcher: w}
	other := example.DeepCopy()
	other.SetKind("Gadget")
	for _, tc := range []struct {
		obj  runtime.Object
		want bool
	}{
		{example.DeepCopy(), true},
		{other, false},
		{&corev1.ConfigMap{}, false},
	} {
		err := m.unexpected(tc.obj)
		if got := err == nil; got != tc.want || err != nil && !errors.Is(err, ErrUnexpectedObject) {
			t.Errorf("unexpected(%v) = %v, want accepted %v", tc.obj, err, tc.want)
		}
	}
}

func TestObserverSeesRequests(t *testing.T) {
	srv := newServer(t, 30)
	rec := &countingObserver{}
	h := start(t, srv, nil, WithStrategy(ListWatch), WithPageSize(20), WithObserver(rec))
	h.restart()
	if _, err := srv.Delete("ns", "cm-00000"); err != nil {
		t.Fatal(err)
	}
	h.nextOf(Deleted)
	srv.CloseWatches()
	if _, err := srv.Delete("ns", "cm-00001"); err != nil {
		t.Fatal(err)
	}
	h.nextOf(Deleted)
	h.stop()
	if want := []int{20, 10}; len(rec.items) != 2 || rec.items[0] != want[0] || rec.items[1] != want[1] {
		t.Errorf("observed LISTs of %v items, want %v", rec.items, want)
	}
	if rec.started != 2 || len(rec.ended) != 2 || rec.ended[0] != 1 || rec.ended[1] != 1 {
		t.Errorf("observed %d watches started, ended with %v events, want 2 started, each ended after 1 event", rec.started, rec.ended)
	}
}

type countingObserver struct {
	NoopObserver
	items   []int
	started int
	ended   []int
}

func (o *countingObserver) ListRequest(_ metav1.ListOptions, items int, _ time.Duration, err error) {
	o.items = append(o.items, items)
}
func (o *countingObserver) WatchStarted(metav1.ListOptions)            { o.started++ }
func (o *countingObserver) WatchEnded(_ time.Duration, n int, _ error) { o.ended = append(o.ended, n) }

func TestEventTypeAndStrategyNames(t *testing.T) {
	if got := RestartDone.String(); got != "RestartDone" {
		t.Errorf("RestartDone.String() = %q", got)
	}
	if got := EventType(42).String(); got != "EventType(42)" {
		t.Errorf("EventType(42).String() = %q", got)
	}
	if got := StreamingList.String(); got != "StreamingList" {
		t.Errorf("StreamingList.String() = %q", got)
	}
}
