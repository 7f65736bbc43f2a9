package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/leaninformer/leaninformer/internal/testenv"
)

// The bench RoleBindings: benchNamespaces namespaces, named by index, labelled
// so that a later run against the same cluster finds them.
const (
	benchLabel      = "app.kubernetes.io/managed-by"
	benchLabelValue = "leaninformer-bench"
	benchNamespaces = 10
	nsPrefix        = "leaninformer-bench-"
	rbPrefix        = "rb-"
)

// cluster is the API server the benchmark runs against.
type cluster struct {
	cfg  *rest.Config
	stop func() error
}

// startCluster starts kube-apiserver and etcd through envtest, or loads
// kubeconfig when it is set.
func startCluster(kubeconfig string) (*cluster, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load --kubeconfig %s: %w", kubeconfig, err)
		}
		return &cluster{cfg: cfg, stop: func() error { return nil }}, nil
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest (kube-apiserver and etcd from %s): %w", assets, err)
	}
	return &cluster{cfg: cfg, stop: env.Stop}, nil
}

func nsName(i int) string { return nsPrefix + fmt.Sprintf("%02d", i%benchNamespaces) }
func rbName(i int) string { return fmt.Sprintf("%s%07d", rbPrefix, i) }

// roleBinding is the i-th bench object: 3 to 5 subjects of all three kinds,
// labels and an annotation, as RoleBindings of tenants and teams have.
func roleBinding(i int) *rbacv1.RoleBinding {
	team := fmt.Sprintf("team-%03d", i%97)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:      rbName(i),
			Namespace: nsName(i),
			Labels: map[string]string{
				benchLabel:               benchLabelValue,
				"app.kubernetes.io/name": team,
			},
			Annotations: map[string]string{"example.com/owner": team + "@example.com"},
		},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: []string{"view", "edit", "admin"}[i%3]},
	}
	for s := range 3 + i%3 {
		switch s % 3 {
		case 0:
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("user-%06d@example.com", i*7+s)})
		case 1:
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "group-" + team})
		case 2:
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: fmt.Sprintf("sa-%05d", i%5000), Namespace: nsName(i)})
		}
	}
	return rb
}

// benchIndex returns the index of a bench RoleBinding, or -1 if the name
// and namespace do not belong to one.
func benchIndex(namespace, name string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(name, rbPrefix))
	if err != nil || !strings.HasPrefix(name, rbPrefix) || i < 0 || nsName(i) != namespace || rbName(i) != name {
		return -1
	}
	return i
}

// populate makes the cluster hold exactly n bench RoleBindings, creating
// the missing ones and deleting those of an earlier, larger run, with
// workers concurrent requests. It returns the number of RoleBindings of all
// kinds in the cluster afterwards.
func populate(ctx context.Context, cs kubernetes.Interface, n, workers int, prog *progress) (total int, err error) {
	for i := range min(n, benchNamespaces) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i), Labels: map[string]string{benchLabel: benchLabelValue}}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
	}

	have := map[int]bool{}
	var extra []*rbacv1.RoleBinding
	err = listAll(ctx, cs, metav1.ListOptions{LabelSelector: benchLabel + "=" + benchLabelValue}, func(rb *rbacv1.RoleBinding) {
		if i := benchIndex(rb.Namespace, rb.Name); i >= 0 && i < n {
			have[i] = true
		} else {
			extra = append(extra, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: rb.Namespace, Name: rb.Name}})
		}
	})
	if err != nil {
		return 0, err
	}
	var missing []int
	for i := range n {
		if !have[i] {
			missing = append(missing, i)
		}
	}
	prog.step(fmt.Sprintf("populate: %d of %d bench RoleBindings exist, creating %d, deleting %d", len(have), n, len(missing), len(extra)))

	err = parallel(ctx, workers, len(missing), func(ctx context.Context, k int) error {
		_, err := cs.RbacV1().RoleBindings(nsName(missing[k])).Create(ctx, roleBinding(missing[k]), metav1.CreateOptions{FieldManager: "leaninformer-bench"})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, func(done int) { prog.set(fmt.Sprintf("populate: created %d/%d", done, len(missing))) })
	if err != nil {
		return 0, fmt.Errorf("create RoleBindings: %w", err)
	}
	err = parallel(ctx, workers, len(extra), func(ctx context.Context, k int) error {
		err := cs.RbacV1().RoleBindings(extra[k].Namespace).Delete(ctx, extra[k].Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}, func(done int) { prog.set(fmt.Sprintf("populate: deleted %d/%d", done, len(extra))) })
	if err != nil {
		return 0, fmt.Errorf("delete RoleBindings of an earlier run: %w", err)
	}

	bench := 0
	err = listAll(ctx, cs, metav1.ListOptions{}, func(rb *rbacv1.RoleBinding) {
		total++
		if isBench(rb) {
			bench++
		}
	})
	if err != nil {
		return 0, err
	}
	if bench != n {
		return 0, fmt.Errorf("after populating, the cluster has %d bench RoleBindings, want %d", bench, n)
	}
	return total, nil
}

// listAll lists RoleBindings in all namespaces page by page.
func listAll(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions, each func(*rbacv1.RoleBinding)) error {
	opts.Limit = 1000
	for {
		page, err := cs.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list RoleBindings: %w", err)
		}
		for i := range page.Items {
			each(&page.Items[i])
		}
		if opts.Continue = page.Continue; opts.Continue == "" {
			return nil
		}
	}
}

// parallel runs do(0..n-1) on workers goroutines, reporting progress now
// and then; it stops at the first error.
func parallel(ctx context.Context, workers, n int, do func(context.Context, int) error, progress func(done int)) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				if err := do(ctx, k); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stopped:
			progress(int(done.Load()))
			if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return ctx.Err()
		case <-tick.C:
			progress(int(done.Load()))
		}
	}
}

// writeKubeconfig writes a kubeconfig for server (the proxy: plain HTTP, no
// credentials) to path.
func writeKubeconfig(path, server string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["bench"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench"}
	cfg.CurrentContext = "bench"
	return clientcmd.WriteToFile(*cfg, path)
}
