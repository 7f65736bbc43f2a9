package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/leaninformer/leaninformer/internal/benchkit"
	"github.com/leaninformer/leaninformer/internal/benchobjects"
)

// populate makes the cluster hold exactly n bench objects of kind k,
// creating the missing ones and deleting those of an earlier, larger run,
// with workers concurrent requests. It returns the number of objects of the
// kind in the cluster afterwards.
func populate(ctx context.Context, cs kubernetes.Interface, k objectKind, n, workers int, prog *benchkit.Progress) (total int, err error) {
	for i := range min(n, benchobjects.Namespaces) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchobjects.Namespace(i), Labels: map[string]string{benchobjects.Label: benchobjects.LabelValue}}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
	}

	have := map[int]bool{}
	type nsName struct{ namespace, name string }
	var extra []nsName
	err = listAll(ctx, cs, k, metav1.ListOptions{LabelSelector: benchobjects.Label + "=" + benchobjects.LabelValue}, func(o metav1.Object) {
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
	prog.Step(fmt.Sprintf("populate: %d of %d bench %s exist, creating %d, deleting %d", len(have), n, k.title, len(missing), len(extra)))

	err = benchkit.Parallel(ctx, workers, len(missing), func(ctx context.Context, j int) error {
		if err := k.create(ctx, cs, missing[j]); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}, func(done int) { prog.Set(fmt.Sprintf("populate: created %d/%d", done, len(missing))) })
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", k.title, err)
	}
	err = benchkit.Parallel(ctx, workers, len(extra), func(ctx context.Context, j int) error {
		if err := k.delete(ctx, cs, extra[j].namespace, extra[j].name); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}, func(done int) { prog.Set(fmt.Sprintf("populate: deleted %d/%d", done, len(extra))) })
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
