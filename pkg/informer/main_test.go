package informer

import (
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	// controller-runtime's own log lines (envtest's, the cache's) are
	// dropped as they would be anyway, without its "SetLogger was never
	// called" stack dump in the output.
	ctrllog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m)
}
