package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// schedule says when writes go out.
type schedule struct {
	// rate is the writes per second; 0 writes as fast as the writes return
	// (and ready allows).
	rate     float64
	duration time.Duration
	// workers write concurrently, each waiting for its write to return.
	workers int
	// ready, when set, is asked before each write; the worker waits while it
	// says no, so that a closed loop keeps a bounded number of writes in
	// flight.
	ready func() bool
}

// run calls write(ctx, i) for i = 0, 1, ..., the i-th at start + i/rate,
// until the duration is over; it returns the number of writes that
// returned, and the first error, which stops it.
func (s schedule) run(ctx context.Context, write func(ctx context.Context, i int) error) (int64, error) {
	if s.workers < 1 {
		return 0, fmt.Errorf("schedule needs at least one worker, got %d", s.workers)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	end := start.Add(s.duration)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range s.workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				due := start
				if s.rate > 0 {
					due = start.Add(time.Duration(float64(i) / s.rate * float64(time.Second)))
				}
				if !due.Before(end) || !s.wait(ctx, due, end) {
					return
				}
				if err := write(ctx, int(i)); err != nil {
					cancel(fmt.Errorf("write %d: %w", i, err))
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return done.Load(), err
	}
	return done.Load(), nil
}

// wait sleeps until due and until ready allows a write; false means the
// schedule is over (its end passed, or ctx ended).
func (s schedule) wait(ctx context.Context, due, end time.Time) bool {
	if d := time.Until(due); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	for s.ready != nil && !s.ready() {
		if ctx.Err() != nil || !time.Now().Before(end) {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
	return ctx.Err() == nil && time.Now().Before(end)
}
