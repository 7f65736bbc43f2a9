package memstat

import (
	"runtime"
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
