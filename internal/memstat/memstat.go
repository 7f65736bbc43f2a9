// Package memstat measures Go heap use for benchmarks: the sampled peak of
// heap objects, the largest live heap a GC marked, the heap after a full
// collection, and the GC's CPU time. It reads runtime/metrics, which costs no
// stop-the-world.
package memstat

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

const (
	heapObjects  = "/memory/classes/heap/objects:bytes"
	heapLive     = "/gc/heap/live:bytes"
	gcCycles     = "/gc/cycles/total:gc-cycles"
	gcCPU        = "/cpu/classes/gc/total:cpu-seconds"
	memoryTotal  = "/memory/classes/total:bytes"
	heapReleased = "/memory/classes/heap/released:bytes"
)

// Peak is what a Sampler saw between Start and Stop.
type Peak struct {
	// Heap is the largest sampled size of heap objects, live or not yet
	// collected. With GOGC=100 it can carry up to one live heap of garbage.
	Heap uint64
	// Live is the largest live heap any GC that completed while sampling
	// (after Start) marked: what the program really held, independent of GC
	// pacing. What the last GC before Start marked does not count, since
	// the program may have freed it before Start. Live is 0 when no GC
	// completed while sampling (GCs is 0): the phase was not measured. A
	// caller that needs a figure anyway takes the live heap of a full
	// collection after Stop (LiveHeap after HeapAfterGC), a lower bound.
	Live uint64
	// GCs is the number of GC cycles that completed while sampling.
	GCs uint64
	// Samples is the number of samples taken.
	Samples int
}

// Sampler samples heap metrics in its own goroutine until Stop.
type Sampler struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak Peak
	gc0  uint64
}

// Start begins sampling every interval (a few milliseconds is usual).
func Start(interval time.Duration) *Sampler {
	s := &Sampler{stop: make(chan struct{}), done: make(chan struct{})}
	samples := newSamples()
	metrics.Read(samples)
	s.gc0 = samples[sampleGCs].Value.Uint64()
	s.record(samples)
	go s.loop(interval)
	return s
}

// The indices of newSamples' metrics. The GC count comes before the live
// heap: metrics.Read reads them in order, so a count above Sampler.gc0 means
// the live heap read after it is from a GC that completed after Start.
const (
	sampleHeap = iota
	sampleGCs
	sampleLive
)

func newSamples() []metrics.Sample {
	return []metrics.Sample{sampleHeap: {Name: heapObjects}, sampleGCs: {Name: gcCycles}, sampleLive: {Name: heapLive}}
}

func (s *Sampler) loop(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	samples := newSamples()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			metrics.Read(samples)
			s.record(samples)
		}
	}
}

func (s *Sampler) record(samples []metrics.Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peak.Heap = max(s.peak.Heap, samples[sampleHeap].Value.Uint64())
	s.peak.GCs = samples[sampleGCs].Value.Uint64() - s.gc0
	if s.peak.GCs > 0 { // else the live heap is from a GC before Start
		s.peak.Live = max(s.peak.Live, samples[sampleLive].Value.Uint64())
	}
	s.peak.Samples++
}

// Sample takes one sample now, so that a peak at a known point (for instance
// just before a swap) is not missed between ticks.
func (s *Sampler) Sample() {
	samples := newSamples()
	metrics.Read(samples)
	s.record(samples)
}

// Stop ends sampling, takes a last sample and returns the peaks. The last
// sample waits for a GC cycle that is marking when Stop is called: one that
// began just before (the last objects of a list pushed the heap past its
// goal) has not been seen yet, and a full collection after Stop
// (HeapAfterGC) would finish it and overwrite what it marked before anyone
// read it.
func (s *Sampler) Stop() Peak {
	close(s.stop)
	<-s.done
	awaitMark()
	s.Sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// awaitMark blocks until a GC cycle that is marking now, if any, has
// finished its mark, without starting one: turning the collector off waits
// for that (the runtime's setGCPercent returns "with no GC running"), and
// the setting is restored at once.
func awaitMark() {
	debug.SetGCPercent(debug.SetGCPercent(-1))
}

// Snapshot is the heap at one moment.
type Snapshot struct {
	// Heap is the size of heap objects, live or not yet collected.
	Heap uint64
	// Live is the live heap the last GC marked.
	Live uint64
	// GCs is the number of GC cycles completed since the program started.
	GCs uint64
}

// Read returns the heap now.
func Read() Snapshot {
	samples := newSamples()
	metrics.Read(samples)
	return Snapshot{Heap: samples[sampleHeap].Value.Uint64(), Live: samples[sampleLive].Value.Uint64(), GCs: samples[sampleGCs].Value.Uint64()}
}

// LiveHeap is the live heap the last GC marked.
func LiveHeap() uint64 { return Read().Live }

// GCCPUSeconds is the Go runtime's estimate of the CPU time its garbage
// collector has used since the program started.
func GCCPUSeconds() float64 {
	s := []metrics.Sample{{Name: gcCPU}}
	metrics.Read(s)
	return s[0].Value.Float64()
}

// RuntimeBytes is the memory GOMEMLIMIT counts: everything the Go runtime
// has mapped minus what it returned to the OS.
func RuntimeBytes() uint64 {
	s := []metrics.Sample{{Name: memoryTotal}, {Name: heapReleased}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// HeapAfterGC runs two full collections (the second one frees what the
// first one's finalizers released) and returns the size of live heap objects.
func HeapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	samples := newSamples()
	metrics.Read(samples)
	return samples[sampleHeap].Value.Uint64()
}

// MiB formats bytes as mebibytes for reports.
func MiB(b uint64) float64 { return float64(b) / (1 << 20) }
