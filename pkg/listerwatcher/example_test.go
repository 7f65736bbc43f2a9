package listerwatcher_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// A consumer builds its state a page at a time and swaps it in at
// RestartDone; live events then apply to it. Here it prints what it gets
// from a fake API server holding five ConfigMaps, listed two per page.
func Example() {
	srv := fake.NewServer(&corev1.ConfigMapList{})
	defer srv.Close()
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		_, _ = srv.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}

	w, err := listerwatcher.New(srv.ListerWatcher(),
		listerwatcher.WithStrategy(listerwatcher.ListWatch),
		listerwatcher.WithPageSize(2),
		listerwatcher.WithExpectedType(&corev1.ConfigMap{}))
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	err = w.Run(ctx, listerwatcher.ConsumerFunc(func(ctx context.Context, ev listerwatcher.Event) error {
		switch ev.Type {
		case listerwatcher.RestartStart:
			fmt.Println("restart:", ev.Reason, "by", ev.Strategy)
		case listerwatcher.RestartPage:
			var names []string
			for _, obj := range ev.Objects {
				names = append(names, obj.(*corev1.ConfigMap).Name)
			}
			fmt.Println("page:", names)
		case listerwatcher.RestartDone:
			fmt.Println("done at resourceVersion", ev.ResourceVersion)
			// Change something: it arrives as a live event.
			_, _ = srv.Delete("default", "c")
		case listerwatcher.Deleted:
			fmt.Println("deleted:", ev.Object.(*corev1.ConfigMap).Name, "at", ev.ResourceVersion)
			cancel() // Run returns nil once ctx ends
		}
		return nil
	}))
	fmt.Println("Run returned", err)

	// Output:
	// restart: Initial by ListWatch
	// page: [a b]
	// page: [c d]
	// page: [e]
	// done at resourceVersion 6
	// deleted: c at 7
	// Run returned <nil>
}

// Relist asks a running Watcher for a new restart, for instance after the
// ListerWatcher's options changed. Here the consumer asks for one once the
// first restart is done.
func ExampleWatcher_Relist() {
	srv := fake.NewServer(&corev1.ConfigMapList{})
	defer srv.Close()
	_, _ = srv.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})

	w, err := listerwatcher.New(srv.ListerWatcher(), listerwatcher.WithStrategy(listerwatcher.ListWatch))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	restarts := 0
	_ = w.Run(ctx, listerwatcher.ConsumerFunc(func(ctx context.Context, ev listerwatcher.Event) error {
		switch ev.Type {
		case listerwatcher.RestartStart:
			fmt.Println("restart:", ev.Reason)
		case listerwatcher.RestartDone:
			if restarts++; restarts == 1 {
				w.Relist()
			} else {
				cancel()
			}
		}
		return nil
	}))

	// Output:
	// restart: Initial
	// restart: Requested
}

// The error handler gets every failure with the watcher's Decision about it:
// what went wrong, what the watcher does next, and whether a user must hear
// of it (as client-go's reflector would tell its watch error handler).
func ExampleWithErrorHandler() {
	srv := fake.NewServer(&corev1.ConfigMapList{})
	defer srv.Close()
	refused := false
	srv.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Verb == "list" && !refused {
			refused = true
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC says no"))
		}
		return nil
	})

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	w, err := listerwatcher.New(srv.ListerWatcher(),
		listerwatcher.WithStrategy(listerwatcher.ListWatch),
		listerwatcher.WithBackoff(listerwatcher.Backoff{Initial: time.Millisecond, Factor: 2, Cap: time.Second}),
		listerwatcher.WithErrorHandler(func(_ context.Context, err error) {
			var f *listerwatcher.Failure
			if errors.As(err, &f) {
				fmt.Printf("%s failed: %s\nnext: %s; tell the user: %v\n", f.Op, f.Decision.Description(), f.Decision, f.Decision.Notify)
			}
		}))
	if err != nil {
		panic(err)
	}
	_ = w.Run(ctx, listerwatcher.ConsumerFunc(func(ctx context.Context, ev listerwatcher.Event) error {
		if ev.Type == listerwatcher.RestartDone {
			cancel()
		}
		return nil
	}))

	// Output:
	// list failed: forbidden by RBAC: the client may not list or watch this resource
	// next: back off, relist from the last rv (Error); tell the user: true
}
