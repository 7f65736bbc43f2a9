package envtest

import (
	"os"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/leaninformer/leaninformer/internal/testenv"
)

// The suite's own API server runs without feature gates: shard selectors
// are ignored there. The specs that need server-side filtering share a
// second control plane with --feature-gates=ShardedListAndWatch=true,
// started on first use and stopped after the suite.
var sharded struct {
	once      sync.Once
	env       *envtest.Environment
	cfg       *rest.Config
	clientset *kubernetes.Clientset
	certDir   string
	err       error
}

// shardedControlPlane returns the control plane whose API server has the
// ShardedListAndWatch feature gate on. Its certificates are in a fixed
// folder, so that a restarted API server serves the same ones.
func shardedControlPlane() (*rest.Config, *kubernetes.Clientset) {
	sharded.once.Do(func() {
		assets, err := testenv.AssetsDir()
		if err != nil {
			sharded.err = err
			return
		}
		if sharded.certDir, err = os.MkdirTemp("", "leaninformer-sharded-"); err != nil {
			sharded.err = err
			return
		}
		apiServer := &envtest.APIServer{CertDir: sharded.certDir}
		apiServer.Configure().Append("feature-gates", "ShardedListAndWatch=true")
		sharded.env = &envtest.Environment{
			BinaryAssetsDirectory:    assets,
			ControlPlane:             envtest.ControlPlane{APIServer: apiServer},
			ControlPlaneStartTimeout: time.Minute,
			ControlPlaneStopTimeout:  time.Minute,
		}
		if sharded.cfg, sharded.err = sharded.env.Start(); sharded.err != nil {
			return
		}
		sharded.cfg.QPS, sharded.cfg.Burst = 2000, 4000
		sharded.clientset, sharded.err = kubernetes.NewForConfig(sharded.cfg)
	})
	Expect(sharded.err).NotTo(HaveOccurred())
	return sharded.cfg, sharded.clientset
}

// stopShardedControlPlane stops the sharded control plane if it ran.
func stopShardedControlPlane() {
	if sharded.env != nil {
		Expect(sharded.env.Stop()).To(Succeed())
		_ = os.RemoveAll(sharded.certDir)
	}
}
