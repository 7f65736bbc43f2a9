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
