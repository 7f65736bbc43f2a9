package testenv

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Cluster is the API server a benchmark program runs against: kube-apiserver
// and etcd it started through envtest, or an existing cluster.
type Cluster struct {
	// Config reaches the API server with the kubeconfig's (or envtest's
	// admin) credentials.
	Config *rest.Config
	// Kubeconfig is the same as the contents of a kubeconfig file, for child
	// processes.
	Kubeconfig []byte
	stop       func() error
}

// StartCluster starts kube-apiserver and etcd from AssetsDir through
// envtest, or, when kubeconfig (a file's path) is set, uses that cluster.
func StartCluster(kubeconfig string) (*Cluster, error) {
	if kubeconfig != "" {
		b, err := os.ReadFile(kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("read kubeconfig: %w", err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(b)
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
		}
		return &Cluster{Config: cfg, Kubeconfig: b, stop: func() error { return nil }}, nil
	}
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest (kube-apiserver and etcd from %s): %w", assets, err)
	}
	return &Cluster{Config: cfg, Kubeconfig: env.KubeConfig, stop: env.Stop}, nil
}

// Stop stops the API server and etcd StartCluster started; an existing
// cluster is left alone.
func (c *Cluster) Stop() error { return c.stop() }
