package main

import (
	"errors"
	"fmt"
)

// Result is what one child measured: one informer, one handler set, one
// write rate, over one window of writes. Heap figures are bytes above the
// child's baseline (its heap after GC before the informer started).
type Result struct {
	Backend  string `json:"backend"`
	Informer string `json:"informer"`
	Handlers string `json:"handlers"`
	// Rate is the target write rate per second; 0 is as fast as the writes
	// go (envtest) or the fast handler keeps up (fake, a closed loop).
	Rate    float64 `json:"rate"`
	Run     int     `json:"run"`
	Objects int     `json:"objects"`
	// WindowSeconds is how long the writes went on.
	WindowSeconds float64 `json:"windowSeconds"`
	Writes        int64   `json:"writes"`
	Fast          Handler `json:"fast"`
	// Slow is nil without the slow handler.
	Slow *Handler `json:"slow,omitempty"`
	// PeakHeap is the largest sampled size of heap objects in the window,
	// garbage included; PeakLive the largest live heap a GC in the window
	// marked, read after every cycle (or EndHeap, if larger); EndHeap
	// the heap after a full GC at the window's end (what the queues hold).
	PeakHeap     int64  `json:"peakHeapBytes"`
	PeakLive     int64  `json:"peakLiveBytes"`
	EndHeap      int64  `json:"endHeapBytes"`
	BaselineHeap uint64 `json:"baselineHeapBytes"`
	// PeakRSS is the process's VmHWM (absolute), reset when the window began.
	PeakRSS uint64 `json:"peakRSSBytes"`
	// CPUSeconds is the process's CPU time over the window (user and
	// system, all threads); with the fake backend it includes the fake
	// server and the writer, the same for every informer.
	CPUSeconds float64 `json:"cpuSeconds"`
	// GCs is the number of GC cycles in the window. (The runtime's own
	// estimate of the GC's CPU time is left out: it counts wall time of its
	// workers, which a loaded machine inflates up to the whole CPU time.)
	GCs uint64 `json:"gcs"`
	// LoadAverage is the machine's one-minute load average when the window
	// ended: on a shared machine, what else ran.
	LoadAverage float64 `json:"loadAverage"`
	// Relists counts the full lists after the initial one (LISTs and
	// streaming watches): none is expected.
	Relists int64 `json:"relists"`
	// Missed is the writes the fast handler had not seen once it caught up
	// after the window: none is expected.
	Missed int64    `json:"missed"`
	Series []Sample `json:"series"`
}

// delivered returns an error if the run lost events or cannot be trusted
// to have seen them: a write the fast handler never got, a relist (whose
// updates may stand in for lost ones), an update without its write time.
// Such a run fails; it must not become a row.
func (r Result) delivered() error {
	var errs []error
	if r.Missed != 0 {
		errs = append(errs, fmt.Errorf("the fast handler never got %d of the %d writes", r.Missed, r.Writes))
	}
	if r.Relists != 0 {
		errs = append(errs, fmt.Errorf("the informer relisted %d times", r.Relists))
	}
	for name, h := range map[string]*Handler{"fast": &r.Fast, "slow": r.Slow} {
		if h != nil && h.Unstamped != 0 {
			errs = append(errs, fmt.Errorf("the %s handler got %d updates without a write time", name, h.Unstamped))
		}
	}
	return errors.Join(errs...)
}

// Handler is what one handler saw in the window.
type Handler struct {
	// Calls is the number of updates it got in the window.
	Calls int64 `json:"calls"`
	// Share is Calls over the window's writes (0 without writes): in a
	// row, the median of the runs' shares, the throughput compared at a
	// target rate.
	Share     float64 `json:"share"`
	PerSecond float64 `json:"perSecond"`
	// Latency from the write to the call, in milliseconds, over the calls
	// made in the window.
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	// Backlog is the writes of the window it had not got when the window
	// ended.
	Backlog int64 `json:"backlog"`
	// Unstamped counts updates without a written-at annotation: none is
	// expected.
	Unstamped int64 `json:"unstamped"`
	// CatchUpSeconds (slow handler) is how long after the window the handler
	// took to hear of every object's last write; CaughtUp is false if it had
	// not within the child's --catch-up limit.
	CatchUpSeconds float64 `json:"catchUpSeconds,omitempty"`
	CaughtUp       bool    `json:"caughtUp,omitempty"`
}

// Sample is the child at one moment of the window.
type Sample struct {
	// Seconds since the window began.
	Seconds float64 `json:"s"`
	// Heap and Live are bytes above the baseline: heap objects, and the live
	// heap the last GC marked.
	Heap int64 `json:"heap"`
	Live int64 `json:"live"`
	// GCs is the number of GC cycles completed since the window began
	// (read before Live): while it is 0, Live is from a GC before the
	// window, and PeakLive leaves it out.
	GCs uint64 `json:"gcs"`
	// FastCalls and SlowCalls are the handlers' update calls so far.
	FastCalls int64 `json:"fast"`
	SlowCalls int64 `json:"slow,omitempty"`
}
