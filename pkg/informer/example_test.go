package informer_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/leaninformer/leaninformer/internal/testenv"
	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// Plain client-go: use informer.NewSharedIndexInformer wherever
// cache.NewSharedIndexInformer was used. The ListerWatcher here is an
// in-memory fake; in a program it is cache.NewListWatchFromClient or an
// informer factory's.
func ExampleNewSharedIndexInformer() {
	server := fake.NewServer(&corev1.ConfigMapList{})
	defer server.Close()
	for _, name := range []string{"a", "b", "c"} {
		_, _ = server.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}

	inf := informer.NewSharedIndexInformer(server.ListerWatcher(), &corev1.ConfigMap{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	added := make(chan string, 10)
	reg, _ := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { added <- obj.(*corev1.ConfigMap).Name },
	})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced)

	keys := inf.GetStore().ListKeys()
	sort.Strings(keys)
	fmt.Println("stored:", keys)
	inDefault, _ := inf.GetIndexer().ByIndex(toolscache.NamespaceIndex, "default")
	fmt.Println("in namespace default:", len(inDefault))
	fmt.Println("handler saw", len(added), "adds")

	cancel()
	<-done
	// Output:
	// stored: [default/a default/b default/c]
	// in namespace default: 3
	// handler saw 3 adds
}

// A transform that fails on a listed object does not keep the informer from
// syncing: the object is left out of the store, and the watch error handler
// (and SyncStatus) is told which one and why.
func ExampleDroppedObjectsError() {
	server := fake.NewServer(&corev1.ConfigMapList{})
	defer server.Close()
	for _, name := range []string{"good", "bad"} {
		_, _ = server.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}

	inf := informer.NewSharedIndexInformerWithOptions(server.ListerWatcher(), &corev1.ConfigMap{},
		toolscache.SharedIndexInformerOptions{}, informer.WithMetrics(nil))
	_ = inf.SetTransform(func(obj any) (any, error) {
		if obj.(*corev1.ConfigMap).Name == "bad" {
			return nil, errors.New("cannot trim it")
		}
		return obj, nil
	})
	reported := make(chan *informer.DroppedObjectsError, 1)
	_ = inf.SetWatchErrorHandler(func(_ *toolscache.Reflector, err error) {
		if dropped := (*informer.DroppedObjectsError)(nil); errors.As(err, &dropped) {
			reported <- dropped
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	dropped := <-reported
	fmt.Println("synced:", inf.HasSynced(), "stored:", inf.GetStore().ListKeys())
	fmt.Println("left out:", dropped.Count, dropped.First, "-", dropped.Err)
	fmt.Println("status:", inf.SyncStatus().Dropped == dropped)

	cancel()
	<-done
	// Output:
	// synced: true stored: [default/good]
	// left out: 1 default/bad - transforming: cannot trim it
	// status: true
}

// A handler that falls behind: wrapped in Coalesce, it hears each object's
// net change once it goes on, not every change. Here it is stuck in its
// first call while "settings" changes three times; a second, plain handler
// seeing "done" tells that every change has reached the queues.
func ExampleCoalesce() {
	server := fake.NewServer(&corev1.ConfigMapList{})
	defer server.Close()
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}, Data: map[string]string{"v": "0"}}
	_, _ = server.Create(settings)

	inf := informer.NewSharedIndexInformer(server.ListerWatcher(), &corev1.ConfigMap{}, 0, nil)
	release := make(chan struct{})
	calls := make(chan string, 10)
	v := func(obj any) string {
		cm := obj.(*corev1.ConfigMap)
		return cm.Name + " v=" + cm.Data["v"]
	}
	_, _ = inf.AddEventHandler(informer.Coalesce(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			calls <- "add " + v(obj)
			<-release // busy until released: the first call blocks
		},
		UpdateFunc: func(oldObj, newObj any) { calls <- "update " + v(oldObj) + " -> " + v(newObj) },
	}))
	done := make(chan struct{})
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if obj.(*corev1.ConfigMap).Name == "done" {
				close(done)
			}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)

	fmt.Println(<-calls)
	for _, value := range []string{"1", "2", "3"} {
		settings.Data["v"] = value
		_, _ = server.Update(settings)
	}
	_, _ = server.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "done"}})
	<-done
	close(release)
	fmt.Println(<-calls)
	fmt.Println(<-calls)
	// Output:
	// add settings v=0
	// update settings v=0 -> settings v=3
	// add done v=
}

// Options that come from configuration can be checked before an informer is
// built: the constructors panic on invalid options, and NewCacheWith's
// function returns this error.
func ExampleValidateOptions() {
	pageSize := int64(-1) // read from a flag, say
	err := informer.ValidateOptions(informer.WithPageSize(pageSize), informer.WithSyncWarningAfter(time.Minute))
	fmt.Println(err)
	// Output:
	// invalid informer options: WithPageSize: page size -1 is negative
}

// controller-runtime: one line in the manager's options. Every cache feature
// (typed, unstructured and metadata-only objects, IndexField, transforms,
// ByObject, DefaultNamespaces, selectors) works as with the default cache.
// The example starts a real API server with envtest.
func ExampleNewCache() {
	assets, err := testenv.AssetsDir()
	if err != nil {
		fmt.Println(err)
		return
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = env.Stop() }()

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: informer.NewCache, // the one-line change
		Metrics:  metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = mgr.Start(ctx) }()
	defer func() { cancel(); <-stopped }()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "example"}, Data: map[string]string{"k": "v"}}
	if err := mgr.GetClient().Create(ctx, cm); err != nil {
		fmt.Println(err)
		return
	}
	// Reads go through the cache, backed by leaninformer's informer.
	var got corev1.ConfigMap
	for {
		err := mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(cm), &got)
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println("cached:", got.Name, got.Data["k"])
	// Output:
	// cached: example v
}
