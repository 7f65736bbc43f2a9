package fake

import (
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
