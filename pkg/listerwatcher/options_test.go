package listerwatcher

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// A wrapper (the informer) and its user can both observe the watcher and
// hear of its failures: several WithObserver and WithErrorHandler options
// add up instead of replacing each other.
func TestObserversAndErrorHandlersAddUp(t *testing.T) {
	srv := newServer(t, 3)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no"))
	srv.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Verb == "list" {
			return forbidden
		}
		return nil
	})
	second := &countingObserver{}
	secondErrs := make(chan error, 10)
	// start adds the harness's own observer and error handler first.
	h := start(t, srv, nil, WithStrategy(ListWatch),
		WithObserver(second),
		WithErrorHandler(nil), // adds nothing
		WithErrorHandler(func(_ context.Context, err error) { secondErrs <- err }))
	h.expectErr(apierrors.IsForbidden)
	select {
	case err := <-secondErrs:
		if !apierrors.IsForbidden(err) {
			t.Fatalf("second error handler got %v, want the Forbidden list", err)
		}
	case <-time.After(guard):
		t.Fatal("second error handler not called with the failure the first one got")
	}
	h.backoff(testBackoff.Initial)
	h.stop()
	if len(second.items) == 0 {
		t.Fatal("second observer saw no LIST request")
	}
}
