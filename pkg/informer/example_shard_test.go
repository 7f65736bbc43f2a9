package informer_test

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

// A sharded informer holds the objects of its member's range only. Here
// one member runs alone, so it serves the whole hash space, and the
// in-memory API server ignores shard selectors, so the informer filters on
// the client. With controller-runtime the same option goes through
// NewCacheWith:
//
//	ctrl.Options{NewCache: informer.NewCacheWith(informer.WithShard(member))}
//
// and the member is added to the manager (mgr.Add(member)).
func ExampleWithShard() {
	member, err := shard.New(kubefake.NewClientset().CoordinationV1(), "default", "my-controller",
		shard.WithIdentity("replica-0"), shard.WithLogger(logr.Discard()))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	memberStopped := make(chan error, 1)
	go func() { memberStopped <- member.Start(ctx) }()
	<-member.Ready() // optional: saves the informer a first list of nothing

	server := fake.NewServer(&corev1.ConfigMapList{})
	defer server.Close()
	for i, name := range []string{"a", "b", "c"} {
		uid := types.UID(fmt.Sprintf("0b6c1f6e-3c2a-4f4e-9d55-8a1e7c40d0%02d", i))
		_, _ = server.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: uid}})
	}
	inf := informer.NewSharedIndexInformerWithOptions(server.ListerWatcher(), &corev1.ConfigMap{},
		toolscache.SharedIndexInformerOptions{}, informer.WithShard(member), informer.WithMetrics(nil))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced)

	fmt.Println("stored:", len(inf.GetStore().ListKeys()))
	fmt.Println(inf.SyncStatus().Shard)

	cancel()
	<-done
	fmt.Println("member stopped:", <-memberStopped)
	// Output:
	// stored: 3
	// shard: 1.000 of the hash space in 1 terms, filtered on the client
	// member stopped: <nil>
}
