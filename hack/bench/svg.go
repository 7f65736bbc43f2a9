package main

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/leaninformer/leaninformer/internal/benchkit"
	"github.com/leaninformer/leaninformer/internal/benchresults"
)

// series are the bars drawn for each row, top to bottom.
var series = []struct {
	name  string
	color string
	value func(benchresults.Phase) int64
}{
	{"peak heap (sampled)", "#d62728", func(p benchresults.Phase) int64 { return p.PeakHeap }},
	{"peak live (marked by a GC)", "#ff7f0e", func(p benchresults.Phase) int64 { return p.PeakLive }},
	{"steady heap (after GC)", "#1f77b4", func(p benchresults.Phase) int64 { return p.SteadyHeap }},
}

// chartSVG draws a horizontal bar chart of the rows' heap figures in MiB,
// one group of bars per row.
func chartSVG(title string, rows []benchresults.Row) []byte {
	const (
		width   = 980
		labelW  = 250
		valueW  = 70
		top     = 70
		barH    = 11
		barGap  = 2
		groupGp = 12
	)
	plotW := float64(width - labelW - valueW - 10)
	groupH := len(series)*(barH+barGap) + groupGp
	height := top + len(rows)*groupH + 30

	maxMiB := 1.0
	for _, r := range rows {
		for _, s := range series {
			maxMiB = max(maxMiB, mib(float64(s.value(r.Median))))
		}
	}
	step := benchkit.AxisStep(maxMiB / 6)
	maxMiB = math.Ceil(maxMiB/step) * step
	x := func(v float64) float64 { return labelW + plotW*max(0, v)/maxMiB }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for i, s := range series {
		lx := 10 + i*220
		fmt.Fprintf(&b, `<rect x="%d" y="32" width="12" height="12" fill="%s"/><text x="%d" y="43">%s</text>`+"\n", lx, s.color, lx+16, html.EscapeString(s.name))
	}
	for v := 0.0; v <= maxMiB+step/2; v += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`, x(v), top-8, x(v), height-25)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%g</text>`+"\n", x(v), height-10, v)
	}
	for i, r := range rows {
		y := top + i*groupH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n",
			labelW-8, y+len(series)*(barH+barGap)/2, html.EscapeString(r.Name))
		for j, s := range series {
			v := mib(float64(s.value(r.Median)))
			by := y + j*(barH+barGap)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %.1f MiB</title></rect>`,
				labelW, by, x(v)-labelW, barH, s.color, html.EscapeString(r.Name), html.EscapeString(s.name), v)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" dominant-baseline="middle" fill="#333">%.1f</text>`+"\n", x(v)+4, by+barH/2+1, v)
		}
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
