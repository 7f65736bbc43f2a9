package memstat

import (
	"testing"

	"go.uber.org/goleak"
)

// A Sampler runs its own goroutine: none may outlive Stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
