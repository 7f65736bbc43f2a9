package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/leaninformer/leaninformer/internal/testenv"
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

// populate makes the cluster hold exactly n bench objects of kind k,
// creating the missing ones and deleting those of an earlier, larger run,
// with workers concurrent requests. It returns the number of objects of the
// kind in the cluster afterwards.
func populate(ctx context.Context, cs kubernetes.Interface, k objectKind, n, workers int, prog *progress) (total int, err error) {
	for i := range min(n, benchNamespaces) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i), Labels: map[string]string{benchLabel: benchLabelValue}}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
	}

	have := map[int]bool{}
	type nsName struct{ namespace, name string }
	var extra []nsName
	err = listAll(ctx, cs, k, metav1.ListOptions{LabelSelector: benchLabel + "=" + benchLabelValue}, func(o metav1.Object) {
		if i := k.index(o.GetNamespace(), o.GetName()); i >= 0 && i < n {
			have[i] = true
		} else {
			extra = append(extra, nsName{o.GetNamespace(), o.GetName()})
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
	prog.step(fmt.Sprintf("populate: %d of %d bench %s exist, creating %d, deleting %d", len(have), n, k.title, len(missing), len(extra)))

	err = parallel(ctx, workers, len(missing), func(ctx context.Context, j int) error {
		if err := k.create(ctx, cs, missing[j]); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}, func(done int) { prog.set(fmt.Sprintf("populate: created %d/%d", done, len(missing))) })
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", k.title, err)
	}
	err = parallel(ctx, workers, len(extra), func(ctx context.Context, j int) error {
		if err := k.delete(ctx, cs, extra[j].namespace, extra[j].name); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}, func(done int) { prog.set(fmt.Sprintf("populate: deleted %d/%d", done, len(extra))) })
	if err != nil {
		return 0, fmt.Errorf("delete %s of an earlier run: %w", k.title, err)
	}

	bench := 0
	err = listAll(ctx, cs, k, metav1.ListOptions{}, func(o metav1.Object) {
		total++
		if isBench(o) {
			bench++
		}
	})
	if err != nil {
		return 0, err
	}
	if bench != n {
		return 0, fmt.Errorf("after populating, the cluster has %d bench %s, want %d", bench, k.title, n)
	}
	return total, nil
}

// listAll lists objects of kind k in all namespaces page by page.
func listAll(ctx context.Context, cs kubernetes.Interface, k objectKind, opts metav1.ListOptions, each func(metav1.Object)) error {
	opts.Limit = 1000
	for {
		items, cont, err := k.listPage(ctx, cs, opts)
		if err != nil {
			return err
		}
		for _, item := range items {
			o, err := meta.Accessor(item)
			if err != nil {
				return err
			}
			each(o)
		}
		if opts.Continue = cont; opts.Continue == "" {
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
