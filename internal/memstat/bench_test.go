package memstat

import (
	"testing"
	"time"

	"github.com/leaninformer/leaninformer/internal/benchkit"
)

// BenchmarkSamplerIdle reports the CPU a Sampler costs a process that does
// nothing else, per second of wall time: the share of hack/bench's CPU
// figures that is the measurement's own. Each iteration sleeps 100 ms
// while the sampler ticks; the off rows are the same sleep without one.
//
//	go test -run '^$' -bench SamplerIdle -benchtime 20x ./internal/memstat/
func BenchmarkSamplerIdle(b *testing.B) {
	for _, c := range []struct {
		name     string
		interval time.Duration // 0: no sampler
	}{{"off", 0}, {"2ms", 2 * time.Millisecond}, {"20ms", 20 * time.Millisecond}} {
		b.Run("interval="+c.name, func(b *testing.B) {
			var s *Sampler
			if c.interval > 0 {
				s = Start(c.interval)
			}
			cpu0, wall0 := benchkit.CPUSeconds(), time.Now()
			for b.Loop() {
				time.Sleep(100 * time.Millisecond)
			}
			cpu, wall := benchkit.CPUSeconds()-cpu0, time.Since(wall0).Seconds()
			if s != nil {
				s.Stop()
			}
			b.ReportMetric(1000*cpu/wall, "cpu-ms/s")
		})
	}
}
