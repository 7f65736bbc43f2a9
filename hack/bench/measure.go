package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"syscall"
	"time"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/internal/memstat"
)

// Phase is what one child measured over one window: the initial sync, or a
// forced relist. Heap figures are relative to the child's baseline.
type Phase struct {
	Row string `json:"row"`
	// MemLimit is the GOMEMLIMIT the child ran under, 0 for none.
	MemLimit int64 `json:"memLimitBytes"`
	// SyncSeconds: from the start to the handler having synced (informers),
	// the list being complete (without store, floor), or from the first
	// request of a relist to the handler having got all of it.
	SyncSeconds float64 `json:"syncSeconds"`
	// PeakHeap is the largest sampled size of heap objects, garbage included.
	PeakHeap int64 `json:"peakHeapBytes"`
	// PeakLive is the largest live heap a GC marked.
	PeakLive int64 `json:"peakLiveBytes"`
	// SteadyHeap is the heap after two full GCs at the end of the window.
	SteadyHeap int64 `json:"steadyHeapBytes"`
	// PeakRSS is the process's VmHWM (absolute), reset at the window start.
	PeakRSS uint64 `json:"peakRSSBytes"`
	// CPUSeconds is the process's CPU time (user and system, all threads)
	// over the window: decoding, storing, handlers, GC and the heap sampler.
	CPUSeconds   float64 `json:"cpuSeconds"`
	GCCPUSeconds float64 `json:"gcCPUSeconds"`
	GCs          uint64  `json:"gcs"`
	// Objects is what the store holds, or, without store, how many objects
	// the list brought.
	Objects      int    `json:"objects"`
	BaselineHeap uint64 `json:"baselineHeapBytes"`
	BaselineRSS  uint64 `json:"baselineRSSBytes"`
	// BaselineRuntime is the Go runtime's memory (what GOMEMLIMIT limits)
	// at the baseline.
	BaselineRuntime uint64                   `json:"baselineRuntimeBytes"`
	Requests        faultproxy.RequestCounts `json:"requests"`
	// Timeline is the heap over the child's life: on the initial sync's
	// phase of informer variants.
	Timeline *Timeline `json:"timeline,omitempty"`
}

// baseline is the child before the variant starts.
type baseline struct{ heap, rss, runtime uint64 }

func measureBaseline() baseline {
	heap := memstat.HeapAfterGC()
	rss, _ := procStatus("VmRSS")
	return baseline{heap: heap, rss: rss, runtime: runtimeBytes()}
}

// window is one measured stretch of a child's life.
type window struct {
	sampler      *memstat.Sampler
	cpu0, gcCPU0 float64
	start        time.Time
}

func startWindow(interval time.Duration) (*window, error) {
	if err := resetPeakRSS(); err != nil {
		return nil, err
	}
	return &window{cpu0: processCPUSeconds(), gcCPU0: gcCPUSeconds(), start: time.Now(), sampler: memstat.Start(interval)}, nil
}

// stop ends the window and returns its figures; SyncSeconds runs from the
// window's start. The steady heap comes from a full GC after the window,
// whose marked live heap also counts for PeakLive: the live heap at the end
// is one a GC would have marked, however late the last automatic one ran.
func (w *window) stop(base baseline, row string) Phase {
	end := time.Now()
	peak := w.sampler.Stop()
	rss, _ := procStatus("VmHWM")
	gcCPU := gcCPUSeconds() - w.gcCPU0
	cpu := processCPUSeconds() - w.cpu0
	steady := memstat.HeapAfterGC()
	return Phase{
		Row:             row,
		SyncSeconds:     end.Sub(w.start).Seconds(),
		PeakHeap:        rel(peak.Heap, base.heap),
		PeakLive:        rel(max(peak.Live, liveHeap()), base.heap),
		SteadyHeap:      rel(steady, base.heap),
		PeakRSS:         rss,
		CPUSeconds:      cpu,
		GCCPUSeconds:    gcCPU,
		GCs:             peak.GCs,
		BaselineHeap:    base.heap,
		BaselineRSS:     base.rss,
		BaselineRuntime: base.runtime,
	}
}

func rel(v, base uint64) int64 { return int64(v) - int64(base) }

// resetPeakRSS resets the kernel's VmHWM to the current RSS (Linux >= 4.0),
// so that a window's peak RSS is its own: getrusage in a child would report
// the parent's peak, and VmHWM the process's whole life.
func resetPeakRSS() error {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("reset peak RSS through /proc/self/clear_refs: %w", err)
	}
	return nil
}

// procStatus returns a "kB" field of /proc/self/status in bytes.
func procStatus(field string) (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		name, value, ok := bytes.Cut(s.Bytes(), []byte(":"))
		if !ok || string(name) != field {
			continue
		}
		num, _, _ := bytes.Cut(bytes.TrimSpace(value), []byte(" "))
		kb, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/self/status %s: %w", field, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc/self/status has no %s", field)
}

// liveHeap is the live heap the last GC marked.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// processCPUSeconds is the CPU time the process has used, all threads.
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func gcCPUSeconds() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}

// runtimeBytes is the memory GOMEMLIMIT counts: everything the Go runtime
// has mapped minus what it returned to the OS.
func runtimeBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
