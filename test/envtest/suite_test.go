package envtest

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/leaninformer/leaninformer/internal/testenv"
)

var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	clientset *kubernetes.Clientset
)

func TestEnvtest(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "leaninformer envtest suite")
}

var _ = BeforeSuite(func() {
	assets, err := testenv.AssetsDir()
	Expect(err).NotTo(HaveOccurred())

	testEnv = &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	// The suites create thousands of objects; the default client QPS (5) would
	// turn that into minutes of client-side throttling.
	cfg.QPS, cfg.Burst = 2000, 4000
	clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	stopShardedControlPlane()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
