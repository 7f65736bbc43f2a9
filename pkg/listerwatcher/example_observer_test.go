package listerwatcher_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// requestLog is an Observer of LIST requests and backoffs; embedding
// NoopObserver implements the rest.
type requestLog struct{ listerwatcher.NoopObserver }

func (requestLog) ListRequest(opts metav1.ListOptions, items int, _ time.Duration, err error) {
	fmt.Printf("LIST limit=%d: %d items, err=%v\n", opts.Limit, items, err)
}

func (requestLog) Backoff(delay time.Duration, err error) {
	fmt.Printf("back off %v after: %v\n", delay, err)
}

// An Observer sees the watcher's own requests, for metrics or logs of
// one's own. Here the first LIST finds the API server down; the watcher
// backs off, then lists again.
func ExampleWithObserver() {
	srv := fake.NewServer(&corev1.ConfigMapList{})
	defer srv.Close()
	for _, name := range []string{"a", "b", "c"} {
		_, _ = srv.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}
	refused := false
	srv.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Verb == "list" && !refused {
			refused = true
			return fake.ConnectionRefused()
		}
		return nil
	})

	w, err := listerwatcher.New(srv.ListerWatcher(),
		listerwatcher.WithStrategy(listerwatcher.ListWatch),
		listerwatcher.WithPageSize(2),
		listerwatcher.WithBackoff(listerwatcher.Backoff{Initial: 10 * time.Millisecond, Factor: 2, Cap: time.Second}),
		listerwatcher.WithObserver(requestLog{}))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	_ = w.Run(ctx, listerwatcher.ConsumerFunc(func(ctx context.Context, ev listerwatcher.Event) error {
		if ev.Type == listerwatcher.RestartDone {
			cancel()
		}
		return nil
	}))
	// Output:
	// LIST limit=2: 0 items, err=dial tcp: connect: connection refused
	// back off 10ms after: dial tcp: connect: connection refused
	// LIST limit=2: 2 items, err=<nil>
	// LIST limit=2: 1 items, err=<nil>
}
