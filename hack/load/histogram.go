package main

import (
	"math"
	"math/bits"
	"sync"
	"time"
)

// latencies is a histogram of durations whose buckets are at most 1/64 of
// their value wide: constant memory however many calls a run makes, and
// quantiles within 1.6%. Safe for concurrent use.
type latencies struct {
	mu     sync.Mutex
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const (
	// histSubBits: values below 1<<histSubBits nanoseconds have a bucket each;
	// above, each power of two is split into 1<<(histSubBits-1) buckets.
	histSubBits = 7
	histExact   = 1 << histSubBits
	histHalf    = histExact / 2
	histBuckets = histExact + (64-histSubBits)*histHalf
)

func bucketOf(d time.Duration) int {
	v := uint64(max(d, 0))
	if v < histExact {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits // v>>shift is in [histHalf, histExact)
	return histExact + (shift-1)*histHalf + int(v>>shift) - histHalf
}

// bucketMid is the middle of bucket i.
func bucketMid(i int) time.Duration {
	if i < histExact {
		return time.Duration(i)
	}
	i -= histExact
	shift := i/histHalf + 1
	low := uint64(i%histHalf+histHalf) << shift
	return time.Duration(low + (uint64(1)<<shift)/2)
}

func (h *latencies) record(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[bucketOf(d)]++
	h.n++
	h.max = max(h.max, d)
}

// count is the number of durations recorded.
func (h *latencies) count() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// quantile returns the q-quantile (0 < q <= 1) of the recorded durations,
// by nearest rank (the smallest that at least q of them do not exceed, the
// ceil(q*n)-th), 0 for none; the largest is exact.
func (h *latencies) quantile(q float64) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return 0
	}
	// The small tolerance keeps q*n that is a whole number in exact
	// arithmetic (0.5 of 100) from rounding up past it.
	rank := uint64(math.Ceil(q*float64(h.n) - 1e-9))
	rank = min(max(rank, 1), h.n)
	if rank == h.n {
		return h.max
	}
	seen := uint64(0)
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			return min(bucketMid(i), h.max)
		}
	}
	return h.max
}
