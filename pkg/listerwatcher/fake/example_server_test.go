package fake_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// A Server stands in for the API server of one resource in tests of code
// that lists and watches: its ListerWatcher is what
// cache.NewListWatchFromClient would return. Changes get increasing
// resourceVersions (an empty server is at 1); a LIST pages with limit and continue, and a WATCH from
// a resourceVersion replays what changed after it.
func ExampleServer() {
	s := fake.NewServer(&corev1.ConfigMapList{})
	defer s.Close()
	for _, name := range []string{"a", "b", "c"} {
		if _, err := s.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
			panic(err)
		}
	}
	lw := s.ListerWatcher()

	first, err := lw.List(metav1.ListOptions{Limit: 2})
	if err != nil {
		panic(err)
	}
	page := first.(*corev1.ConfigMapList)
	fmt.Println("page 1:", names(page), "at", page.ResourceVersion, "remaining", *page.RemainingItemCount)
	rest, err := lw.List(metav1.ListOptions{Limit: 2, Continue: page.Continue})
	if err != nil {
		panic(err)
	}
	fmt.Println("page 2:", names(rest.(*corev1.ConfigMapList)))

	updated, _ := s.Update(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}, Data: map[string]string{"k": "v"}})
	_, _ = s.Delete("default", "b")
	fmt.Println("a updated at", updated.(*corev1.ConfigMap).ResourceVersion)

	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: page.ResourceVersion})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	for range 2 {
		ev := next(w)
		cm := ev.Object.(*corev1.ConfigMap)
		fmt.Println(ev.Type, cm.Name, "at", cm.ResourceVersion)
	}
	fmt.Println("requests:", len(s.Requests()))
	// Output:
	// page 1: [a b] at 4 remaining 1
	// page 2: [c]
	// a updated at 5
	// MODIFIED a at 5
	// DELETED b at 6
	// requests: 3
}

// Compact forgets the history, as etcd's compaction does: a client that
// resumes from an older resourceVersion gets 410 Expired, as a LIST error
// or a watch's ERROR event, and must list again.
func ExampleServer_Compact() {
	s := fake.NewServer(&corev1.ConfigMapList{})
	defer s.Close()
	_, _ = s.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	seen := s.ResourceVersion()
	_, _ = s.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}})
	s.Compact()

	lw := s.ListerWatcher()
	_, err := lw.List(metav1.ListOptions{ResourceVersion: seen, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	fmt.Println("list at", seen, "expired:", apierrors.IsResourceExpired(err))

	w, err := lw.Watch(metav1.ListOptions{ResourceVersion: seen})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	ev := next(w)
	fmt.Println("watch from", seen+":", ev.Type, apierrors.FromObject(ev.Object))
	fmt.Println("then the watch ends:", next(w).Type == "")
	// Output:
	// list at 2 expired: true
	// watch from 2: ERROR too old resource version: 2 (3)
	// then the watch ends: true
}

// CloseWatches drops every open watch, as a lost connection does: the
// result channel closes without an ERROR event, and a client that resumes
// from the last resourceVersion it saw misses nothing.
func ExampleServer_CloseWatches() {
	s := fake.NewServer(&corev1.ConfigMapList{})
	defer s.Close()
	_, _ = s.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	lw := s.ListerWatcher()

	w, err := lw.Watch(metav1.ListOptions{ResourceVersion: s.ResourceVersion()})
	if err != nil {
		panic(err)
	}
	_, _ = s.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}})
	ev := next(w)
	seen := ev.Object.(*corev1.ConfigMap).ResourceVersion
	fmt.Println(ev.Type, ev.Object.(*corev1.ConfigMap).Name, "at", seen)

	s.CloseWatches()
	fmt.Println("dropped:", next(w).Type == "", "open watches:", s.OpenWatches())
	_, _ = s.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}}) // while disconnected

	w, err = lw.Watch(metav1.ListOptions{ResourceVersion: seen})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	ev = next(w)
	fmt.Println("resumed:", ev.Type, ev.Object.(*corev1.ConfigMap).Name, "at", ev.Object.(*corev1.ConfigMap).ResourceVersion)
	// Output:
	// ADDED b at 3
	// dropped: true open watches: 0
	// resumed: ADDED c at 4
}

// A Fault decides each request's fate before the server serves it: here
// the first LIST finds nothing listening, as when the API server restarts,
// and the request log shows the caller's retry.
func ExampleServer_SetFault() {
	s := fake.NewServer(&corev1.ConfigMapList{})
	defer s.Close()
	failed := false
	s.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Verb == "list" && !failed {
			failed = true
			return fake.ConnectionRefused()
		}
		return nil
	})

	lw := s.ListerWatcher()
	_, err := lw.List(metav1.ListOptions{})
	fmt.Println("first list:", err)
	list, err := lw.List(metav1.ListOptions{})
	fmt.Println("second list:", err, "at", list.(*corev1.ConfigMapList).ResourceVersion)
	for _, req := range s.Requests() {
		fmt.Println(req.Verb)
	}
	// Output:
	// first list: dial tcp: connect: connection refused
	// second list: <nil> at 1
	// list
	// list
}

// next returns w's next event, the zero event if w ends, and an ERROR
// event if none comes within 5 seconds.
func next(w watch.Interface) watch.Event {
	select {
	case ev := <-w.ResultChan():
		return ev
	case <-time.After(5 * time.Second):
		return watch.Event{Type: watch.Error, Object: &metav1.Status{Message: "no event within 5 seconds"}}
	}
}

// names returns the names of a ConfigMapList's items.
func names(list *corev1.ConfigMapList) []string {
	var out []string
	for _, cm := range list.Items {
		out = append(out, cm.Name)
	}
	return out
}
