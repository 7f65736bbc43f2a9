package fake

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/ptr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// guard bounds waits for watch events so that a bug fails instead of hangs.
const guard = 10 * time.Second

func cm(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Data:       map[string]string{"v": "1"},
	}
}

func newServer(t *testing.T, names ...string) *Server {
	t.Helper()
	s := NewServer(&corev1.ConfigMapList{})
	t.Cleanup(s.Close)
	for _, name := range names {
		if _, err := s.Create(cm(name)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func list(t *testing.T, s *Server, opts metav1.ListOptions) *corev1.ConfigMapList {
	t.Helper()
	obj, err := s.ListerWatcher().ListWithContext(context.Background(), opts)
	if err != nil {
		t.Fatalf("list %+v: %v", opts, err)
	}
	return obj.(*corev1.ConfigMapList)
}

func names(l *corev1.ConfigMapList) []string {
	var out []string
	for _, item := range l.Items {
		out = append(out, item.Name)
	}
	return out
}

func TestNewServerRejectsNonLists(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewServer(&corev1.ConfigMap{}) did not panic")
		}
	}()
	NewServer(&corev1.ConfigMap{})
}

func TestCreateUpdateDelete(t *testing.T) {
	s := newServer(t)
	created, err := s.Create(cm("a"))
	if err != nil {
		t.Fatal(err)
	}
	a := created.(*corev1.ConfigMap)
	if a.UID == "" || a.ResourceVersion != s.ResourceVersion() || a.CreationTimestamp.IsZero() {
		t.Errorf("created %+v, want a UID, the server's resourceVersion %s and a creation time", a.ObjectMeta, s.ResourceVersion())
	}
	if _, err := s.Create(cm("a")); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}

	a.Data["v"] = "2"
	updated, err := s.Update(a)
	if err != nil {
		t.Fatal(err)
	}
	u := updated.(*corev1.ConfigMap)
	if u.UID != a.UID || u.ResourceVersion <= a.ResourceVersion || u.Data["v"] != "2" {
		t.Errorf("updated %+v, want the same UID, a newer resourceVersion and the new data", u)
	}
	if _, err := s.Update(a); !apierrors.IsConflict(err) {
		t.Errorf("update with a stale resourceVersion: %v, want Conflict", err)
	}
	a.Data["v"] = "mutated after update"
	if got := list(t, s, metav1.ListOptions{}).Items[0].Data["v"]; got != "2" {
		t.Errorf("stored data %q: the server kept the caller's object instead of a copy", got)
	}

	deleted, err := s.Delete("ns", "a")
	if err != nil {
		t.Fatal(err)
	}
	if d := deleted.(*corev1.ConfigMap); d.ResourceVersion != s.ResourceVersion() || d.Data["v"] != "2" {
		t.Errorf("deleted %+v, want the last state at the deletion's resourceVersion %s", d, s.ResourceVersion())
	}
	if _, err := s.Delete("ns", "a"); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: %v, want NotFound", err)
	}
	if _, err := s.Update(cm("a")); !apierrors.IsNotFound(err) {
		t.Errorf("update of a deleted object: %v, want NotFound", err)
	}
	if _, err := s.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x"}}); err == nil {
		t.Error("a ConfigMap server stored a Secret")
	}
	if s.Len() != 0 {
		t.Errorf("Len %d, want 0", s.Len())
	}
}

func TestListPagesInKeyOrder(t *testing.T) {
	s := newServer(t, "c", "a", "e", "b", "d") // out of order
	var got []string
	opts := metav1.ListOptions{Limit: 2}
	pages := 0
	for {
		l := list(t, s, opts)
		pages++
		if l.ResourceVersion != s.ResourceVersion() {
			t.Errorf("page resourceVersion %s, want %s", l.ResourceVersion, s.ResourceVersion())
		}
		got = append(got, names(l)...)
		if l.Continue == "" {
			break
		}
		opts = metav1.ListOptions{Limit: 2, Continue: l.Continue}
	}
	if want := []string{"a", "b", "c", "d", "e"}; !reflect.DeepEqual(got, want) || pages != 3 {
		t.Errorf("listed %v in %d pages, want %v in 3", got, pages, want)
	}
	if l := list(t, s, metav1.ListOptions{Limit: 5}); l.Continue != "" {
		t.Errorf("a page holding the rest has continue %q", l.Continue)
	}
}

func TestListSaysHowManyObjectsRemain(t *testing.T) {
	s := newServer(t, "a", "b", "c", "d", "e")
	old := s.ResourceVersion()
	if _, err := s.Delete("ns", "e"); err != nil {
		t.Fatal(err)
	}
	remaining := func(l *corev1.ConfigMapList) any {
		if l.RemainingItemCount == nil {
			return nil
		}
		return *l.RemainingItemCount
	}
	var got []any
	for opts := (metav1.ListOptions{Limit: 2}); ; {
		l := list(t, s, opts)
		got = append(got, remaining(l))
		if l.Continue == "" {
			break
		}
		opts = metav1.ListOptions{Limit: 2, Continue: l.Continue}
	}
	if want := []any{int64(2), nil}; !reflect.DeepEqual(got, want) {
		t.Errorf("remainingItemCount of the pages of 4 objects by 2: %v, want %v (none on the last page)", got, want)
	}
	// The count is the snapshot's: the deleted object is still there at old.
	if l := list(t, s, metav1.ListOptions{ResourceVersion: old, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: 1}); remaining(l) != int64(4) {
		t.Errorf("remainingItemCount of a page of 1 at resourceVersion %s: %v, want 4", old, remaining(l))
	}
	for _, opts := range []metav1.ListOptions{{Limit: 1, LabelSelector: "app=x"}, {Limit: 1, FieldSelector: "metadata.name=a"}} {
		if l := list(t, s, opts); l.RemainingItemCount != nil {
			t.Errorf("remainingItemCount %d with selectors %+v, want none: the API server cannot count what they filter", *l.RemainingItemCount, opts)
		}
	}
}

func TestListContinueReadsTheFirstPageSnapshot(t *testing.T) {
	s := newServer(t, "a", "b", "c", "d")
	first := list(t, s, metav1.ListOptions{Limit: 2})
	snapshot := first.ResourceVersion

	d := list(t, s, metav1.ListOptions{}).Items[3]
	d.Data["v"] = "changed"
	if _, err := s.Update(&d); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete("ns", "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(cm("e")); err != nil {
		t.Fatal(err)
	}

	rest := list(t, s, metav1.ListOptions{Limit: 10, Continue: first.Continue})
	if got := names(rest); !reflect.DeepEqual(got, []string{"c", "d"}) {
		t.Errorf("second page %v, want [c d] as of resourceVersion %s", got, snapshot)
	}
	if rest.Items[1].Data["v"] != "1" || rest.ResourceVersion != snapshot {
		t.Errorf("second page at %s with d=%q, want d's old state at %s", rest.ResourceVersion, rest.Items[1].Data["v"], snapshot)
	}
}

func TestListResourceVersionSemantics(t *testing.T) {
	s := newServer(t, "a", "b", "c")
	old := s.ResourceVersion()
	if _, err := s.Delete("ns", "a"); err != nil {
		t.Fatal(err)
	}
	if got := names(list(t, s, metav1.ListOptions{ResourceVersion: "0", Limit: 1})); len(got) != 2 {
		t.Errorf("resourceVersion 0 with limit 1 listed %v, want everything (the watch cache ignores the limit)", got)
	}
	notOlder := list(t, s, metav1.ListOptions{ResourceVersion: old, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 10})
	if notOlder.ResourceVersion != s.ResourceVersion() || len(notOlder.Items) != 2 {
		t.Errorf("NotOlderThan %s listed %v at %s, want the newest state", old, names(notOlder), notOlder.ResourceVersion)
	}
	exact := list(t, s, metav1.ListOptions{ResourceVersion: old, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if exact.ResourceVersion != old || len(exact.Items) != 3 {
		t.Errorf("Exact %s listed %v at %s, want the 3 objects then", old, names(exact), exact.ResourceVersion)
	}

	lw := s.ListerWatcher()
	for name, tc := range map[string]struct {
		opts  metav1.ListOptions
		check func(error) bool
	}{
		"too large": {metav1.ListOptions{ResourceVersion: "1000", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			func(err error) bool {
				return apierrors.IsTimeout(err) && apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
			}},
		"match with continue":   {metav1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Continue: "x"}, apierrors.IsInvalid},
		"version with continue": {metav1.ListOptions{ResourceVersion: "5", Continue: encodeContinue(2, 1, "a")}, apierrors.IsBadRequest},
		"match without version": {metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, apierrors.IsInvalid},
		"send initial events":   {metav1.ListOptions{SendInitialEvents: ptr.To(true)}, apierrors.IsInvalid},
		"bad continue":          {metav1.ListOptions{Continue: "!!"}, apierrors.IsBadRequest},
		"bad resource version":  {metav1.ListOptions{ResourceVersion: "x"}, apierrors.IsBadRequest},
		"exact and zero":        {metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, apierrors.IsInvalid},
		"unknown match":         {metav1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: "Newest"}, apierrors.IsInvalid},
	} {
		if _, err := lw.ListWithContext(context.Background(), tc.opts); !tc.check(err) {
			t.Errorf("%s: %v, not the API server's answer", name, err)
		}
	}
}

func TestCompactExpiresOldVersionsAndContinueTokens(t *testing.T) {
	s := newServer(t, "a", "b", "c")
	old := s.ResourceVersion()
	first := list(t, s, metav1.ListOptions{Limit: 1})
	if _, err := s.Delete("ns", "b"); err != nil {
		t.Fatal(err)
	}
	s.Compact()

	lw := s.ListerWatcher()
	if _, err := lw.List(metav1.ListOptions{Limit: 1, Continue: first.Continue}); !apierrors.IsResourceExpired(err) {
		t.Errorf("continue from before the compaction: %v, want Expired", err)
	}
	if _, err := lw.List(metav1.ListOptions{ResourceVersion: old, ResourceVersionMatch: metav1.ResourceVersionMatchExact}); !apierrors.IsResourceExpired(err) {
		t.Errorf("exact list at a compacted resourceVersion: %v, want Expired", err)
	}
	w, err := lw.Watch(metav1.ListOptions{ResourceVersion: old})
	if err != nil {
		t.Fatal(err)
	}
	ev := receive(t, w)
	if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		t.Errorf("watch from a compacted resourceVersion sent %v %v, want an Expired ERROR event", ev.Type, ev.Object)
	}
	expectClosed(t, w)
	if got := names(list(t, s, metav1.ListOptions{})); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Errorf("listed %v after the compaction, want [a c]", got)
	}
}

// etcd3's store answers a compacted continue token with a 410 whose Status
// carries a token that goes on after the same key at the newest
// resourceVersion (handleCompactedErrorForPaging).
func TestCompactedContinueOffersInconsistentContinue(t *testing.T) {
	s := newServer(t, "a", "b", "c")
	first := list(t, s, metav1.ListOptions{Limit: 1})
	if _, err := s.Delete("ns", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(cm("d")); err != nil {
		t.Fatal(err)
	}
	s.Compact()
	_, err := s.ListerWatcher().ListWithContext(context.Background(), metav1.ListOptions{Limit: 1, Continue: first.Continue})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("continue from before the compaction: %v, want Expired", err)
	}
	st := err.(apierrors.APIStatus).Status()
	if st.Continue == "" {
		t.Fatalf("410 for a compacted continue token has no ListMeta.Continue (message %q)", st.Message)
	}
	if st.Message != inconsistentContinue {
		t.Errorf("message %q, want the API server's %q", st.Message, inconsistentContinue)
	}
	next := list(t, s, metav1.ListOptions{Limit: 1, Continue: st.Continue})
	if got := names(next); !reflect.DeepEqual(got, []string{"c"}) || next.ResourceVersion != s.ResourceVersion() ||
		next.RemainingItemCount == nil || *next.RemainingItemCount != 1 {
		t.Errorf("inconsistent continue listed %v at %s remaining %v, want [c] at the newest %s with 1 remaining",
			got, next.ResourceVersion, next.RemainingItemCount, s.ResourceVersion())
	}
	last := list(t, s, metav1.ListOptions{Limit: 1, Continue: next.Continue})
	if got := names(last); !reflect.DeepEqual(got, []string{"d"}) || last.Continue != "" || last.ResourceVersion != next.ResourceVersion {
		t.Errorf("next page %v at %s (continue %q), want [d] at %s, the end", got, last.ResourceVersion, last.Continue, next.ResourceVersion)
	}
}

func receive(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch closed")
		}
		return ev
	case <-time.After(guard):
		t.Fatal("no watch event")
		return watch.Event{}
	}
}

func expectClosed(t *testing.T, w watch.Interface) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("got %v, want the watch to close", ev.Type)
		}
	case <-time.After(guard):
		t.Fatal("the watch did not close")
	}
}

// describe renders an event as "TYPE name@rv" for comparisons.
func describe(ev watch.Event) string {
	if ev.Type == watch.Error {
		return "ERROR"
	}
	c := ev.Object.(*corev1.ConfigMap)
	s := fmt.Sprintf("%s %s@%s", ev.Type, c.Name, c.ResourceVersion)
	if c.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
		s += " end"
	}
	return s
}

func events(t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	var out []string
	for range n {
		out = append(out, describe(receive(t, w)))
	}
	return out
}

func openWatch(t *testing.T, s *Server, opts metav1.ListOptions) watch.Interface {
	t.Helper()
	w, err := s.ListerWatcher().WatchWithContext(context.Background(), opts)
	if err != nil {
		t.Fatalf("watch %+v: %v", opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}

func TestWatchResourceVersionSemantics(t *testing.T) {
	for name, tc := range map[string]struct {
		opts metav1.ListOptions
		want []string
	}{
		"replay after a resourceVersion": {metav1.ListOptions{ResourceVersion: "2"}, []string{"ADDED a@3", "DELETED b@4", "ADDED c@5"}},
		"synthetic state from empty":     {metav1.ListOptions{}, []string{"ADDED a@3", "ADDED c@5"}},
		"synthetic state from 0":         {metav1.ListOptions{ResourceVersion: "0", AllowWatchBookmarks: true}, []string{"ADDED a@3", "ADDED c@5"}},
		"streamed state and end bookmark": {
			metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true},
			[]string{"ADDED a@3", "BOOKMARK @4 end", "ADDED c@5"}},
		"streamed state without bookmarks": {
			metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			[]string{"ADDED a@3", "ADDED c@5"}},
		"streamed state from a resourceVersion": {
			metav1.ListOptions{ResourceVersion: "2", SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true},
			[]string{"ADDED a@3", "BOOKMARK @4 end", "ADDED c@5"}},
		"no initial events from empty": {
			metav1.ListOptions{SendInitialEvents: ptr.To(false), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			[]string{"ADDED c@5"}},
		"streamed state from a future resourceVersion": {
			metav1.ListOptions{ResourceVersion: "99", SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true},
			[]string{"ERROR"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, "b", "a")                    // b@2, a@3
			if _, err := s.Delete("ns", "b"); err != nil { // @4
				t.Fatal(err)
			}
			w := openWatch(t, s, tc.opts)
			if _, err := s.Create(cm("c")); err != nil { // @5
				t.Fatal(err)
			}
			if got := events(t, w, len(tc.want)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("events %v, want %v", got, tc.want)
			}
		})
	}
}

// A plain watch from a resourceVersion the server has not reached yet stays
// open and sends what comes after it, as the watch cache does (only a
// sendInitialEvents=true watch waits for the resourceVersion and fails with
// "Too large resource version").
func TestWatchFromFutureResourceVersionStaysOpen(t *testing.T) {
	s := newServer(t, "a", "b") // rv 3
	w := openWatch(t, s, metav1.ListOptions{ResourceVersion: "5", AllowWatchBookmarks: true})
	// A bookmark at 3, older than the watch's resourceVersion: not sent.
	s.SendBookmark()
	for _, n := range []string{"c", "d", "e"} { // rv 4, 5, 6
		if _, err := s.Create(cm(n)); err != nil {
			t.Fatal(err)
		}
	}
	s.SendBookmark() // @6
	if got, want := events(t, w, 2), []string{"ADDED e@6", "BOOKMARK @6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events of a watch from future resourceVersion 5: %v, want %v", got, want)
	}
}

func TestWatchListFromFutureResourceVersionIsTooLarge(t *testing.T) {
	s := newServer(t, "a")
	w := openWatch(t, s, metav1.ListOptions{ResourceVersion: "99", SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	ev := receive(t, w)
	if err := apierrors.FromObject(ev.Object); ev.Type != watch.Error || !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Errorf("watch list from future resourceVersion 99 sent %v %v, want a Too large resource version ERROR", ev.Type, ev.Object)
	}
	expectClosed(t, w)
}

// The API server ends a watch after its timeoutSeconds by closing the stream,
// with no ERROR event; reflectors rely on it to rotate their watches.
func TestWatchEndsAfterTimeoutSeconds(t *testing.T) {
	s := newServer(t, "a")
	start := time.Now()
	w := openWatch(t, s, metav1.ListOptions{ResourceVersion: s.ResourceVersion(), TimeoutSeconds: ptr.To[int64](1)})
	if _, err := s.Create(cm("b")); err != nil {
		t.Fatal(err)
	}
	if got := describe(receive(t, w)); got != "ADDED b@3" {
		t.Errorf("first event %s, want ADDED b@3", got)
	}
	expectClosed(t, w)
	if d := time.Since(start); d < time.Second {
		t.Errorf("watch with timeoutSeconds=1 ended after %v", d)
	}
	if n := s.OpenWatches(); n != 0 {
		t.Errorf("%d open watches after the timeout, want 0", n)
	}
	untimed := openWatch(t, s, metav1.ListOptions{ResourceVersion: s.ResourceVersion(), TimeoutSeconds: ptr.To[int64](0)})
	if _, err := s.Create(cm("c")); err != nil {
		t.Fatal(err)
	}
	if got := describe(receive(t, untimed)); got != "ADDED c@4" {
		t.Errorf("watch with timeoutSeconds=0: first event %s, want ADDED c@4", got)
	}
}

func TestWatchValidation(t *testing.T) {
	s := newServer(t)
	lw := s.ListerWatcher()
	for name, opts := range map[string]metav1.ListOptions{
		"send initial events without match": {SendInitialEvents: ptr.To(true)},
		"match without send initial events": {ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
		"exact match":                       {SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchExact},
	} {
		if _, err := lw.Watch(opts); !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want Invalid", name, err)
		}
	}
}

func TestWithoutWatchListIgnoresSendInitialEvents(t *testing.T) {
	s := NewServer(&corev1.ConfigMapList{}, WithoutWatchList())
	t.Cleanup(s.Close)
	if _, err := s.Create(cm("a")); err != nil {
		t.Fatal(err)
	}
	w := openWatch(t, s, metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if _, err := s.Create(cm("b")); err != nil {
		t.Fatal(err)
	}
	if got, want := events(t, w, 2), []string{"ADDED a@2", "ADDED b@3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events %v, want %v: synthetic state, no end bookmark", got, want)
	}
	lw := s.ListerWatcher()
	lw.WatchListUnsupported = true
	if !watchlist.DoesClientNotSupportWatchListSemantics(lw) || watchlist.DoesClientNotSupportWatchListSemantics(s.ListerWatcher()) {
		t.Error("WatchListUnsupported does not say what client-go asks")
	}
}

func TestWatchFaults(t *testing.T) {
	s := newServer(t, "a")
	plain := openWatch(t, s, metav1.ListOptions{ResourceVersion: s.ResourceVersion()})
	withBookmarks := openWatch(t, s, metav1.ListOptions{ResourceVersion: s.ResourceVersion(), AllowWatchBookmarks: true})

	s.SendBookmark()
	s.SendWatchEvent(watch.Event{Type: watch.Added, Object: &corev1.Secret{}})
	if ev := receive(t, withBookmarks); ev.Type != watch.Bookmark || ev.Object.(*corev1.ConfigMap).ResourceVersion != s.ResourceVersion() {
		t.Errorf("got %v %v, want a bookmark at %s", ev.Type, ev.Object, s.ResourceVersion())
	}
	for _, w := range []watch.Interface{plain, withBookmarks} {
		if ev := receive(t, w); ev.Type != watch.Added || reflect.TypeOf(ev.Object) != reflect.TypeFor[*corev1.Secret]() {
			t.Errorf("got %v %T, want the injected Secret (and no bookmark without allowWatchBookmarks)", ev.Type, ev.Object)
		}
	}

	gone := apierrors.NewResourceExpired("gone")
	s.SendWatchError(&gone.ErrStatus)
	for _, w := range []watch.Interface{plain, withBookmarks} {
		if ev := receive(t, w); ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
			t.Errorf("got %v %v, want the Expired ERROR", ev.Type, ev.Object)
		}
		expectClosed(t, w)
	}

	w := openWatch(t, s, metav1.ListOptions{ResourceVersion: s.ResourceVersion()})
	if s.OpenWatches() != 1 {
		t.Errorf("%d open watches, want 1", s.OpenWatches())
	}
	s.CloseWatches()
	expectClosed(t, w)

	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.ListerWatcher().WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: s.ResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	expectClosed(t, w)
	w.Stop()
}

// A change committed after CloseWatches reaches none of the watches it
// closed, nor a watch that was being opened when it ran: tests that cut the
// watches and then change the server rely on clients learning of the change
// only by listing again.
func TestCloseWatchesDropsLaterChanges(t *testing.T) {
	s := newServer(t, "a")
	for i := range 100 {
		w := openWatch(t, s, metav1.ListOptions{ResourceVersion: s.ResourceVersion()})
		s.CloseWatches()
		if s.OpenWatches() != 0 {
			t.Fatalf("%d open watches after CloseWatches, want 0", s.OpenWatches())
		}
		update := cm("a")
		update.Data["v"] = fmt.Sprint(i)
		if _, err := s.Update(update); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, w)
	}

	// The fault hook runs once the watch is admitted, before it is
	// registered: the watch's connection drops with the others.
	s.SetFault(func(_ context.Context, req Request) error {
		if req.Verb == "watch" {
			s.CloseWatches()
		}
		return nil
	})
	w := openWatch(t, s, metav1.ListOptions{ResourceVersion: s.ResourceVersion()})
	s.SetFault(nil)
	if _, err := s.Update(cm("a")); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, w)
}

func TestFaultHookAndRequestLog(t *testing.T) {
	s := newServer(t, "a")
	throttled := apierrors.NewTooManyRequests("slow down", 3)
	s.SetFault(func(_ context.Context, req Request) error {
		if req.Verb == "watch" {
			return throttled
		}
		return nil
	})
	lw := s.ListerWatcher()
	if _, err := lw.List(metav1.ListOptions{Limit: 7}); err != nil {
		t.Errorf("list: %v", err)
	}
	if _, err := lw.Watch(metav1.ListOptions{TimeoutSeconds: ptr.To[int64](300)}); !errors.Is(err, throttled) {
		t.Errorf("watch: %v, want the injected 429", err)
	}
	want := []Request{{Verb: "list", Options: metav1.ListOptions{Limit: 7}}, {Verb: "watch", Options: metav1.ListOptions{TimeoutSeconds: ptr.To[int64](300)}}}
	if got := s.Requests(); !reflect.DeepEqual(got, want) {
		t.Errorf("requests %+v, want %+v", got, want)
	}
	s.ResetRequests()
	if len(s.Requests()) != 0 {
		t.Error("ResetRequests left requests")
	}

	quiet := NewServer(&corev1.ConfigMapList{}, WithoutRequestLog())
	defer quiet.Close()
	if _, err := quiet.ListerWatcher().List(metav1.ListOptions{}); err != nil || len(quiet.Requests()) != 0 {
		t.Errorf("list on a server without request log: %v, logged %v", err, quiet.Requests())
	}
}

func TestCloseEndsWatchesAndRefusesRequests(t *testing.T) {
	s := NewServer(&corev1.ConfigMapList{})
	w, err := s.ListerWatcher().Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	expectClosed(t, w)
	if _, err := s.ListerWatcher().List(metav1.ListOptions{}); !utilnet.IsConnectionRefused(err) {
		t.Errorf("list after Close: %v, want connection refused", err)
	}
}

func TestCreateNLoadsInOneGo(t *testing.T) {
	s := newServer(t)
	err := s.CreateN(1000, func(i int) runtime.Object { return cm(fmt.Sprintf("cm-%04d", 999-i)) })
	if err != nil {
		t.Fatal(err)
	}
	l := list(t, s, metav1.ListOptions{Limit: 3})
	if got := names(l); !reflect.DeepEqual(got, []string{"cm-0000", "cm-0001", "cm-0002"}) || s.Len() != 1000 {
		t.Errorf("first page %v of %d objects, want cm-0000..2 of 1000", got, s.Len())
	}
	if err := s.CreateN(1, func(int) runtime.Object { return cm("cm-0000") }); !apierrors.IsAlreadyExists(err) {
		t.Errorf("CreateN of an existing name: %v, want AlreadyExists", err)
	}
}

// Close waits for the watches it ends, so nothing of the server runs after
// it returns. A request a Fault hook holds while Close runs must not be
// served once the hook lets it go (its pump would start after Close had
// returned, outside the wait): it is refused, as every request after Close.
func TestCloseRefusesRequestsItOvertook(t *testing.T) {
	for _, verb := range []string{"watch", "list"} {
		t.Run(verb, func(t *testing.T) {
			s := NewServer(&corev1.ConfigMapList{})
			if _, err := s.Create(cm("a")); err != nil {
				t.Fatal(err)
			}
			entered, release := make(chan struct{}), make(chan struct{})
			s.SetFault(func(context.Context, Request) error {
				close(entered)
				<-release
				return nil
			})
			type result struct {
				w   watch.Interface
				err error
			}
			done := make(chan result, 1)
			go func() {
				lw := s.ListerWatcher()
				if verb == "list" {
					_, err := lw.List(metav1.ListOptions{})
					done <- result{err: err}
					return
				}
				w, err := lw.Watch(metav1.ListOptions{})
				done <- result{w, err}
			}()
			<-entered
			s.Close()
			close(release)
			r := <-done
			if r.w != nil {
				r.w.Stop()
			}
			if !utilnet.IsConnectionRefused(r.err) {
				t.Errorf("%s held by the hook while Close ran: served after Close returned (error %v), want connection refused", verb, r.err)
			}
		})
	}
}
