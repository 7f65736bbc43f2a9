package benchkit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel runs do(ctx, 0..n-1) on workers goroutines, calling progress with
// the number done twice a second and at the end; it stops at the first
// error and returns it.
func Parallel(ctx context.Context, workers, n int, do func(context.Context, int) error, progress func(done int)) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				if err := do(ctx, k); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stopped:
			progress(int(done.Load()))
			if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return ctx.Err()
		case <-tick.C:
			progress(int(done.Load()))
		}
	}
}
