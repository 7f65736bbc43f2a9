package listerwatcher

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// FuzzWatcherAgainstServer plays a random history on the fake API server
// (creates, updates, deletes, compactions) mixed with faults (closed watches,
// 410 and 500 ERROR events, failed LIST and WATCH requests of every kind,
// consumer errors) while a Watcher feeds a consumer that rebuilds the
// collection from its events alone. The consumer also checks the event
// protocol: pages and RestartDone only inside a restart, live events only
// after one, each live event consistent with the state it rebuilt and never
// older than what it has. Whenever the input asks, and at the end with the
// faults gone, the rebuilt collection must equal the server's.
//
// Run it with: go test -run '^$' -fuzz FuzzWatcherAgainstServer ./pkg/listerwatcher/
func FuzzWatcherAgainstServer(f *testing.F) {
	for _, seed := range watcherSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		newWatcherFuzz(t, data).run()
	})
}

// The ops of a fuzz input. An input is a header byte (bits 0-1: strategy,
// bits 2-3: page size) and a byte of initial objects, then ops with their
// operands.
const (
	opCreate        = iota // name byte (an update if it exists)
	opUpdate               // name byte
	opDelete               // name byte
	opCloseWatches         // no operand
	opExpiredEvent         // no operand: a 410 ERROR event on open watches
	opInternalEvent        // no operand: a 500 ERROR event on open watches
	opCompact              // no operand: compacts the fake server's history
	opFailRequest          // fault byte: the next LIST or WATCH fails
	opBookmark             // no operand
	opFailConsumer         // no operand: the consumer fails its next event
	opSync                 // no operand: wait until the consumer caught up
	numWatcherOps
)

var watcherSeeds = [][]byte{
	// ListWatch in pages of 2: live changes, closed watches resumed from the
	// last resourceVersion, a bookmark
	{1 | 1<<2, 5, opSync, opCreate, 9, opUpdate, 1, opSync, opCloseWatches, opDelete, 2, opSync,
		opBookmark, opUpdate, 3, opCloseWatches, opSync},
	// StreamingList: ERROR events (410 relists, 500 rewatches), bookmarks
	{2 | 1<<2, 4, opSync, opUpdate, 0, opExpiredEvent, opCreate, 7, opSync, opInternalEvent, opBookmark, opDelete, 1, opSync},
	// Auto: failed requests of each kind while the collection changes
	{0, 3, opSync, opFailRequest, 0x10, opFailRequest, 0x11, opCloseWatches, opSync, opFailRequest, 0x12, opFailRequest, 0x13,
		opExpiredEvent, opFailRequest, 4, opFailRequest, 5, opFailRequest, 6, opCreate, 5, opCompact, opCloseWatches, opSync},
	// ListWatch in pages of 1: an expired continue token, compaction, and
	// consumer errors
	{1 | 2<<2, 5, opSync, opFailRequest, 0x20, opExpiredEvent, opSync, opCompact, opFailConsumer, opUpdate, 2, opSync,
		opFailConsumer, opExpiredEvent, opSync},
	// one LIST of everything (page size 0), failures during the initial list
	{1, 6, opFailRequest, 3, opFailConsumer, opCreate, 10, opDelete, 0, opSync, opFailRequest, 0x14, opCloseWatches, opSync},
}

// maxWatcherOps bounds an input's length.
const maxWatcherOps = 100

var fuzzPageSizes = [4]int64{0, 2, 1, 5}

// syncBound bounds every wait for the watcher to catch up, so that a bug
// fails the input instead of hanging it (the fuzzing engine kills an input
// that runs 10s); with millisecond backoffs a healthy watcher needs far less.
const syncBound = 3 * time.Second

type watcherFuzz struct {
	t        *testing.T
	data     []byte
	strategy Strategy
	pageSize int64
	srv      *fake.Server
	faults   faultQueue
	c        *rebuilder
	watches  watchCounter
	// watchesEnded is the number of watches started when an op last ended
	// the open watches: sync waits for a later one.
	watchesEnded int64
}

// watchCounter counts the watches the watcher opened.
type watchCounter struct {
	NoopObserver
	started atomic.Int64
}

func (c *watchCounter) WatchStarted(metav1.ListOptions) { c.started.Add(1) }

func newWatcherFuzz(t *testing.T, data []byte) *watcherFuzz {
	z := &watcherFuzz{t: t, data: data}
	header := z.next()
	z.strategy = []Strategy{Auto, ListWatch, StreamingList, ListWatch}[header&3]
	z.pageSize = fuzzPageSizes[(header>>2)&3]
	return z
}

func (z *watcherFuzz) next() byte {
	if len(z.data) == 0 {
		return 0
	}
	b := z.data[0]
	z.data = z.data[1:]
	return b
}

func (z *watcherFuzz) run() {
	t := z.t
	z.srv = fake.NewServer(&corev1.ConfigMapList{}, fake.WithoutRequestLog())
	defer z.srv.Close()
	if err := z.srv.CreateN(int(z.next())%7, func(i int) runtime.Object { return fuzzConfigMap(i, "initial") }); err != nil {
		t.Fatal(err)
	}
	z.srv.SetFault(z.faults.take)

	w, err := New(z.srv.ListerWatcher(),
		WithStrategy(z.strategy),
		WithPageSize(z.pageSize),
		WithBackoff(Backoff{Initial: time.Millisecond, Factor: 2, Cap: 4 * time.Millisecond, ResetAfter: time.Minute}),
		WithErrorHandler(func(context.Context, error) {}),
		WithObserver(&z.watches),
	)
	if err != nil {
		t.Fatal(err)
	}
	z.c = newRebuilder()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, z.c) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	for i := 0; i < maxWatcherOps && len(z.data) > 0; i++ {
		z.step(i)
	}
	// With no fault left, the watcher must converge on the server's state.
	z.faults.clear()
	z.c.failNext.Store(false)
	z.sync("the end")
}

func (z *watcherFuzz) step(i int) {
	t := z.t
	switch op := z.next() % numWatcherOps; op {
	case opCreate, opUpdate, opDelete:
		b := z.next()
		name := fmt.Sprintf("cm-%05d", b%12)
		exists := z.exists(name)
		var err error
		switch {
		case op == opDelete && exists:
			_, err = z.srv.Delete("ns", name)
		case op == opDelete:
		case exists:
			_, err = z.srv.Update(fuzzConfigMap(int(b%12), strconv.Itoa(i)))
		default:
			_, err = z.srv.Create(fuzzConfigMap(int(b%12), strconv.Itoa(i)))
		}
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	case opCloseWatches:
		z.watchesEnded = z.watches.started.Load()
		z.srv.CloseWatches()
	case opExpiredEvent:
		z.watchesEnded = z.watches.started.Load()
		z.srv.SendWatchError(&apierrors.NewResourceExpired("too old resource version (injected)").ErrStatus)
	case opInternalEvent:
		z.watchesEnded = z.watches.started.Load()
		z.srv.SendWatchError(&apierrors.NewInternalError(errors.New("etcd hiccup (injected)")).ErrStatus)
	case opCompact:
		z.srv.Compact()
	case opFailRequest:
		z.faults.add(z.requestFault(z.next()))
	case opBookmark:
		z.srv.SendBookmark()
	case opFailConsumer:
		z.c.failNext.Store(true)
	case opSync:
		z.sync(fmt.Sprintf("op %d", i))
	}
}

// requestFault decodes a fault byte: bit 4 picks the verb (watch or list),
// bit 5 limits a list fault to continue pages, bits 0-3 pick the error.
func (z *watcherFuzz) requestFault(b byte) queuedFault {
	verb := "list"
	if b&0x10 != 0 {
		verb = "watch"
	}
	continued := verb == "list" && b&0x20 != 0
	var err error
	switch b & 0x0f % 7 {
	case 0:
		err = apierrors.NewResourceExpired("the resourceVersion or continue token has expired (injected)")
	case 1:
		err = apierrors.NewTooManyRequests("slow down (injected)", 0)
	case 2:
		err = apierrors.NewInternalError(errors.New("injected"))
	case 3:
		err = fake.ConnectionRefused()
	case 4:
		rv, _ := strconv.ParseUint(z.srv.ResourceVersion(), 10, 64)
		tooLarge := fake.TooLargeResourceVersion(rv+1, rv)
		// Without its one-second Retry-After, so that an input runs in
		// milliseconds: the fuzzing engine gives up on one after 10s.
		tooLarge.ErrStatus.Details.RetryAfterSeconds = 0
		err = tooLarge
	case 5:
		err = apierrors.NewServiceUnavailable("injected")
	case 6:
		err = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("injected"))
	}
	return queuedFault{verb: verb, continued: continued, err: err}
}

func (z *watcherFuzz) exists(name string) bool {
	_, ok := z.serverState()["ns/"+name]
	return ok
}

// serverState is key -> resourceVersion of a LIST the faults do not touch.
func (z *watcherFuzz) serverState() map[string]string {
	z.t.Helper()
	list, err := z.srv.ListerWatcher().ListWithContext(context.WithValue(context.Background(), verifying{}, true), metav1.ListOptions{})
	if err != nil {
		z.t.Fatal(err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		z.t.Fatal(err)
	}
	out := make(map[string]string, len(items))
	for _, obj := range items {
		cm := obj.(*corev1.ConfigMap)
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return out
}

// sync waits until the consumer's collection equals the server's and the
// watcher watches again if an op ended its watch, and fails on a protocol
// violation.
func (z *watcherFuzz) sync(when string) {
	t := z.t
	t.Helper()
	deadline := time.Now().Add(syncBound)
	for {
		if v := z.c.violation(); v != "" {
			t.Fatalf("%s (%v, page size %d): %s", when, z.strategy, z.pageSize, v)
		}
		want, got := z.serverState(), z.c.state()
		if maps.Equal(want, got) && z.watches.started.Load() > z.watchesEnded && z.srv.OpenWatches() > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (%v, page size %d): the consumer rebuilt %v, the server holds %v; %d watches started (%d when watches last ended), %d open; pending faults %v; the last events:\n  %s",
				when, z.strategy, z.pageSize, got, want, z.watches.started.Load(), z.watchesEnded, z.srv.OpenWatches(), z.faults.pending(), strings.Join(z.c.recentEvents(), "\n  "))
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func fuzzConfigMap(i int, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%05d", i)},
		Data:       map[string]string{"value": value},
	}
}

// verifying marks the test's own requests, which faults leave alone.
type verifying struct{}

type queuedFault struct {
	verb      string
	continued bool // only a LIST with a continue token
	err       error
}

// faultQueue fails the next requests of the queued verbs, in order.
type faultQueue struct {
	mu     sync.Mutex
	queued []queuedFault
}

func (q *faultQueue) add(f queuedFault) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queued = append(q.queued, f)
}

func (q *faultQueue) take(ctx context.Context, req fake.Request) error {
	if ctx.Value(verifying{}) != nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, f := range q.queued {
		if f.verb == req.Verb && (!f.continued || req.Options.Continue != "") {
			q.queued = append(q.queued[:i], q.queued[i+1:]...)
			return f.err
		}
	}
	return nil
}

func (q *faultQueue) clear() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queued = nil
}

func (q *faultQueue) pending() []queuedFault {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]queuedFault(nil), q.queued...)
}

// rebuilder is a Consumer that rebuilds the collection (key ->
// resourceVersion) from the events alone and records the first breach of the
// event protocol.
type rebuilder struct {
	failNext atomic.Bool

	mu        sync.Mutex
	live      map[string]string
	buffer    map[string]string // nil outside a restart
	restarted bool              // a restart has completed
	lastRV    uint64
	broken    string
	// recent holds the last events, to say what led to a breach.
	recent []string
}

func newRebuilder() *rebuilder { return &rebuilder{live: map[string]string{}} }

var errInjectedConsumer = errors.New("the consumer fails (injected)")

func (c *rebuilder) Handle(_ context.Context, ev Event) error {
	if c.failNext.Swap(false) {
		return errInjectedConsumer
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remember(ev)
	if err := c.apply(ev); err != nil && c.broken == "" {
		c.broken = fmt.Sprintf("%v event: %v; the last events:\n  %s", ev.Type, err, strings.Join(c.recent, "\n  "))
	}
	return nil
}

const recentEvents = 30

func (c *rebuilder) remember(ev Event) {
	desc := ev.Type.String()
	switch ev.Type {
	case RestartStart:
		desc += fmt.Sprintf(" %v %v", ev.Strategy, ev.Reason)
	case RestartPage:
		for _, obj := range ev.Objects {
			cm := obj.(*corev1.ConfigMap)
			desc += fmt.Sprintf(" %s@%s", cm.Name, cm.ResourceVersion)
		}
	case Added, Modified, Deleted:
		desc += fmt.Sprintf(" %s@%s", ev.Object.(*corev1.ConfigMap).Name, ev.ResourceVersion)
	default:
		desc += " @" + ev.ResourceVersion
	}
	if len(c.recent) == recentEvents {
		c.recent = c.recent[1:]
	}
	c.recent = append(c.recent, desc)
}

func (c *rebuilder) apply(ev Event) error {
	switch ev.Type {
	case RestartStart:
		c.buffer = map[string]string{} // a restart in progress is dropped
		return nil
	case RestartPage:
		if c.buffer == nil {
			return errors.New("outside a restart")
		}
		if len(ev.Objects) == 0 {
			return errors.New("an empty page")
		}
		for _, obj := range ev.Objects {
			cm := obj.(*corev1.ConfigMap)
			k := cm.Namespace + "/" + cm.Name
			if _, dup := c.buffer[k]; dup {
				return fmt.Errorf("%s twice in one restart", k)
			}
			c.buffer[k] = cm.ResourceVersion
		}
		return nil
	case RestartDone:
		if c.buffer == nil {
			return errors.New("outside a restart")
		}
		rv, err := c.notOlder(ev.ResourceVersion)
		if err != nil {
			return err
		}
		c.live, c.buffer, c.restarted, c.lastRV = c.buffer, nil, true, rv
		return nil
	}

	if c.buffer != nil || !c.restarted {
		return errors.New("a live event inside or before a restart")
	}
	rv, err := c.notOlder(ev.ResourceVersion)
	if err != nil {
		return err
	}
	if ev.Type == Bookmark {
		c.lastRV = rv
		return nil
	}
	if rv == c.lastRV {
		return fmt.Errorf("resourceVersion %d again", rv)
	}
	cm := ev.Object.(*corev1.ConfigMap)
	if cm.ResourceVersion != ev.ResourceVersion {
		return fmt.Errorf("event resourceVersion %s, object's %s", ev.ResourceVersion, cm.ResourceVersion)
	}
	k := cm.Namespace + "/" + cm.Name
	_, held := c.live[k]
	switch {
	case ev.Type == Added && held:
		return fmt.Errorf("%s added, but it exists", k)
	case ev.Type != Added && !held:
		return fmt.Errorf("%s changed, but it does not exist", k)
	}
	if ev.Type == Deleted {
		delete(c.live, k)
	} else {
		c.live[k] = cm.ResourceVersion
	}
	c.lastRV = rv
	return nil
}

// notOlder parses rv and checks that it does not go back in time.
func (c *rebuilder) notOlder(s string) (uint64, error) {
	rv, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("resourceVersion %q: %w", s, err)
	}
	if rv < c.lastRV {
		return 0, fmt.Errorf("resourceVersion %d is older than %d, which the consumer has", rv, c.lastRV)
	}
	return rv, nil
}

func (c *rebuilder) state() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.live)
}

func (c *rebuilder) recentEvents() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recent)
}

func (c *rebuilder) violation() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}

// TestFakeCompactionDuringInitialEvents is the fuzz target's first finding,
// distilled: the fake server reads a streaming watch's initial state lazily at
// the watch's snapshot, so Compact must keep the versions that snapshot sees
// (a real API server streams the initial events from its watch cache, which
// compaction does not touch). When it dropped them, a key changed after the
// snapshot and before the stream reached it was left out of the initial
// events, and the watcher then got a MODIFIED event for an object it was
// never given.
func TestFakeCompactionDuringInitialEvents(t *testing.T) {
	const n = 300 // more than the fake reads per batch, so the tail is read after Compact
	srv := newServer(t, n)
	snap := srv.ResourceVersion()
	w, err := srv.ListerWatcher().Watch(metav1.ListOptions{
		SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	last := configMap(n - 1).(*corev1.ConfigMap)
	if _, err := srv.Update(last); err != nil {
		t.Fatal(err)
	}
	srv.Compact()

	initial := map[string]bool{}
	for ev := range w.ResultChan() {
		m, err := meta.Accessor(ev.Object)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == watch.Bookmark {
			if m.GetResourceVersion() != snap {
				t.Fatalf("initial events end at %s, want the snapshot %s", m.GetResourceVersion(), snap)
			}
			break
		}
		initial[m.GetName()] = true
	}
	if len(initial) != n || !initial[last.Name] {
		t.Fatalf("the initial events hold %d objects (%s: %v), want the %d of the snapshot", len(initial), last.Name, initial[last.Name], n)
	}
}
