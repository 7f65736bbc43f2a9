package benchkit

import (
	"context"
	"fmt"
)

// WaitFor waits until done is closed, or returns an error naming what it
// waited for once ctx ends.
func WaitFor(ctx context.Context, done <-chan struct{}, what string) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("gave up waiting for %s: %w", what, context.Cause(ctx))
	}
}
