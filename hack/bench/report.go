package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/leaninformer/leaninformer/internal/benchdoc"
	"github.com/leaninformer/leaninformer/internal/benchkit"
	"github.com/leaninformer/leaninformer/internal/benchobjects"
	"github.com/leaninformer/leaninformer/internal/benchresults"
)

// Report is a run's results and what the tables' headings call its
// objects.
type Report struct {
	benchresults.Results
	// title names the objects in headings, e.g. "RoleBindings": the file
	// has Kind instead.
	title string
}

func newReport(o options, vs []variant, phases []benchresults.Phase, limit int64, total int, serverVersion string) *Report {
	r := &Report{title: o.kind.title, Results: benchresults.Results{
		Command:       o.commandLine,
		Kind:          o.kind.resource,
		Date:          time.Now().UTC().Format(time.RFC3339),
		Machine:       benchresults.Machine(benchkit.DescribeMachine()),
		ServerVersion: serverVersion,
		Objects:       o.objects,
		TotalObjects:  total,
		PageSize:      o.pageSize,
		Limits:        o.limits.String(),
		Touched:       o.touch,
		GOGC:          o.gogc,
		Runs:          o.runs,
		MemLimit:      limit,
		AllRuns:       phases,
	}}
	for _, lim := range r.MemLimits() {
		for group := range rowGroups {
			for _, v := range vs {
				for i, name := range v.rows() {
					if rowGroup(v, i == 1) != group {
						continue
					}
					if row, ok := aggregate(name, v.desc, lim, phases); ok {
						r.Rows = append(r.Rows, row)
					}
				}
			}
		}
	}
	r.Goals = goals(r)
	return r
}

// aggregate takes the median of every figure of row name's runs.
func aggregate(name, desc string, limit int64, phases []benchresults.Phase) (benchresults.Row, bool) {
	var ps []benchresults.Phase
	for _, p := range phases {
		if p.Row == name && p.MemLimit == limit {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return benchresults.Row{}, false
	}
	if strings.HasSuffix(name, relistRow("")) {
		desc = "forced relist (410 Gone) of: " + desc
	}
	f := func(get func(benchresults.Phase) float64) float64 {
		xs := make([]float64, len(ps))
		for i, p := range ps {
			xs[i] = get(p)
		}
		return benchkit.Median(xs)
	}
	m := benchresults.Phase{
		Row:             name,
		MemLimit:        limit,
		SyncSeconds:     f(func(p benchresults.Phase) float64 { return p.SyncSeconds }),
		PeakHeap:        int64(f(func(p benchresults.Phase) float64 { return float64(p.PeakHeap) })),
		PeakLive:        int64(f(func(p benchresults.Phase) float64 { return float64(p.PeakLive) })),
		SteadyHeap:      int64(f(func(p benchresults.Phase) float64 { return float64(p.SteadyHeap) })),
		PeakRSS:         uint64(f(func(p benchresults.Phase) float64 { return float64(p.PeakRSS) })),
		CPUSeconds:      f(func(p benchresults.Phase) float64 { return p.CPUSeconds }),
		GCCPUSeconds:    f(func(p benchresults.Phase) float64 { return p.GCCPUSeconds }),
		GCs:             uint64(f(func(p benchresults.Phase) float64 { return float64(p.GCs) })),
		Objects:         int(f(func(p benchresults.Phase) float64 { return float64(p.Objects) })),
		BaselineHeap:    uint64(f(func(p benchresults.Phase) float64 { return float64(p.BaselineHeap) })),
		BaselineRSS:     uint64(f(func(p benchresults.Phase) float64 { return float64(p.BaselineRSS) })),
		BaselineRuntime: uint64(f(func(p benchresults.Phase) float64 { return float64(p.BaselineRuntime) })),
		Requests:        ps[0].Requests,
	}
	m.PeakMark = medianRunsMark(ps, m.PeakLive)
	return benchresults.Row{Name: name, Desc: desc, MemLimit: limit, Runs: len(ps), Median: m}, true
}

// goals computes, for the rows this run has, the ratios the project's
// targets are stated in: our informer's peaks through a relist and an
// initial sync against client-go's and against our own steady store; the
// list machinery without a store against client-go's reflector; time to
// sync and to relist against client-go; and the steady store, peaks and
// CPU of the interning and encoded-store options against client-go's
// informer, which has neither.
func goals(r *Report) []benchresults.Goal {
	type pair struct{ ours, theirs string }
	informers := []pair{{"ours-listwatch", "client-go-list"}, {"ours-stream", "client-go"}}
	heap := func(p benchresults.Phase) float64 { return float64(p.PeakHeap) }
	live := func(p benchresults.Phase) float64 { return float64(p.PeakLive) }
	var gs []benchresults.Goal
	// add compares num of row ours with den of row theirs (which may be
	// one of ours: the steady store).
	add := func(goal, ours, theirs string, limit int64, target float64, num, den func(benchresults.Phase) float64) {
		o, ok := r.Row(ours, limit)
		if !ok {
			return
		}
		t, ok := r.Row(theirs, limit)
		if !ok || den(t.Median) <= 0 {
			return
		}
		ratio := num(o.Median) / den(t.Median)
		gs = append(gs, benchresults.Goal{Goal: goal, Ours: o.Name, Theirs: t.Name, Ratio: ratio, Target: target, Met: ratio <= target})
	}
	steady := func(p benchresults.Phase) float64 { return float64(p.SteadyHeap) }
	for _, p := range informers {
		ours, theirs := relistRow(p.ours), relistRow(p.theirs)
		add("relist: marked-live peak vs client-go", ours, theirs, 0, 0.55, live, live)
		add("relist: marked-live peak vs our steady store", ours, p.ours, 0, 1.15, live, steady)
		add("relist: sampled peak vs client-go", ours, theirs, 0, 0.8, heap, heap)
		if r.MemLimit > 0 {
			add("relist under GOMEMLIMIT: sampled peak vs client-go", ours, theirs, r.MemLimit, 0.6, heap, heap)
		}
	}
	for _, ours := range []string{"ours-listwatch", "ours-stream"} {
		add("initial sync: sampled peak vs client-go streaming", ours, "client-go", 0, 1.0, heap, heap)
		add("initial sync: sampled peak vs client-go LIST", ours, "client-go-list", 0, 0.7, heap, heap)
		add("initial sync: marked-live peak vs our steady store", ours, ours, 0, 1.1, live, steady)
	}
	add("without store: sampled peak vs client-go's reflector", "ours-pipeline-listwatch", "client-go-reflector-list", 0, 0.15, heap, heap)
	add("without store: sampled peak vs client-go's reflector", "ours-pipeline-stream", "client-go-reflector", 0, 0.15, heap, heap)
	sync := func(p benchresults.Phase) float64 { return p.SyncSeconds }
	// As fast as client-go's, also for a resource nobody wrote since the
	// last compaction (the paginated pair only: nothing else reads
	// continue pages).
	timed := append(slices.Clone(informers), pair{"ours-listwatch-unwritten", "client-go-list-unwritten"})
	for _, p := range timed {
		add("time to sync vs client-go", p.ours, p.theirs, 0, 1.1, sync, sync)
	}
	// Relists as fast as client-go's, also after 10% and 100% of the
	// objects changed since the list.
	for _, p := range timed {
		add("relist time vs client-go", relistRow(p.ours), relistRow(p.theirs), 0, 1.1, sync, sync)
		for _, percent := range []int{10, 100} {
			suffix := fmt.Sprintf("-churn%d", percent)
			add(fmt.Sprintf("relist time after %d%% changed vs client-go", percent), relistRow(p.ours+suffix), relistRow(p.theirs+suffix), 0, 1.1, sync, sync)
		}
	}
	// And while the controller's other requests keep the client's rate
	// limiter empty: every LIST request waits its turn behind them.
	add("relist time, the shared limiter kept empty, vs client-go", relistRow("ours-listwatch-busy"), relistRow("client-go-list-busy"), 0, 1.1, sync, sync)
	// Interning: a smaller steady store than client-go's informer, at a
	// bounded CPU cost per object.
	cpu := func(p benchresults.Phase) float64 { return p.CPUSeconds / float64(max(1, p.Objects)) }
	for _, p := range []pair{{"ours-listwatch-intern", "client-go-list"}, {"ours-stream-intern", "client-go"}} {
		add("interning: steady store vs client-go", p.ours, p.theirs, 0, 0.75, steady, steady)
		add("interning: CPU per object vs client-go", p.ours, p.theirs, 0, 1.5, cpu, cpu)
	}
	// The encoded store: a smaller steady store and smaller peaks than
	// client-go's default informer, at a bounded CPU cost per object.
	steadyTarget, compressedTarget := encodedSteadyTargets(r.Kind)
	for _, p := range []pair{{"ours-listwatch-encoded", "client-go-list"}, {"ours-stream-encoded", "client-go"}, {"ours-stream-encoded-s2", "client-go"}} {
		target := steadyTarget
		if p.ours == "ours-stream-encoded-s2" {
			target = compressedTarget
		}
		if target > 0 {
			add("encoded store: steady store vs client-go", p.ours, p.theirs, 0, target, steady, steady)
		}
		add("encoded store: relist marked-live peak vs client-go's relist", relistRow(p.ours), relistRow(p.theirs), 0, 0.35, live, live)
		add("encoded store: initial sync sampled peak vs client-go", p.ours, p.theirs, 0, 0.5, heap, heap)
		add("encoded store: CPU to sync vs client-go", p.ours, p.theirs, 0, 1.5, cpu, cpu)
	}
	return gs
}

// encodedSteadyTargets are the encoded store's steady-store targets for a
// kind, without and with compression (WithCompression); 0 for a kind without one
// (configmaps).
func encodedSteadyTargets(kind string) (plain, compressed float64) {
	switch kind {
	case "rolebindings":
		return 0.45, 0.25
	case "pods":
		return 0.30, 0.15
	}
	return 0, 0
}

// write prints the tables to stdout and writes results.md, results.json
// and the charts to dir.
func (r *Report) write(dir string, stdout io.Writer) error {
	md := r.markdown()
	if _, err := io.WriteString(stdout, md); err != nil {
		return err
	}
	js, err := benchresults.Encode(&r.Results)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"results.md":   []byte(md),
		"results.json": js,
		"chart.svg":    chartSVG(fmt.Sprintf("Heap above baseline, %d %s, GOGC=%d (MiB, medians of %d runs)", r.Objects, r.title, r.GOGC, r.Runs), r.rowsWithLimit(0)),
	}
	if r.MemLimit > 0 {
		files["chart-memlimit.svg"] = chartSVG(fmt.Sprintf("Heap above baseline, %d %s, GOMEMLIMIT=%.0f MiB (MiB, medians of %d runs)", r.Objects, r.title, mib(r.MemLimit), r.Runs), r.rowsWithLimit(r.MemLimit))
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (r *Report) rowsWithLimit(limit int64) []benchresults.Row {
	var rows []benchresults.Row
	for _, row := range r.Rows {
		if row.MemLimit == limit {
			rows = append(rows, row)
		}
	}
	return rows
}

func mib[T int64 | uint64 | float64](b T) float64 { return float64(b) / (1 << 20) }

func (r *Report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## leaninformer vs client-go: %d %s\n\n", r.Objects, r.title)
	fmt.Fprintf(&b, "`%s` on %s (%d cores, %d GiB, Linux %s, %s), API server %s, %s.\n",
		r.Command, r.Machine.CPU, r.Machine.Cores, r.Machine.MemoryGiB, r.Machine.Kernel, r.Machine.Go, r.ServerVersion, r.Date)
	pages := fmt.Sprintf("page size %d", r.PageSize)
	if r.PageSize < 0 {
		pages = fmt.Sprintf("our page sizes chosen by the informer (the floor's: %d)", floorPageSize(r.PageSize))
	}
	snapshots := "one bench object updated before each child (continue pages served from the watch cache)"
	if slices.ContainsFunc(r.Rows, func(row benchresults.Row) bool { return strings.Contains(row.Name, "-unwritten") }) {
		snapshots += " but the `-unwritten` rows' (continue pages from etcd)"
	}
	if !r.Touched {
		snapshots = "no update before the children (--touch=false: continue pages from etcd once the resource is unwritten since the last compaction)"
	}
	fmt.Fprintf(&b, "%d bench %s in %d namespaces (%d in the cluster in all), protobuf on the wire, **%s**, %s, %s, GOGC=%d; medians of %d runs, each in a fresh child process.\n\n",
		r.Objects, r.title, benchobjects.Namespaces, r.TotalObjects, r.Limits, pages, snapshots, r.GOGC, r.Runs)
	b.WriteString("Δ columns are heap MiB above the child's own baseline (heap after GC before the informer starts; the baseline itself is in the last columns, in MiB). " +
		"*peak heap*: largest sampled heap (every few ms), garbage included; *peak live*: largest live heap a GC marked; *peak mark*: that GC cycle as gctrace printed it, MiB marked / MiB allocated while it marked (absolute; what it allocated is counted live, reachable or not); *steady*: heap after GC at the end; " +
		"*peak RSS*: the process's VmHWM in MiB, absolute, reset when the window starts. " +
		"*CPU s*: the process's CPU time in the window (user and system, all threads, GC included; relist rows: from the relist's first request, as *sync*); *GC CPU s*: the Go runtime's estimate of its GC share. " +
		"*sync*: seconds to synced and handler drained (relist rows: from the relist's first request until the handler has all of it). " +
		"*objects*: in the store (rows without store: objects the list brought). *LISTs*: LIST requests in the window (of the first run).\n\n")
	for _, lim := range r.MemLimits() {
		if lim == 0 {
			fmt.Fprintf(&b, "### GOGC=%d, no memory limit\n\n", r.GOGC)
		} else {
			fmt.Fprintf(&b, "### GOMEMLIMIT=%.0f MiB (1.5 x the floor + the baseline runtime memory)\n\n", mib(lim))
		}
		b.WriteString(benchdoc.MedianTable(&r.Results, lim))
		b.WriteString("\n")
	}
	b.WriteString("Variants:\n\n")
	for _, row := range r.rowsWithLimit(0) {
		fmt.Fprintf(&b, "- `%s`: %s\n", row.Name, row.Desc)
	}
	if len(r.Goals) > 0 {
		b.WriteString("\n### Goals (ours / theirs, measured in this run)\n\n")
		b.WriteString(benchdoc.Goals(&r.Results))
	}
	b.WriteString("\n### What the relists held at their largest mark (a diagnostic, not a goal)\n\n")
	b.WriteString(benchdoc.Marks(&r.Results))
	return b.String()
}
