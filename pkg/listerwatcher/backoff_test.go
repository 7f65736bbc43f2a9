package listerwatcher

import (
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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

// During an outage every retry fails at once, so the only time that passes
// is the delays. Ours stays at the cap (30-60 s) until 2 minutes pass
// without a retry; client-go v0.37.2's reflector delay (wait.Backoff's
// DelayWithReset with 2 minutes, built as NewReflectorWithOptions builds it)
// goes back to 800 ms every 2 minutes counted from its last reset, outage or
// not: it sends a burst of quick retries every 2 minutes. docs/compatibility.md
// lists this as a deliberate difference; should this test fail on its client-go
// half, client-go changed and the row is stale.
func TestBackoffDoesNotResetDuringAnOutage(t *testing.T) {
	const outage = 10 * time.Minute
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	clk := clocktesting.NewFakePassiveClock(start)
	ours := newBackoff(DefaultBackoff, clk)
	var delays []time.Duration
	for clk.Since(start) < outage {
		d := ours.next(0)
		delays = append(delays, d)
		clk.SetTime(clk.Now().Add(d))
	}
	capped := false
	for i, d := range delays {
		if d >= DefaultBackoff.Cap {
			capped = true
		} else if capped {
			t.Errorf("retry %d of %d: delay %v after reaching the cap, want at least %v for as long as the outage lasts (delays %v)", i, len(delays), d, DefaultBackoff.Cap, delays)
		}
	}
	if !capped {
		t.Fatalf("the delays never reached the cap in %v: %v", outage, delays)
	}

	theirClock := clocktesting.NewFakeClock(start)
	theirs := wait.Backoff{
		Duration: DefaultBackoff.Initial,
		Cap:      DefaultBackoff.Cap,
		Steps:    int(math.Ceil(float64(DefaultBackoff.Cap) / float64(DefaultBackoff.Initial))),
		Factor:   DefaultBackoff.Factor,
		Jitter:   DefaultBackoff.Jitter,
	}.DelayWithReset(theirClock, DefaultBackoff.ResetAfter)
	capped, reset := false, 0
	for theirClock.Since(start) < outage {
		d := theirs()
		if d >= DefaultBackoff.Cap {
			capped = true
		} else if capped && d < 2*DefaultBackoff.Initial {
			reset++
			capped = false
		}
		theirClock.Step(d)
	}
	if reset == 0 {
		t.Errorf("client-go's reflector delay never went back to %v during a %v outage: client-go changed, update docs/compatibility.md", DefaultBackoff.Initial, outage)
	}
	t.Logf("in a %v outage: ours retried %d times, client-go's delay went back to %v %d times", outage, len(delays), DefaultBackoff.Initial, reset)
}
