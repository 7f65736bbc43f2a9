package listerwatcher

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
)

// notifiedConsumer records restart events and RestartPending calls in the
// order the watcher made them.
type notifiedConsumer struct {
	mu  sync.Mutex
	log []string
}

func (c *notifiedConsumer) Handle(_ context.Context, ev Event) error {
	if ev.Type == RestartStart || ev.Type == RestartDone {
		c.record(ev.Type.String())
	}
	return nil
}

func (c *notifiedConsumer) RestartPending() { c.record("pending") }

func (c *notifiedConsumer) record(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, s)
}

func (c *notifiedConsumer) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// A RestartNotifier hears of each relist before the relist's first request
// (so also of one whose requests all fail), and of nothing else: not of the
// initial list, not of a watch opened again from the same resourceVersion.
func TestRestartNotifierHearsOfEachRelist(t *testing.T) {
	srv := newServer(t, 3)
	fast := Backoff{Initial: time.Millisecond, Factor: 2, Cap: 10 * time.Millisecond, ResetAfter: time.Minute}
	w, err := New(srv.ListerWatcher(), WithBackoff(fast))
	if err != nil {
		t.Fatal(err)
	}
	c := &notifiedConsumer{}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx, c); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	defer func() { cancel(); <-done }()

	want := []string{"RestartStart", "RestartDone"}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; consumer saw [%s]", what, strings.Join(c.snapshot(), " "))
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	sawWant := func() bool { return slices.Equal(c.snapshot(), want) }
	watches := func() int {
		n := 0
		for _, r := range srv.Requests() {
			if r.Verb == "watch" {
				n++
			}
		}
		return n
	}
	waitFor("the initial list", func() bool { return sawWant() && srv.OpenWatches() == 1 })

	// Watches that end and open again from the same resourceVersion.
	n := watches()
	srv.CloseWatches()
	waitFor("a watch after a clean close", func() bool { return watches() > n && srv.OpenWatches() == 1 })
	n = watches()
	srv.SendWatchError(&metav1.Status{Status: metav1.StatusFailure, Code: 500, Message: "etcd hiccup"})
	waitFor("a watch after a 500", func() bool { return watches() > n && srv.OpenWatches() == 1 })
	if got := c.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("after watches that resumed: [%s], want [%s]", strings.Join(got, " "), strings.Join(want, " "))
	}

	// A 410 and a requested relist each restart, announced before their
	// RestartStart.
	srv.SendWatchError(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired})
	want = append(want, "pending", "RestartStart", "RestartDone")
	waitFor("the relist after a 410", func() bool { return sawWant() && srv.OpenWatches() == 1 })
	w.Relist()
	want = append(want, "pending", "RestartStart", "RestartDone")
	waitFor("the requested relist", sawWant)
}
