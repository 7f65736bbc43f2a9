package main

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/leaninformer/leaninformer/internal/benchkit"
)

// line is one informer's heap over time in a chart.
type line struct {
	name   string
	series []Sample
}

// lineColors are the informers' colours, in row order.
var lineColors = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd"}

// heapChartSVG draws the heap over time of each line: the sampled heap
// solid, the live heap the last GC marked dashed, MiB above the baseline.
func heapChartSVG(title string, lines []line) []byte {
	const (
		width, height = 980, 480
		left, right   = 70, 20
		top, bottom   = 70, 45
	)
	plotW, plotH := float64(width-left-right), float64(height-top-bottom)
	maxS, maxMiB, minMiB := 1.0, 1.0, 0.0
	for _, l := range lines {
		for _, s := range l.series {
			maxS = max(maxS, s.Seconds)
			maxMiB = max(maxMiB, mib(s.Heap), mib(s.Live))
			minMiB = min(minMiB, mib(s.Heap), mib(s.Live))
		}
	}
	yStep := benchkit.AxisStep((maxMiB - minMiB) / 6)
	maxMiB = math.Ceil(maxMiB/yStep) * yStep
	minMiB = math.Floor(minMiB/yStep) * yStep
	xStep := benchkit.AxisStep(maxS / 8)
	maxS = math.Ceil(maxS/xStep) * xStep
	x := func(s float64) float64 { return left + plotW*s/maxS }
	y := func(v float64) float64 { return top + plotH*(maxMiB-v)/(maxMiB-minMiB) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for i, l := range lines {
		c := lineColors[i%len(lineColors)]
		lx := 10 + i*300
		fmt.Fprintf(&b, `<line x1="%d" y1="40" x2="%d" y2="40" stroke="%s" stroke-width="2"/><text x="%d" y="44">%s heap (sampled)</text>`+"\n", lx, lx+24, c, lx+30, html.EscapeString(l.name))
		fmt.Fprintf(&b, `<line x1="%d" y1="56" x2="%d" y2="56" stroke="%s" stroke-width="2" stroke-dasharray="5,3"/><text x="%d" y="60">%s live (marked by a GC)</text>`+"\n", lx, lx+24, c, lx+30, html.EscapeString(l.name))
	}
	for v := minMiB; v <= maxMiB+yStep/2; v += yStep {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end" fill="#555">%g</text>`+"\n", left, y(v), width-right, y(v), left-6, y(v)+4, v)
	}
	for s := 0.0; s <= maxS+xStep/2; s += xStep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle" fill="#555">%g</text>`+"\n", x(s), top, x(s), height-bottom, x(s), height-bottom+16, s)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#333">seconds since the writes began</text>`+"\n", left+int(plotW)/2, height-8)
	fmt.Fprintf(&b, `<text x="16" y="%d" fill="#333" transform="rotate(-90 16 %d)" text-anchor="middle">MiB above baseline</text>`+"\n", top+int(plotH)/2, top+int(plotH)/2)
	for i, l := range lines {
		c := lineColors[i%len(lineColors)]
		for _, dash := range []string{"", ` stroke-dasharray="5,3"`} {
			var pts []string
			for _, s := range l.series {
				v := mib(s.Heap)
				if dash != "" {
					v = mib(s.Live)
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.Seconds), y(v)))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`+"\n", c, dash, strings.Join(pts, " "))
		}
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
