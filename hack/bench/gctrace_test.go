package main

import (
	"slices"
	"testing"

	"github.com/leaninformer/leaninformer/internal/benchresults"
)

// A child's log as a run wrote it (gctrace lines of go1.26 and klog lines
// between them), cut down.
const childLog = `I1202 08:17:02.100000   16100 child.go:99] starting
gc 9 @0.250s 5%: 0.40+13+0.007 ms clock, 0.81+0/1.1/25+0.014 ms cpu, 4->4->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
bench-gc-window: begin
gc 10 @0.279s 5%: 0.40+13+0.007 ms clock, 0.81+0/1.1/25+0.014 ms cpu, 33->34->20 MB, 44 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 11 @0.297s 5%: 0.057+9.1+0.007 ms clock, 0.11+0/0.94/16+0.014 ms cpu, 25->25->25 MB, 51 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
bench-gc-window: end
gc 12 @2.279s 0%: 0.45+13+0.008 ms clock, 0.91+0/0.39/26+0.017 ms cpu, 25->25->25 MB, 51 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
bench-gc-window: begin
gc 14 @3.248s 0%: 0.71+24+1.1 ms clock, 1.4+0.074/9.2/13+2.2 ms cpu, 43->46->29 MB, 51 MB goal, 0 MB stacks, 0 MB globals, 2 P
I1202 08:17:05.100000   16100 reflector.go:1] a log line
gc 15 @3.349s 0%: 2.6+17+0.033 ms clock, 5.3+0/10/14+0.066 ms cpu, 50->51->28 MB, 59 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 16 @3.400s 0%: 0.065+9.3+0.007 ms clock, 0.13+0/0.77/17+0.015 ms cpu, 34->34->25 MB, 56 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
bench-gc-window: end
`

func TestParseGCWindows(t *testing.T) {
	got := parseGCWindows([]byte(childLog))
	want := [][]gcCycle{
		{{33, 34, 20}, {25, 25, 25}},
		{{43, 46, 29}, {50, 51, 28}, {34, 34, 25}},
	}
	if len(got) != len(want) {
		t.Fatalf("parseGCWindows: %d windows %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("window %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// A marker printed while the runtime wrote a cycle's line lands inside it
// (as in a run of ours-stream-encoded-s2 at 235bcc6): the cycle is the
// window's, and the end marker still ends the window, so that what the
// child allocates between windows (17 MiB here) is no one's.
func TestParseGCWindowsWithAMarkerInsideACycleLine(t *testing.T) {
	const log = `bench-gc-window: begin
gc 27 @0.456s 6%: 0.33+2.1+0.004 ms clock, 0.66+0/0.56/3.3+0.008 ms cpu, 9->9->5 MB, 14 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 28 @0.459s 6%: 0.042+3.3+bench-gc-window: end
0.004 ms clock, 0.084+0/0.64/3.2+0.009 ms cpu, 5->5->5 MB, 11 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
gc 29 @0.477s 6%: 0.072+6.5+0.090 ms clock, 0.14+0.61/1.9/2.7+0.18 ms cpu, 9->10->10 MB, 11 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 30 @0.499s 6%: 0.060+8.2+0.16 ms clock, 0.12+0.27/4.4/5.5+0.32 ms cpu, 17->18->17 MB, 20 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 31 @0.510s 6%: 0.060+8.2+bench-gc-window: begin
0.16 ms clock, 0.12+0.27/4.4/5.5+0.32 ms cpu, 17->17->16 MB, 20 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
gc 32 @0.601s 6%: 0.060+8.2+0.16 ms clock, 0.12+0.27/4.4/5.5+0.32 ms cpu, 12->13->7 MB, 20 MB goal, 0 MB stacks, 0 MB globals, 2 P
bench-gc-window: end
`
	got := parseGCWindows([]byte(log))
	want := [][]gcCycle{{{9, 9, 5}, {5, 5, 5}}, {{12, 13, 7}}}
	if len(got) != len(want) || !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) {
		t.Errorf("parseGCWindows = %v, want %v", got, want)
	}
}

func TestAttachGCPeaks(t *testing.T) {
	phases := []benchresults.Phase{{Row: "ours-stream"}, {Row: "ours-stream relist"}}
	attachGCPeaks(phases, []byte(childLog))
	// The sync's largest mark is the forced one at its end (25 > 20).
	if m := phases[0].PeakMark; m == nil || *m != (benchresults.GCMark{StartMiB: 25, EndMiB: 25, MarkedMiB: 25}) {
		t.Errorf("sync: PeakMark = %+v", m)
	}
	if m := phases[1].PeakMark; m == nil || *m != (benchresults.GCMark{StartMiB: 43, EndMiB: 46, MarkedMiB: 29}) {
		t.Errorf("relist: PeakMark = %+v", m)
	}
	if got := phases[1].PeakMarkCell(); got != "29 / 3" {
		t.Errorf("PeakMarkCell = %q, want 29 / 3", got)
	}

	// The peak mark is a floor of PeakLive, above the baseline: a cycle the
	// sampler missed raises it, a larger sampled figure stays.
	phases = []benchresults.Phase{{PeakLive: 10 << 20, BaselineHeap: 2 << 20}, {PeakLive: 30 << 20, BaselineHeap: 2 << 20}}
	attachGCPeaks(phases, []byte(childLog))
	if phases[0].PeakLive != 23<<20 || phases[1].PeakLive != 30<<20 {
		t.Errorf("PeakLive after attaching = %d and %d MiB, want 23 (25 marked less the 2 MiB baseline) and 30 (sampled, above the 27 marked)",
			phases[0].PeakLive>>20, phases[1].PeakLive>>20)
	}

	// A log whose windows do not match the phases attaches nothing.
	one := []benchresults.Phase{{Row: "ours-stream"}}
	attachGCPeaks(one, []byte(childLog))
	if one[0].PeakMark != nil || one[0].PeakMarkCell() != "–" {
		t.Errorf("one phase for two windows: PeakMark = %+v, cell %q", one[0].PeakMark, one[0].PeakMarkCell())
	}
}

func TestWithGCTrace(t *testing.T) {
	for _, tc := range []struct{ env, want []string }{
		{[]string{"PATH=/bin"}, []string{"PATH=/bin", "GODEBUG=gctrace=1"}},
		{[]string{"GODEBUG=madvdontneed=1", "PATH=/bin"}, []string{"GODEBUG=madvdontneed=1,gctrace=1", "PATH=/bin"}},
		{[]string{"GODEBUG="}, []string{"GODEBUG=gctrace=1"}},
	} {
		if got := withGCTrace(slices.Clone(tc.env)); !slices.Equal(got, tc.want) {
			t.Errorf("withGCTrace(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

func TestMedianRunsMark(t *testing.T) {
	mark := func(m int64) *benchresults.GCMark { return &benchresults.GCMark{MarkedMiB: m} }
	runs := []benchresults.Phase{
		{PeakLive: 30, PeakMark: mark(30)},
		{PeakLive: 10, PeakMark: mark(10)},
		{PeakLive: 20, PeakMark: mark(20)},
	}
	if got := medianRunsMark(runs, 20); got == nil || got.MarkedMiB != 20 {
		t.Errorf("medianRunsMark = %+v, want the run of PeakLive 20", got)
	}
	if got := medianRunsMark(nil, 20); got != nil {
		t.Errorf("medianRunsMark(nil) = %+v", got)
	}
}
