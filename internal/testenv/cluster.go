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

// APIServerFlag is a kube-apiserver flag and its value, for StartCluster.
type APIServerFlag struct{ Name, Value string }

// StartCluster starts kube-apiserver, with flags, and etcd from AssetsDir
// through envtest, or, when kubeconfig (a file's path) is set, uses that
// cluster (flags are then an error: that server's flags are its own).
func StartCluster(kubeconfig string, flags ...APIServerFlag) (*Cluster, error) {
	if kubeconfig != "" && len(flags) > 0 {
		return nil, fmt.Errorf("kube-apiserver flags %v for a cluster of a kubeconfig (%s): only a cluster started here takes them", flags, kubeconfig)
	}
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
	for _, f := range flags {
		env.ControlPlane.GetAPIServer().Configure().Set(f.Name, f.Value)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest (kube-apiserver and etcd from %s): %w", assets, err)
	}
	return &Cluster{Config: cfg, Kubeconfig: env.KubeConfig, stop: env.Stop}, nil
}

// Stop stops the API server and etcd StartCluster started; an existing
// cluster is left alone.
func (c *Cluster) Stop() error { return c.stop() }
