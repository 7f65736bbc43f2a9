package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/leaninformer/leaninformer/internal/benchresults"
)

// The peak live heap of a window is what a GC marked, and a GC marks
// everything allocated while it is marking, reachable or not: a relist
// decoding objects through a concurrent mark of a 24 MiB store counts a few
// MiB of objects it has already dropped. The children run with
// GODEBUG=gctrace=1, whose line per cycle gives the heap when the mark
// started and when it ended, and print a marker around each window, so
// that the parent can say of each window's largest mark how much of it was
// allocated during that mark. It is a bound, not a measure, of the garbage
// in the peak: what was allocated during the mark may also still be
// reachable (a page being decoded).

// gcWindowMarker starts the line a child prints to stderr, which gctrace
// also writes to, when a measured window begins and after it ended.
const gcWindowMarker = "bench-gc-window:"

// gcTraceLine matches the heap figures of a gctrace line: the heap at the
// start of the mark, at its end, and the live heap it marked, in MiB
// (truncated), then the goal.
var gcTraceLine = regexp.MustCompile(`\bgc [0-9]+ @[0-9.]+s [0-9]+%: .* ([0-9]+)->([0-9]+)->([0-9]+) MB, [0-9]+ MB goal`)

// gcCycle is one GC cycle's line.
type gcCycle struct{ start, end, marked int64 } // MiB

// markWindowBegin and markWindowEnd delimit a measured window in the child's
// stderr.
func markWindowBegin() { fmt.Fprintln(os.Stderr, gcWindowMarker, "begin") }
func markWindowEnd()   { fmt.Fprintln(os.Stderr, gcWindowMarker, "end") }

// parseGCWindows returns the GC cycles of each window of a child's log, in
// the order of the windows: the cycles whose lines come between a begin
// marker and the next end marker.
func parseGCWindows(log []byte) [][]gcCycle {
	var windows [][]gcCycle
	in := false
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, gcWindowMarker+" begin"):
			windows = append(windows, nil)
			in = true
		case strings.HasPrefix(line, gcWindowMarker+" end"):
			in = false
		case in:
			if c, ok := parseGCLine(line); ok {
				windows[len(windows)-1] = append(windows[len(windows)-1], c)
			}
		}
	}
	return windows
}

func parseGCLine(line string) (gcCycle, bool) {
	m := gcTraceLine.FindStringSubmatch(line)
	if m == nil {
		return gcCycle{}, false
	}
	num := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	return gcCycle{start: num(m[1]), end: num(m[2]), marked: num(m[3])}, true
}

// peakMark is the window's cycle that marked the most, the last of equals
// (the mark a window's PeakLive comes from, up to gctrace's rounding).
func peakMark(cycles []gcCycle) (gcCycle, bool) {
	var best gcCycle
	found := false
	for _, c := range cycles {
		if !found || c.marked >= best.marked {
			best, found = c, true
		}
	}
	return best, found
}

// attachGCPeaks sets each phase's PeakMark from the window of the same
// index in the child's log. Phases and windows come in the same order (each
// window is one startWindow ... stop); a log with a different number of
// windows leaves every phase without one rather than guess.
func attachGCPeaks(phases []benchresults.Phase, log []byte) {
	windows := parseGCWindows(log)
	if len(windows) != len(phases) {
		return
	}
	for i, w := range windows {
		if c, ok := peakMark(w); ok {
			phases[i].PeakMark = &benchresults.GCMark{StartMiB: c.start, EndMiB: c.end, MarkedMiB: c.marked}
		}
	}
}

// withGCTrace adds gctrace=1 to env's GODEBUG.
func withGCTrace(env []string) []string {
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			if v != "" {
				v += ","
			}
			env[i] = "GODEBUG=" + v + "gctrace=1"
			return env
		}
	}
	return append(env, "GODEBUG=gctrace=1")
}

// medianRunsMark is the PeakMark of the run whose PeakLive is nearest to
// the rows' median peakLive: the peak mark of the run the median comes from
// (with an odd number of runs, exactly), so that the row's two columns
// describe one mark. Nil if that run has none.
func medianRunsMark(runs []benchresults.Phase, peakLive int64) *benchresults.GCMark {
	var best *benchresults.Phase
	for i := range runs {
		if best == nil || abs(runs[i].PeakLive-peakLive) < abs(best.PeakLive-peakLive) {
			best = &runs[i]
		}
	}
	if best == nil {
		return nil
	}
	return best.PeakMark
}

func abs(v int64) int64 { return max(v, -v) }
