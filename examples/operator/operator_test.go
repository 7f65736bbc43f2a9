package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/leaninformer/leaninformer/internal/testenv"
	"github.com/leaninformer/leaninformer/pkg/informer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// controller-runtime wraps metadata-only watches in watch.Filter,
		// whose goroutine blocks forever sending an event nobody reads once
		// the watch is stopped (kubernetes/kubernetes#113254). It happens
		// with client-go's informer too.
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"))
}

// TestOperator runs the operator's manager against a real API server and
// checks that every namespace's count follows its RoleBindings.
func TestOperator(t *testing.T) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			t.Skipf("no envtest binaries (make test builds them): %v", err)
		}
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	k := &kube{t: t, ctx: ctx, client: client}

	// State from before the operator starts, then the operator.
	nsA, nsB := k.createNamespace("a"), k.createNamespace("b")
	k.createRoleBindings(nsA, "rb-0", "rb-1", "rb-2")
	mgr, err := newManager(cfg, options{metricsBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the manager stopped with an error: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("the manager did not stop within a minute")
		}
	})

	k.expectCount(nsA, "3")
	k.expectCount(nsB, "0")

	inf, err := mgr.GetCache().GetInformer(ctx, namespaceMetadata())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := inf.(*informer.SharedIndexInformer); !ok {
		t.Errorf("the manager's informer is a %T, want leaninformer's *informer.SharedIndexInformer", inf)
	}

	// Creates and deletes.
	k.createRoleBindings(nsB, "rb-0", "rb-1")
	k.expectCount(nsB, "2")
	k.deleteRoleBindings(nsA, "rb-0")
	k.expectCount(nsA, "2")
	k.deleteRoleBindings(nsB, "rb-0", "rb-1")
	k.expectCount(nsB, "0")

	// A namespace created while the operator runs.
	nsC := k.createNamespace("c")
	k.expectCount(nsC, "0")
	k.createRoleBindings(nsC, "rb-0")
	k.expectCount(nsC, "1")

	// Tampering with the count: it is rewritten.
	if err := client.CoreV1().ConfigMaps(nsA).Delete(ctx, countConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	k.expectCount(nsA, "2")
	cm, err := client.CoreV1().ConfigMaps(nsA).Get(ctx, countConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[countKey] = "99"
	if _, err := client.CoreV1().ConfigMaps(nsA).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	k.expectCount(nsA, "2")
}

// kube is the test's view of the API server.
type kube struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
}

func (k *kube) createNamespace(prefix string) string {
	k.t.Helper()
	ns, err := k.client.CoreV1().Namespaces().Create(k.ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	return ns.Name
}

func (k *kube) createRoleBindings(ns string, names ...string) {
	k.t.Helper()
	for _, name := range names {
		_, err := k.client.RbacV1().RoleBindings(ns).Create(k.ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
		}, metav1.CreateOptions{})
		if err != nil {
			k.t.Fatal(err)
		}
	}
}

func (k *kube) deleteRoleBindings(ns string, names ...string) {
	k.t.Helper()
	for _, name := range names {
		if err := k.client.RbacV1().RoleBindings(ns).Delete(k.ctx, name, metav1.DeleteOptions{}); err != nil {
			k.t.Fatal(err)
		}
	}
}

// expectCount waits until namespace ns's rolebinding-count ConfigMap says
// want.
func (k *kube) expectCount(ns, want string) {
	k.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(k.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cm, err := k.client.CoreV1().ConfigMaps(ns).Get(ctx, countConfigMap, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			last = "no ConfigMap"
			return false, nil
		case err != nil:
			return false, err
		}
		last = fmt.Sprintf("count %q, labels %v", cm.Data[countKey], cm.Labels)
		return cm.Data[countKey] == want && cm.Labels[managedByLabel] == operatorName, nil
	})
	if wait.Interrupted(err) {
		k.t.Fatalf("namespace %s: want count %q, have %s", ns, want, last)
	}
	if err != nil {
		k.t.Fatal(err)
	}
}

// TestShardingRefusesLeaderElection: with leader election, a sharded
// operator's controller would run on the leader alone, which counts its own
// share only: the other namespaces would never be counted.
func TestShardingRefusesLeaderElection(t *testing.T) {
	_, err := newManager(&rest.Config{Host: "https://127.0.0.1:1"}, options{shardNamespace: "leases", leaderElect: true})
	if err == nil || !strings.Contains(err.Error(), "--leader-elect with --shard-namespace") {
		t.Fatalf("newManager with sharding and leader election: %v, want an error naming both flags", err)
	}
}
