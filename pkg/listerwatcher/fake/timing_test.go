package fake

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// expectQuiet fails if w sends anything within d.
func expectQuiet(t *testing.T, w watch.Interface, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch closed, want it open and quiet")
		}
		t.Fatalf("got %s, want nothing", describe(ev))
	case <-time.After(d):
	}
}

// The API server ends a watch without timeoutSeconds (or with 0) after its
// --min-request-timeout (1800 s by default) times a random factor in [1, 2),
// by closing the stream; WithMinRequestTimeout sets it, 0 is no limit.
func TestWatchWithoutTimeoutEndsAfterMinRequestTimeout(t *testing.T) {
	const minTimeout = 300 * time.Millisecond
	s := NewServer(&corev1.ConfigMapList{}, WithMinRequestTimeout(minTimeout))
	t.Cleanup(s.Close)
	for _, timeout := range []*int64{nil, ptr.To[int64](0)} {
		start := time.Now()
		w := openWatch(t, s, metav1.ListOptions{TimeoutSeconds: timeout})
		expectClosed(t, w)
		if d := time.Since(start); d < minTimeout || d > 2*minTimeout+time.Second {
			t.Errorf("watch with timeoutSeconds %v ended after %v, want within [%v, %v)", timeout, d, minTimeout, 2*minTimeout)
		}
	}

	unlimited := NewServer(&corev1.ConfigMapList{}, WithMinRequestTimeout(0))
	t.Cleanup(unlimited.Close)
	expectQuiet(t, openWatch(t, unlimited, metav1.ListOptions{}), 3*minTimeout)
}

// A watch with allowWatchBookmarks gets a BOOKMARK at the newest
// resourceVersion every bookmark period (a minute on the API server), when
// that is newer than the watch's start: also when its selectors filtered
// every change. A watch without allowWatchBookmarks gets none.
func TestPeriodicBookmarks(t *testing.T) {
	const period = 50 * time.Millisecond
	s := NewServer(&corev1.ConfigMapList{}, WithBookmarkFrequency(period))
	t.Cleanup(s.Close)
	if _, err := s.Create(cm("a")); err != nil { // @2
		t.Fatal(err)
	}
	plain := openWatch(t, s, metav1.ListOptions{ResourceVersion: "2"})
	bookmarks := openWatch(t, s, metav1.ListOptions{ResourceVersion: "2", AllowWatchBookmarks: true})
	selected := openWatch(t, s, metav1.ListOptions{ResourceVersion: "2", AllowWatchBookmarks: true, LabelSelector: "app=x"})
	replay := openWatch(t, s, metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true})
	if got := describe(receive(t, replay)); got != "ADDED a@2" {
		t.Fatalf("replay sent %s, want ADDED a@2", got)
	}
	// Nothing newer than resourceVersion 2 yet: no bookmark for the watches
	// from it; the replay's, from 1, comes at 2.
	expectQuiet(t, bookmarks, 4*period)
	if got := describe(receive(t, replay)); got != "BOOKMARK @2" {
		t.Errorf("replay from 1 sent %s, want BOOKMARK @2", got)
	}

	if _, err := s.Create(cm("b")); err != nil { // @3, not app=x
		t.Fatal(err)
	}
	if got, want := events(t, bookmarks, 3), []string{"ADDED b@3", "BOOKMARK @3", "BOOKMARK @3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("watch with bookmarks: %v, want %v", got, want)
	}
	if got, want := events(t, selected, 2), []string{"BOOKMARK @3", "BOOKMARK @3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("watch with a selector: %v, want %v", got, want)
	}
	if got := describe(receive(t, plain)); got != "ADDED b@3" {
		t.Errorf("watch without bookmarks sent %s, want ADDED b@3", got)
	}
	expectQuiet(t, plain, 4*period)
}

// The API server also sends a bookmark 2 s before a watch's timeout, so
// that the client resumes from as new a resourceVersion as it can; a
// bookmark frequency of 0 sends neither.
func TestBookmarkBeforeTimeout(t *testing.T) {
	for name, tc := range map[string]struct {
		opts []Option
		want []string
	}{
		"default":      {nil, []string{"ADDED b@3", "BOOKMARK @3"}},
		"no bookmarks": {[]Option{WithBookmarkFrequency(0)}, []string{"ADDED b@3"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := NewServer(&corev1.ConfigMapList{}, tc.opts...)
			t.Cleanup(s.Close)
			if _, err := s.Create(cm("a")); err != nil { // @2
				t.Fatal(err)
			}
			start := time.Now()
			w := openWatch(t, s, metav1.ListOptions{ResourceVersion: "2", AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](3)})
			if _, err := s.Create(cm("b")); err != nil { // @3
				t.Fatal(err)
			}
			got := events(t, w, len(tc.want))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("events %v, want %v", got, tc.want)
			}
			if d := time.Since(start); len(tc.want) == 2 && (d < 900*time.Millisecond || d > 2500*time.Millisecond) {
				t.Errorf("bookmark after %v, want about 1s: 2s before the timeout of 3s", d)
			}
			expectClosed(t, w)
		})
	}
}
