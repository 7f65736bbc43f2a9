package listerwatcher_test

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// WithStrategy chooses how a restart gets the collection. Auto, the
// default, streams it in one watch (sendInitialEvents=true) that goes on as
// the live watch, and lists page by page when the ListerWatcher cannot
// stream; ListWatch always lists page by page, then watches from the list's
// resourceVersion. Here each runs one restart on a fake API server holding
// three ConfigMaps and sees a change live, and the requests the server
// received are printed.
func ExampleWithStrategy() {
	srv := fake.NewServer(&corev1.ConfigMapList{})
	defer srv.Close()
	for _, name := range []string{"a", "b", "c"} {
		_, _ = srv.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}
	cannotStream := &fake.ListerWatcher{Server: srv, WatchListUnsupported: true} // as client-go's fakes say

	for _, run := range []struct {
		name     string
		lw       toolscache.ListerWatcher
		strategy listerwatcher.Strategy
	}{
		{"Auto", srv.ListerWatcher(), listerwatcher.Auto},
		{"Auto, cannot stream", cannotStream, listerwatcher.Auto},
		{"ListWatch", srv.ListerWatcher(), listerwatcher.ListWatch},
	} {
		srv.ResetRequests()
		w, err := listerwatcher.New(run.lw, listerwatcher.WithStrategy(run.strategy), listerwatcher.WithPageSize(2))
		if err != nil {
			panic(err)
		}
		ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
		_ = w.Run(ctx, listerwatcher.ConsumerFunc(func(ctx context.Context, ev listerwatcher.Event) error {
			switch ev.Type {
			case listerwatcher.RestartStart:
				fmt.Printf("%s: restart by %s\n", run.name, ev.Strategy)
			case listerwatcher.RestartDone: // change a ConfigMap: the live watch brings it
				_, _ = srv.Update(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
			case listerwatcher.Modified:
				fmt.Printf("%s: %s modified at %s\n", run.name, ev.Object.(*corev1.ConfigMap).Name, ev.ResourceVersion)
				cancel()
			}
			return nil
		}))
		printRequests(srv.Requests())
	}
	// Output:
	// Auto: restart by StreamingList
	// Auto: a modified at 5
	//   watch sendInitialEvents=true
	// Auto, cannot stream: restart by ListWatch
	// Auto, cannot stream: a modified at 6
	//   list limit=2
	//   list limit=2 continue=...
	//   watch resourceVersion=5
	// ListWatch: restart by ListWatch
	// ListWatch: a modified at 7
	//   list limit=2
	//   list limit=2 continue=...
	//   watch resourceVersion=6
}

// printRequests prints what each request asked for, in the terms of the
// API server's query parameters.
func printRequests(reqs []fake.Request) {
	for _, r := range reqs {
		o := r.Options
		line := "  " + r.Verb
		if o.ResourceVersion != "" {
			line += " resourceVersion=" + o.ResourceVersion
		}
		if o.Limit != 0 {
			line += fmt.Sprintf(" limit=%d", o.Limit)
		}
		if o.Continue != "" {
			line += " continue=..."
		}
		if o.SendInitialEvents != nil && *o.SendInitialEvents {
			line += " sendInitialEvents=true"
		}
		fmt.Println(line)
	}
}
