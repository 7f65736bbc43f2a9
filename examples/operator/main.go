// Command operator is a small controller-runtime operator on leaninformer's
// cache: it counts the RoleBindings of every namespace and writes the count
// to the namespace's rolebinding-count ConfigMap. See README.md.
//
//	go run ./examples/operator --kubeconfig ~/.kube/config
//	go run ./examples/operator --envtest
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/leaninformer/leaninformer/internal/testenv"
)

func main() {
	var (
		opts       options
		useEnvtest bool
	)
	// --kubeconfig is registered by controller-runtime's config loader.
	flag.StringVar(&opts.metricsBindAddress, "metrics-bind-address", ":8080", "Address the metrics endpoint binds to; 0 turns it off.")
	flag.BoolVar(&opts.leaderElect, "leader-elect", false, "Elect a leader, so that only one replica reconciles at a time (not with --shard-namespace).")
	flag.StringVar(&opts.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease; required with --leader-elect outside a cluster.")
	flag.BoolVar(&useEnvtest, "envtest", false, "Start a local kube-apiserver and etcd (envtest) and run against it instead of a cluster.")
	flag.StringVar(&opts.shardNamespace, "shard-namespace", "", "Shard the operator: keep this replica's Lease in this namespace and count only its share of the namespaces.")
	flag.StringVar(&opts.shardIdentity, "shard-identity", "", "This replica's name among the shard members (default: the host name, a pod's name).")
	klog.InitFlags(nil)
	flag.Parse()
	ctrl.SetLogger(klog.NewKlogr())

	if err := run(opts, useEnvtest); err != nil {
		klog.ErrorS(err, "The operator failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(opts options, useEnvtest bool) error {
	var cfg *rest.Config
	if useEnvtest {
		env, envCfg, err := startEnvtest()
		if err != nil {
			return err
		}
		defer func() {
			if err := env.Stop(); err != nil {
				klog.ErrorS(err, "Stopping envtest")
			}
		}()
		cfg = envCfg
	} else {
		var err error
		if cfg, err = ctrl.GetConfig(); err != nil {
			return fmt.Errorf("loading the kubeconfig: %w", err)
		}
	}

	mgr, err := newManager(cfg, opts)
	if err != nil {
		return err
	}
	klog.InfoS("Starting the operator", "host", cfg.Host)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// startEnvtest starts a local API server and writes an admin kubeconfig for
// it, so that kubectl can create RoleBindings while the operator runs.
func startEnvtest() (*envtest.Environment, *rest.Config, error) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		return nil, nil, err
	}
	// With the gate, sharded replicas (--shard-namespace) are filtered on
	// the server; without it they filter on the client.
	apiServer := &envtest.APIServer{}
	apiServer.Configure().Append("feature-gates", "ShardedListAndWatch=true")
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlane: envtest.ControlPlane{APIServer: apiServer}}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting envtest: %w", err)
	}
	path, err := writeKubeconfig(env)
	if err != nil {
		_ = env.Stop()
		return nil, nil, err
	}
	klog.InfoS("envtest is running; talk to it with kubectl", "kubeconfig", path,
		"try", "kubectl --kubeconfig "+path+" create rolebinding demo --clusterrole=view --user=alice -n default")
	return env, cfg, nil
}

// writeKubeconfig writes the kubeconfig of a new envtest admin to a file in
// the temporary directory and returns its path.
func writeKubeconfig(env *envtest.Environment) (string, error) {
	admin, err := env.AddUser(envtest.User{Name: "envtest-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding an envtest admin: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("making the envtest admin's kubeconfig: %w", err)
	}
	path := filepath.Join(os.TempDir(), "leaninformer-operator.kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return "", fmt.Errorf("writing the envtest kubeconfig: %w", err)
	}
	return path, nil
}
