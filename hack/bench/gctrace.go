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
//
// The runtime writes a cycle's line in several pieces, so a marker the child
// prints meanwhile can land inside it: "gc 28 @0.459s 6%: 0.042+3.3+" then
// the marker and its newline, then the rest of the cycle's line. That cycle
// began printing before the marker, so it belongs where the log was before
// the marker; its line is the piece before the marker joined with the next
// line.
func parseGCWindows(log []byte) [][]gcCycle {
	var windows [][]gcCycle
	in := false
	add := func(line string, inWindow bool) bool {
		c, ok := parseGCLine(line)
		if ok && inWindow {
			windows[len(windows)-1] = append(windows[len(windows)-1], c)
		}
		return ok
	}
	var piece string // the start of a cycle's line a marker cut
	pieceIn := false // whether the log was in a window before that marker
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if piece != "" {
			joined := piece + line
			piece = ""
			if add(joined, pieceIn) {
				continue
			}
		}
		i := strings.Index(line, gcWindowMarker)
		if i < 0 {
			add(line, in)
			continue
		}
		if i > 0 {
			piece, pieceIn = line[:i], in
		}
		switch strings.TrimSpace(line[i+len(gcWindowMarker):]) {
		case "begin":
			windows = append(windows, nil)
			in = true
		case "end":
			in = false
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
// index in the child's log, and raises its PeakLive to that mark where the
// sampler missed it. Phases and windows come in the same order (each
// window is one startWindow ... stop); a log with a different number of
// windows leaves every phase without one rather than guess.
func attachGCPeaks(phases []benchresults.Phase, log []byte) {
	windows := parseGCWindows(log)
	if len(windows) != len(phases) {
		return
	}
	for i, w := range windows {
		c, ok := peakMark(w)
		if !ok {
			continue
		}
		phases[i].PeakMark = &benchresults.GCMark{StartMiB: c.start, EndMiB: c.end, MarkedMiB: c.marked}
		// The sampler reads the live heap every few milliseconds and can
		// miss a cycle that another one follows within that time (small
		// heaps collect often); gctrace has every cycle, truncated down to
		// a whole MiB, which makes it a floor of the window's peak.
		phases[i].PeakLive = max(phases[i].PeakLive, c.marked<<20-int64(phases[i].BaselineHeap))
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
