package errorcapture

import (
	"errors"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

func TestInstallSeesHandleErrorUntilRestored(t *testing.T) {
	var got []string
	restore := Install(func(err error, msg string) { got = append(got, err.Error()+"|"+msg) })
	utilruntime.HandleErrorWithContext(t.Context(), errors.New("boom"), "while testing")
	restore()
	utilruntime.HandleErrorWithContext(t.Context(), errors.New("after"), "restored")
	if len(got) != 1 || got[0] != "boom|while testing" {
		t.Fatalf("captured %q, want [\"boom|while testing\"]", got)
	}
}
