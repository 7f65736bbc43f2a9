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

// controlPlane is a control plane of the shard specs' own, whose API server
// can be restarted: its certificates are in a fixed folder, so a restarted
// API server serves the same ones on the same port.
type controlPlane struct {
	once      sync.Once
	gate      bool // --feature-gates=ShardedListAndWatch=true
	env       *envtest.Environment
	cfg       *rest.Config
	clientset *kubernetes.Clientset
	certDir   string
	err       error
}

// The suite's own API server runs without feature gates. The shard specs
// share two more, started on first use and stopped after the suite: one
// with the ShardedListAndWatch gate (server-side filtering), one without
// (client-side filtering) that they may restart.
var (
	gatedPlane   = &controlPlane{gate: true}
	ungatedPlane = &controlPlane{}
)

func (p *controlPlane) start() {
	p.once.Do(func() {
		assets, err := testenv.AssetsDir()
		if err != nil {
			p.err = err
			return
		}
		if p.certDir, err = os.MkdirTemp("", "leaninformer-shard-"); err != nil {
			p.err = err
			return
		}
		apiServer := &envtest.APIServer{CertDir: p.certDir}
		// By default kube-apiserver leaves watches open when it is told to
		// stop, and its HTTP server waits for them up to --request-timeout
		// (60 s), as long as envtest's stop timeout: a stop with a watch
		// open took 60.5 s, and fails when envtest gives up first. With a
		// grace period, the API server ends its watches at shutdown (1.9 s
		// with a watch open), as a client sees it in a cluster's rolling
		// update.
		apiServer.Configure().Append("shutdown-watch-termination-grace-period", "2s")
		if p.gate {
			apiServer.Configure().Append("feature-gates", "ShardedListAndWatch=true")
		}
		p.env = &envtest.Environment{
			BinaryAssetsDirectory:    assets,
			ControlPlane:             envtest.ControlPlane{APIServer: apiServer},
			ControlPlaneStartTimeout: time.Minute,
			ControlPlaneStopTimeout:  time.Minute,
		}
		if p.cfg, p.err = p.env.Start(); p.err != nil {
			return
		}
		p.cfg.QPS, p.cfg.Burst = 2000, 4000
		p.clientset, p.err = kubernetes.NewForConfig(p.cfg)
	})
	Expect(p.err).NotTo(HaveOccurred())
}

// shardedControlPlane returns the control plane whose API server has the
// ShardedListAndWatch feature gate on.
func shardedControlPlane() (*rest.Config, *kubernetes.Clientset) {
	gatedPlane.start()
	return gatedPlane.cfg, gatedPlane.clientset
}

func (p *controlPlane) stop() {
	if p.env != nil {
		Expect(p.env.Stop()).To(Succeed())
		_ = os.RemoveAll(p.certDir)
	}
}

// stopShardedControlPlane stops the shard specs' control planes that ran.
func stopShardedControlPlane() {
	gatedPlane.stop()
	ungatedPlane.stop()
}
