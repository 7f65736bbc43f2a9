package memstat

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

var sink [][]byte

func TestSamplerSeesAllocationPeak(t *testing.T) {
	base := HeapAfterGC()
	s := Start(time.Millisecond)
	for range 64 {
		sink = append(sink, make([]byte, 1<<20))
	}
	s.Sample()
	held := HeapAfterGC() // a GC while 64 MiB are live: the marked live heap includes them
	s.Sample()            // before the next GC marks them gone
	sink = nil
	runtime.GC()
	p := s.Stop()

	if held < base+60<<20 {
		t.Fatalf("heap after GC with 64 MiB held = %d, baseline %d", held, base)
	}
	if p.Heap < base+60<<20 {
		t.Errorf("sampled peak %d MiB does not include the 64 MiB held (baseline %.1f MiB)", p.Heap>>20, MiB(base))
	}
	if p.Live < 60<<20 {
		t.Errorf("marked-live peak %d MiB does not include the 64 MiB held", p.Live>>20)
	}
	if p.GCs < 2 {
		t.Errorf("GCs = %d, want at least the 2 forced ones", p.GCs)
	}
	if after := HeapAfterGC(); after > base+8<<20 {
		t.Errorf("heap after release = %.1f MiB, baseline %.1f MiB", MiB(after), MiB(base))
	}
}

func TestReadFollowsAllocations(t *testing.T) {
	before := HeapAfterGC()
	gcs := Read().GCs
	sink = append(sink, make([]byte, 32<<20))
	now := Read()
	if now.Heap < before+30<<20 {
		t.Errorf("heap read after allocating 32 MiB = %.1f MiB, before %.1f MiB", MiB(now.Heap), MiB(before))
	}
	runtime.GC()
	if after := Read(); after.GCs <= gcs || after.Live < 30<<20 || LiveHeap() != after.Live {
		t.Errorf("after a GC with 32 MiB live: %+v (GCs before %d), LiveHeap %d", after, gcs, LiveHeap())
	}
	sink = nil
	if RuntimeBytes() < 32<<20 || GCCPUSeconds() < 0 {
		t.Errorf("runtime memory %d bytes, GC CPU %v s: want at least the heap, and no negative time", RuntimeBytes(), GCCPUSeconds())
	}
}

type node struct {
	next *node
	_    [6]uintptr // 64-byte nodes: more heap per pointer to mark
}

var list *node

// gcPauses counts the collector's stop-the-world pauses so far.
func gcPauses() uint64 {
	s := []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(s)
	var n uint64
	for _, c := range s[0].Value.Float64Histogram().Counts {
		n += c
	}
	return n
}

// A cycle still marking when Stop is called counts: Stop waits for its mark
// to finish before the last sample. Without that wait the sampler would
// report the live heap of the cycle before, and the full GC a benchmark runs
// after Stop would replace what the late cycle marked.
func TestStopSeesACycleStillMarking(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no cycle but the one this test starts
	runtime.GC()
	before := Read()
	// About 128 MiB of pointers for a mark to walk: it takes tens of
	// milliseconds, far longer than noticing that it began.
	for range 2 << 20 {
		list = &node{next: list}
	}
	defer func() { list = nil }()
	s := Start(time.Hour) // no sample but Start's and Stop's
	pauses := gcPauses()
	marked := make(chan struct{})
	go func() {
		defer close(marked)
		runtime.GC()
	}()
	// A cycle begins with a stop-the-world pause: once that pause is
	// counted and no cycle has completed, one is marking.
	for deadline := time.Now().Add(5 * time.Second); gcPauses() == pauses; time.Sleep(50 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatal("no GC cycle began within 5 s of runtime.GC")
		}
	}
	if now := Read(); now.GCs != before.GCs {
		t.Fatalf("a cycle completed before Stop (%d, then %d): the test needs one still marking", before.GCs, now.GCs)
	}
	p := s.Stop()
	<-marked
	if p.Live < before.Live+100<<20 {
		t.Errorf("Stop reported a marked-live peak of %.1f MiB: it missed the cycle marking the %.0f MiB list when it was called (the cycle before marked %.1f MiB)",
			MiB(p.Live), MiB(uint64(2<<20)*64), MiB(before.Live))
	}
	if p.GCs < 1 {
		t.Errorf("GCs = %d, want the cycle that was marking when Stop was called", p.GCs)
	}
}

// Peak.Live counts only the GCs that completed after Start: a large heap a
// GC marked before Start and that was freed before it is not the phase's.
// With no GC in the phase, Live is 0; with one, it is what that GC marked.
func TestLiveIgnoresGCsBeforeStart(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no GC but the ones this test runs
	sink = append(sink, make([]byte, 64<<20))
	runtime.GC() // marks the 64 MiB live, before Start
	sink = nil

	s := Start(time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	p := s.Stop()
	if p.GCs != 0 {
		t.Fatalf("GCs = %d with the collector off: the test needs a phase with no GC", p.GCs)
	}
	if p.Live != 0 {
		t.Errorf("no GC ran while sampling, yet Peak.Live = %.1f MiB: what a GC before Start marked", MiB(p.Live))
	}

	sink = append(sink, make([]byte, 64<<20))
	runtime.GC()
	sink = nil
	s = Start(time.Millisecond)
	runtime.GC() // marks the 64 MiB gone
	p = s.Stop()
	if p.GCs < 1 {
		t.Fatalf("GCs = %d, want the forced one", p.GCs)
	}
	if p.Live == 0 || p.Live >= 60<<20 {
		t.Errorf("Peak.Live = %.1f MiB after a GC in the phase that found the 64 MiB freed before Start: want that GC's small live heap", MiB(p.Live))
	}
}
