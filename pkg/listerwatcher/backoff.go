package listerwatcher

import (
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"
)

// backoff hands out the delays of Backoff. It is used by one goroutine.
type backoff struct {
	Backoff
	clock  clock.PassiveClock
	random func() float64 // in [0, 1)

	base  time.Duration // base of the next delay
	retry time.Time     // when the last delay ends: health is counted from there
}

func newBackoff(b Backoff, clk clock.PassiveClock) *backoff {
	return &backoff{Backoff: b, clock: clk, random: rand.Float64, base: b.Initial}
}

// next returns the delay before the next retry, at least floor (a server's
// Retry-After).
func (b *backoff) next(floor time.Duration) time.Duration {
	now := b.clock.Now()
	if b.retry.IsZero() || now.Sub(b.retry) >= b.ResetAfter {
		b.base = b.Initial
	}
	d := b.base
	if b.Jitter > 0 {
		d += time.Duration(b.random() * b.Jitter * float64(d))
	}
	if grown := float64(b.base) * b.Factor; grown < float64(b.Cap) {
		b.base = time.Duration(grown)
	} else {
		b.base = b.Cap
	}
	d = max(d, floor)
	b.retry = now.Add(d)
	return d
}
