package listerwatcher

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBackoffJitterStretchesTheBase(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	b := newBackoff(DefaultBackoff, clk)
	random := 0.0
	b.random = func() float64 { return random }
	for _, tc := range []struct {
		random float64
		want   time.Duration
	}{
		{0, 800 * time.Millisecond},
		{0.5, 2400 * time.Millisecond},   // 1.6s stretched by half
		{0.999, 6397 * time.Millisecond}, // 3.2s stretched by 99.9%
		{0, 6400 * time.Millisecond},
		{0, 12800 * time.Millisecond},
		{0, 25600 * time.Millisecond},
		{0, 30 * time.Second},   // capped
		{0.5, 45 * time.Second}, // jitter applies on top of the cap
		{0, 30 * time.Second},
	} {
		random = tc.random
		if got := b.next(0); got.Round(time.Millisecond) != tc.want {
			t.Errorf("delay %v with random %v, want %v", got, tc.random, tc.want)
		}
	}
}

func TestBackoffFloorAndReset(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	b := newBackoff(testBackoff, clk)
	if got := b.next(5 * time.Second); got != 5*time.Second {
		t.Errorf("delay %v with a 5s Retry-After, want 5s", got)
	}
	if got := b.next(0); got != 2*time.Second {
		t.Errorf("delay %v, want 2s: the floor does not reset the growth", got)
	}
	// ResetAfter counts from the end of the last delay.
	clk.SetTime(clk.Now().Add(2*time.Second + testBackoff.ResetAfter - time.Nanosecond))
	if got := b.next(0); got != 4*time.Second {
		t.Errorf("delay %v just before ResetAfter of health, want 4s", got)
	}
	clk.SetTime(clk.Now().Add(4*time.Second + testBackoff.ResetAfter))
	if got := b.next(0); got != time.Second {
		t.Errorf("delay %v after ResetAfter of health, want the initial 1s", got)
	}
}
