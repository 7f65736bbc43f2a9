// Package errorcapture lets a test see what reaches client-go's
// utilruntime.HandleError, which is where the informer reports what it
// cannot return: dropped events, decode failures, handler panics.
package errorcapture

import (
	"context"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Install makes f the only handler of utilruntime.HandleError and returns
// the function that puts the previous handlers back. Tests pass it to
// t.Cleanup; a fuzz target that installs once per input defers it.
//
// utilruntime.ErrorHandlers is process-wide: tests that install must not
// run in parallel with each other.
func Install(f func(err error, msg string)) (restore func()) {
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, _ ...any) {
		f(err, msg)
	}}
	return func() { utilruntime.ErrorHandlers = saved }
}
