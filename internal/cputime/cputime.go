// Package cputime reads the CPU time of the process, for benchmarks on a
// shared machine: wall time per operation grows with other jobs' load,
// the CPU time a benchmark spends much less.
package cputime

import (
	"syscall"
	"testing"
	"time"
)

// Process returns the user and system CPU time the process has used, GC
// workers included.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err) // RUSAGE_SELF cannot fail on the platforms Go supports
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Report reports the process CPU time since start per unit (b.N
// operations, or n objects) as "cpu-ns/<unit>".
func Report(b *testing.B, start time.Duration, n int, unit string) {
	b.ReportMetric(float64((Process()-start).Nanoseconds())/float64(n), "cpu-ns/"+unit)
}
