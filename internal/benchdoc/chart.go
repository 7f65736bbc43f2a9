package benchdoc

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/leaninformer/leaninformer/internal/benchresults"
)

// chartSeries are the informers the memory-over-time chart draws, when the
// run has them.
var chartSeries = []struct{ row, label, color string }{
	{"client-go", "client-go informer (streaming list)", "#d62728"},
	{"ours-stream", "leaninformer (StreamingList)", "#1f77b4"},
	{"ours-stream-encoded", "leaninformer, encoded store", "#2ca02c"},
}

// medianTimeline returns the timeline of row's run without GOMEMLIMIT whose
// initial-sync peak heap is the median of the runs (the lower middle one
// for an even count).
func medianTimeline(r *benchresults.Results, row string) *benchresults.Timeline {
	var runs []benchresults.Phase
	for _, p := range r.AllRuns {
		if p.Row == row && p.MemLimit == 0 && p.Timeline != nil && len(p.Timeline.Ms) > 0 {
			runs = append(runs, p)
		}
	}
	if len(runs) == 0 {
		return nil
	}
	slices.SortStableFunc(runs, func(a, b benchresults.Phase) int { return int(a.PeakHeap - b.PeakHeap) })
	return runs[(len(runs)-1)/2].Timeline
}

// MemoryChart draws the heap over time of the chart's informers (those the
// run has) as SVG: the sampled heap solid, the marked live heap dotted, a
// dot where each synced and a triangle where its relist was forced. It
// fails when the run has no timeline of client-go's informer and ours.
func MemoryChart(r *benchresults.Results) ([]byte, error) {
	type line struct {
		label, color string
		tl           *benchresults.Timeline
	}
	var lines []line
	for _, s := range chartSeries {
		if tl := medianTimeline(r, s.row); tl != nil {
			lines = append(lines, line{s.label, s.color, tl})
		}
	}
	if len(lines) < 2 {
		return nil, fmt.Errorf("the results have timelines of %d of the rows %s, %s and %s; the chart needs client-go's and ours",
			len(lines), chartSeries[0].row, chartSeries[1].row, chartSeries[2].row)
	}
	const (
		width, height            = 900, 440
		left, right, top, bottom = 64, 20, 124, 48
	)
	maxS, maxMiB := 0.0, 1.0
	for _, l := range lines {
		maxS = max(maxS, float64(l.tl.Ms[len(l.tl.Ms)-1])/1000)
		for i := range l.tl.Ms {
			maxMiB = max(maxMiB, float64(l.tl.HeapKiB[i])/1024, float64(l.tl.LiveKiB[i])/1024)
		}
	}
	xStep, yStep := axisStep(maxS/8), axisStep(maxMiB/6)
	maxS, maxMiB = math.Ceil(maxS/xStep)*xStep, math.Ceil(maxMiB/yStep)*yStep
	plotW, plotH := float64(width-left-right), float64(height-top-bottom)
	x := func(ms int64) float64 { return left + plotW*float64(ms)/1000/maxS }
	y := func(kib int64) float64 { return top + plotH*(1-max(0, float64(kib)/1024)/maxMiB) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	commit, date := shortCommit(r), day(r)
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="15" font-weight="bold">%s</text>`+"\n",
		html.EscapeString(fmt.Sprintf("Heap above baseline through an initial sync of %d %s and a forced relist (MiB)", r.Objects, title(r))))
	fmt.Fprintf(&b, `<text x="10" y="38" fill="#555">%s</text>`+"\n",
		html.EscapeString(fmt.Sprintf("make bench at %s, %s, GOGC=%d; of each informer the run with the median initial-sync peak", commit, date, r.GOGC)))
	fmt.Fprintf(&b, `<text x="10" y="56" fill="#555">%s</text>`+"\n",
		html.EscapeString("solid: sampled heap (garbage included); dotted: live heap the last GC marked; ● synced; ▼ relist forced (410 Gone)"))
	fmt.Fprintf(&b, `<text x="10" y="74" fill="#555">%s</text>`+"\n", html.EscapeString("the gap after the sync: not sampled while the benchmark checks the store"))
	for i, l := range lines {
		lx := 10 + i*290
		fmt.Fprintf(&b, `<line x1="%d" y1="96" x2="%d" y2="96" stroke="%s" stroke-width="3"/><text x="%d" y="100">%s</text>`+"\n", lx, lx+24, l.color, lx+30, html.EscapeString(l.label))
	}
	for v := 0.0; v <= maxMiB+yStep/2; v += yStep {
		yy := y(int64(v * 1024))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/><text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle" fill="#555">%g</text>`+"\n",
			left, yy, width-right, yy, left-6, yy, v)
	}
	for v := 0.0; v <= maxS+xStep/2; v += xStep {
		xx := x(int64(v * 1000))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/><text x="%.1f" y="%d" text-anchor="middle" fill="#555">%g</text>`+"\n",
			xx, top, xx, height-bottom, xx, height-bottom+16, v)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#555">seconds since the informer started</text>`+"\n", left+int(plotW)/2, height-10)
	for _, l := range lines {
		for _, seg := range segments(l.tl) {
			ms := l.tl.Ms[seg[0]:seg[1]]
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", l.color, points(ms, l.tl.HeapKiB[seg[0]:seg[1]], x, y))
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="2 3" points="%s"/>`+"\n", l.color, points(ms, l.tl.LiveKiB[seg[0]:seg[1]], x, y))
		}
		for _, m := range l.tl.Marks {
			mx, my := x(m.Ms), y(heapAt(l.tl, m.Ms))
			switch m.Name {
			case benchresults.MarkSynced:
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", mx, my, l.color)
			case benchresults.MarkRelistForced:
				fmt.Fprintf(&b, `<path d="M%.1f %.1f l-5 -9 h10 z" fill="%s"/>`+"\n", mx, my-2, l.color)
			}
		}
	}
	b.WriteString("</svg>\n")
	return []byte(b.String()), nil
}

// segments are the [start, end) index ranges of tl's samples taken without
// a pause.
func segments(tl *benchresults.Timeline) [][2]int {
	var segs [][2]int
	start := 0
	for _, i := range tl.Resumed {
		if i > start && i <= len(tl.Ms) {
			segs = append(segs, [2]int{start, i})
			start = i
		}
	}
	if start < len(tl.Ms) {
		segs = append(segs, [2]int{start, len(tl.Ms)})
	}
	return segs
}

func points(ms, kib []int64, x func(int64) float64, y func(int64) float64) string {
	var b strings.Builder
	for i := range ms {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x(ms[i]), y(kib[i]))
	}
	return b.String()
}

// heapAt is the sampled heap at the last sample at or before ms.
func heapAt(tl *benchresults.Timeline, ms int64) int64 {
	i, _ := slices.BinarySearch(tl.Ms, ms+1)
	return tl.HeapKiB[max(0, i-1)]
}

// axisStep rounds a raw axis step up to 1, 2 or 5 times a power of ten.
func axisStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*pow {
			return m * pow
		}
	}
	return 10 * pow
}
