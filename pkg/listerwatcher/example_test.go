package listerwatcher_test

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
