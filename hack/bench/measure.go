package main

import (
	"time"

	"github.com/leaninformer/leaninformer/internal/benchkit"
	"github.com/leaninformer/leaninformer/internal/benchresults"
	"github.com/leaninformer/leaninformer/internal/memstat"
)

// baseline is the child before the variant starts.
type baseline struct{ heap, rss, runtime uint64 }

func measureBaseline() baseline {
	heap := memstat.HeapAfterGC()
	rss, _ := benchkit.ProcStatus("VmRSS")
	return baseline{heap: heap, rss: rss, runtime: memstat.RuntimeBytes()}
}

// window is one measured stretch of a child's life.
type window struct {
	sampler      *memstat.Sampler
	cpu0, gcCPU0 float64
	start        time.Time
}

func startWindow(interval time.Duration) (*window, error) {
	if err := benchkit.ResetPeakRSS(); err != nil {
		return nil, err
	}
	markWindowBegin()
	return &window{cpu0: benchkit.CPUSeconds(), gcCPU0: memstat.GCCPUSeconds(), start: time.Now(), sampler: memstat.Start(interval)}, nil
}

// stop ends the window and returns its figures; SyncSeconds runs from the
// window's start. The steady heap comes from a full GC after the window,
// whose marked live heap also counts for PeakLive: the live heap at the end
// is one a GC would have marked, however late the last automatic one ran.
func (w *window) stop(base baseline, row string) benchresults.Phase {
	end := time.Now()
	peak := w.sampler.Stop()
	rss, _ := benchkit.ProcStatus("VmHWM")
	gcCPU := memstat.GCCPUSeconds() - w.gcCPU0
	cpu := benchkit.CPUSeconds() - w.cpu0
	steady := memstat.HeapAfterGC()
	markWindowEnd()
	return benchresults.Phase{
		Row:             row,
		SyncSeconds:     end.Sub(w.start).Seconds(),
		PeakHeap:        rel(peak.Heap, base.heap),
		PeakLive:        rel(max(peak.Live, memstat.LiveHeap()), base.heap),
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
