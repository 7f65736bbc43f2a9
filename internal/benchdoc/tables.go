package benchdoc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/leaninformer/leaninformer/internal/benchresults"
)

// The names of the generated blocks, as the documents' markers spell them
// (the prose around them is written by hand and repeats no figure of them).
const (
	// README.md: the headline ratios, and the memory-over-time chart.
	HeadlineBlock = "headline"
	ChartBlock    = "chart"
	// docs/benchmarks.md: where the results came from, the goals, every
	// table, and the variants.
	RunBlock      = "run"
	GoalsBlock    = "goals"
	TablesBlock   = "tables"
	VariantsBlock = "variants"
)

func mib[T int64 | uint64 | float64](b T) float64 { return float64(b) / (1 << 20) }

// headline is one line of the headline table: a figure of one of our rows
// against one of client-go's, and the goal the run computed for it.
type headline struct {
	what         string
	ours, theirs string
	figure       string
	value        func(benchresults.Phase) float64
	unit         string
	goal         string
}

var (
	peakHeap = func(p benchresults.Phase) float64 { return mib(p.PeakHeap) }
	peakLive = func(p benchresults.Phase) float64 { return mib(p.PeakLive) }
	steady   = func(p benchresults.Phase) float64 { return mib(p.SteadyHeap) }
	seconds  = func(p benchresults.Phase) float64 { return p.SyncSeconds }
)

var headlines = []headline{
	{what: "initial sync (streaming list)", ours: "ours-stream", theirs: "client-go", figure: "peak heap (sampled)", value: peakHeap, unit: "MiB",
		goal: "initial sync: sampled peak vs client-go streaming"},
	{what: "relist after 410 Gone (streaming list)", ours: "ours-stream relist", theirs: "client-go relist", figure: "peak live heap", value: peakLive, unit: "MiB",
		goal: "relist: marked-live peak vs client-go"},
	{what: "relist after 410 Gone (LIST)", ours: "ours-listwatch relist", theirs: "client-go-list relist", figure: "peak live heap", value: peakLive, unit: "MiB",
		goal: "relist: marked-live peak vs client-go"},
	// The relists above find every object unchanged, where relist reuse
	// saves most; these find every object changed, the worst case.
	{what: "relist after 410 Gone, every object changed (streaming list)", ours: "ours-stream-churn100 relist", theirs: "client-go-churn100 relist", figure: "peak live heap", value: peakLive, unit: "MiB"},
	{what: "relist after 410 Gone, every object changed (LIST)", ours: "ours-listwatch-churn100 relist", theirs: "client-go-list-churn100 relist", figure: "peak live heap", value: peakLive, unit: "MiB"},
	{what: "list without a store (streaming list)", ours: "ours-pipeline-stream", theirs: "client-go-reflector", figure: "peak heap (sampled)", value: peakHeap, unit: "MiB",
		goal: "without store: sampled peak vs client-go's reflector"},
	{what: "list without a store (LIST)", ours: "ours-pipeline-listwatch", theirs: "client-go-reflector-list", figure: "peak heap (sampled)", value: peakHeap, unit: "MiB",
		goal: "without store: sampled peak vs client-go's reflector"},
	{what: "store with interning", ours: "ours-stream-intern", theirs: "client-go", figure: "steady heap", value: steady, unit: "MiB",
		goal: "interning: steady store vs client-go"},
	// Interning is a transform: client-go's informer given the same one
	// saves nearly as much.
	{what: "store with interning, against client-go with the same transform", ours: "ours-stream-intern", theirs: "client-go-intern", figure: "steady heap", value: steady, unit: "MiB"},
	{what: "encoded store", ours: "ours-stream-encoded", theirs: "client-go", figure: "steady heap", value: steady, unit: "MiB",
		goal: "encoded store: steady store vs client-go"},
	{what: "encoded store, S2", ours: "ours-stream-encoded-s2", theirs: "client-go", figure: "steady heap", value: steady, unit: "MiB",
		goal: "encoded store: steady store vs client-go"},
	{what: "time to sync (streaming list)", ours: "ours-stream", theirs: "client-go", figure: "seconds", value: seconds, unit: "s",
		goal: "time to sync vs client-go"},
	{what: "time to relist (streaming list)", ours: "ours-stream relist", theirs: "client-go relist", figure: "seconds", value: seconds, unit: "s",
		goal: "relist time vs client-go"},
	// Paginated lists read their continue pages from the watch cache when
	// the resource was written since the last etcd compaction, and from
	// etcd when not: both states.
	{what: "time to sync (LIST)", ours: "ours-listwatch", theirs: "client-go-list", figure: "seconds", value: seconds, unit: "s",
		goal: "time to sync vs client-go"},
	{what: "time to sync (LIST), resource unwritten since the last compaction", ours: "ours-listwatch-unwritten", theirs: "client-go-list-unwritten", figure: "seconds", value: seconds, unit: "s",
		goal: "time to sync vs client-go"},
	{what: "time to relist (LIST)", ours: "ours-listwatch relist", theirs: "client-go-list relist", figure: "seconds", value: seconds, unit: "s",
		goal: "relist time vs client-go"},
	{what: "time to relist (LIST), resource unwritten since the last compaction", ours: "ours-listwatch-unwritten relist", theirs: "client-go-list-unwritten relist", figure: "seconds", value: seconds, unit: "s",
		goal: "relist time vs client-go"},
}

// Headline is the README's table of headline ratios: only the lines whose
// two rows the run has.
func Headline(r *benchresults.Results) string {
	var b strings.Builder
	b.WriteString("| what | ours | client-go | ratio | goal | met |\n|---|--:|--:|--:|--:|---|\n")
	for _, h := range headlines {
		o, ok1 := r.Row(h.ours, 0)
		t, ok2 := r.Row(h.theirs, 0)
		if !ok1 || !ok2 || h.value(t.Median) <= 0 {
			continue
		}
		ov, tv := h.value(o.Median), h.value(t.Median)
		goal, met := "none", ""
		if g, ok := findGoal(r, h.goal, h.ours); ok {
			goal, met = fmt.Sprintf("<= %.2fx", g.Target), metWord(g.Met)
		}
		fmt.Fprintf(&b, "| %s, %s (`%s` vs `%s`) | %s | %s | %.2fx | %s | %s |\n",
			h.what, h.figure, h.ours, h.theirs, figure(ov, h.unit), figure(tv, h.unit), ov/tv, goal, met)
	}
	fmt.Fprintf(&b, "\n%d %s, GOGC=%d, medians of %d runs, heap above each process's baseline; from %s. All figures: [docs/benchmarks.md](docs/benchmarks.md).\n",
		r.Objects, title(r), r.GOGC, r.Runs, origin(r))
	return b.String()
}

func figure(v float64, unit string) string {
	if unit == "s" {
		return fmt.Sprintf("%.2f s", v)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

func metWord(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}

// Chart is the README's block showing the chart at chartPath (relative to
// the README).
func Chart(r *benchresults.Results, chartPath string) string {
	return fmt.Sprintf(`<img src="%s" alt="Heap over time of client-go's informer and ours through an initial sync and a relist of %d %s">`+"\n\n"+
		"One child process per informer (the run with the median initial-sync peak): the initial sync of %d %s, then a relist forced by 410 Gone. "+
		"Solid: sampled heap, garbage included; dotted: the live heap the last GC marked; the gap after the sync is the benchmark checking the store, not sampled. `make bench` at %s, %s.\n",
		chartPath, r.Objects, title(r), r.Objects, title(r), shortCommit(r), day(r))
}

// Run is docs/benchmarks.md's block on where the results came from.
func Run(r *benchresults.Results) string {
	var b strings.Builder
	limits := r.Limits
	if limits == "" {
		limits = "not recorded"
	}
	dirty := "no"
	if r.Provenance.Dirty {
		dirty = "yes: the work tree had uncommitted changes"
	}
	m := r.Machine
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	for _, kv := range [][2]string{
		{"command", "`" + r.Command + "`"},
		{"flags", flags(r.Provenance.Flags)},
		{"commit", "`" + r.Provenance.Commit + "`"},
		{"uncommitted changes", dirty},
		{"date", r.Date},
		{"machine", fmt.Sprintf("%s, %d cores, %d GiB, Linux %s, %s", m.CPU, m.Cores, m.MemoryGiB, m.Kernel, m.Go)},
		{"load average (1, 5, 15 min)", fmt.Sprintf("%.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end", r.Provenance.LoadAverageStart[0], r.Provenance.LoadAverageStart[1], r.Provenance.LoadAverageStart[2],
			r.Provenance.LoadAverageEnd[0], r.Provenance.LoadAverageEnd[1], r.Provenance.LoadAverageEnd[2])},
		{"API server", r.ServerVersion},
		{"client rate limit", limits},
		{"objects", fmt.Sprintf("%d bench %s (%d of the kind in the cluster), protobuf on the wire", r.Objects, title(r), r.TotalObjects)},
		{"page size", pageSize(r.PageSize)},
		{"runs", fmt.Sprintf("%d per variant, each in a fresh child process, GOGC=%d", r.Runs, r.GOGC)},
		{"note", r.Provenance.Note},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", kv[0], strings.ReplaceAll(kv[1], "|", `\|`))
	}
	b.WriteString("\nEvery run's figures and the heap timelines: [benchmarks/results.json](benchmarks/results.json).\n")
	return b.String()
}

func flags(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("`--%s=%s`", k, m[k])
	}
	return strings.Join(parts, " ")
}

// Goals is docs/benchmarks.md's goal table: every goal the run computed.
func Goals(r *benchresults.Results) string {
	var b strings.Builder
	b.WriteString("| goal | ours | vs | ratio | target | met |\n|---|---|---|--:|--:|---|\n")
	for _, g := range r.Goals {
		fmt.Fprintf(&b, "| %s | `%s` | `%s` | %.3f | <= %.2f | %s |\n", g.Goal, g.Ours, g.Theirs, g.Ratio, g.Target, metWord(g.Met))
	}
	fmt.Fprintf(&b, "\nRatios of medians, ours / theirs, measured in the same run (`make bench` at %s, %s).\n", shortCommit(r), day(r))
	return b.String()
}

// Tables is docs/benchmarks.md's block of tables: the medians without and
// with GOMEMLIMIT, and every run's figures.
func Tables(r *benchresults.Results) string {
	var b strings.Builder
	for _, lim := range r.MemLimits() {
		if lim == 0 {
			fmt.Fprintf(&b, "**GOGC=%d, no memory limit** (%d %s, medians of %d runs)\n\n", r.GOGC, r.Objects, title(r), r.Runs)
		} else {
			fmt.Fprintf(&b, "**GOMEMLIMIT=%.0f MiB** (1.5 x the floor + the baseline runtime memory; %d %s, medians of %d runs)\n\n", mib(lim), r.Objects, title(r), r.Runs)
		}
		b.WriteString(MedianTable(r, lim))
		b.WriteString("\n")
	}
	b.WriteString("<details><summary>Every run's figures</summary>\n\n| variant | GOMEMLIMIT MiB | run | sync s | peak heap Δ | peak live Δ | peak mark | steady Δ | peak RSS | CPU s | GCs |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	runs := map[string]int{}
	for _, p := range r.AllRuns {
		key := fmt.Sprint(p.Row, p.MemLimit)
		runs[key]++
		fmt.Fprintf(&b, "| %s | %.0f | %d | %.2f | %.1f | %.1f | %s | %.1f | %.1f | %.3f | %d |\n",
			p.Row, mib(p.MemLimit), runs[key], p.SyncSeconds, mib(p.PeakHeap), mib(p.PeakLive), p.PeakMarkCell(), mib(p.SteadyHeap), mib(p.PeakRSS), p.CPUSeconds, p.GCs)
	}
	fmt.Fprintf(&b, "\n</details>\n\n`make bench` at %s, %s.\n", shortCommit(r), day(r))
	return b.String()
}

// MedianTable is the table of every row's medians under GOMEMLIMIT limit
// (0: none), as docs/benchmarks.md and hack/bench's results.md show it.
func MedianTable(r *benchresults.Results, limit int64) string {
	var b strings.Builder
	b.WriteString("| variant | sync s | LISTs | peak heap Δ | peak live Δ | peak mark | steady Δ | peak RSS | CPU s | GC CPU s | GCs | objects | baseline heap | baseline RSS |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range r.Rows {
		if row.MemLimit != limit {
			continue
		}
		m := row.Median
		fmt.Fprintf(&b, "| %s | %.2f | %d | %.1f | %.1f | %s | %.1f | %.1f | %.3f | %.3f | %d | %d | %.1f | %.1f |\n",
			row.Name, m.SyncSeconds, m.Requests.Lists, mib(m.PeakHeap), mib(m.PeakLive), m.PeakMarkCell(), mib(m.SteadyHeap),
			mib(m.PeakRSS), m.CPUSeconds, m.GCCPUSeconds, m.GCs, m.Objects, mib(m.BaselineHeap), mib(m.BaselineRSS))
	}
	return b.String()
}

// Variants is docs/benchmarks.md's list of the run's variants.
func Variants(r *benchresults.Results) string {
	var b strings.Builder
	for _, row := range r.Rows {
		if row.MemLimit == 0 {
			fmt.Fprintf(&b, "- `%s`: %s\n", row.Name, row.Desc)
		}
	}
	return b.String()
}

func pageSize(n int64) string {
	if n < 0 {
		return "chosen by our informer"
	}
	return fmt.Sprint(n)
}
