package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/leaninformer/leaninformer/internal/benchkit"
)

// Row is one line of a results table: the medians of one scenario's runs
// for one informer.
type Row struct {
	Backend  string  `json:"backend"`
	Rate     float64 `json:"rate"`
	Handlers string  `json:"handlers"`
	Informer string  `json:"informer"`
	Runs     int     `json:"runs"`
	// Median holds the median of each figure over the runs, separately;
	// its Series is the first run's.
	Median Result `json:"median"`
}

func (r Row) scenario() string {
	return fmt.Sprintf("%s %s/s %s", r.Backend, rateName(r.Rate), r.Handlers)
}

// Goal compares ours with client-go's informer in one scenario.
type Goal struct {
	Goal     string  `json:"goal"`
	Scenario string  `json:"scenario"`
	Ours     string  `json:"ours"`
	Ratio    float64 `json:"ratio"`
	// AtLeast: the ratio must be at least 1 (throughput), else at most 1
	// (latency); compared rounded to three decimals.
	AtLeast bool `json:"atLeast"`
	Met     bool `json:"met"`
	// Control: Ours is the control (client-go's informer again), and the
	// ratio no goal but the spread of the run's noise.
	Control bool `json:"control,omitempty"`
}

// Report is everything results.json holds.
type Report struct {
	Command         string           `json:"command"`
	Date            string           `json:"date"`
	Machine         benchkit.Machine `json:"machine"`
	ServerVersion   string           `json:"serverVersion,omitempty"`
	Objects         int              `json:"objects"`
	DurationSeconds float64          `json:"durationSeconds"`
	Runs            int              `json:"runs"`
	GOGC            int              `json:"gogc"`
	Writers         int              `json:"writers"`
	Inflight        int64            `json:"inflight"`
	Informers       []string         `json:"informers"`
	Rows            []Row            `json:"rows"`
	Goals           []Goal           `json:"goals"`
	AllRuns         []Result         `json:"allRuns"`
}

func newReport(o options, results []Result, serverVersion string) *Report {
	r := &Report{
		Command:         o.commandLine,
		Date:            time.Now().UTC().Format(time.RFC3339),
		Machine:         benchkit.DescribeMachine(),
		ServerVersion:   serverVersion,
		Objects:         o.objects,
		DurationSeconds: o.duration.Seconds(),
		Runs:            o.runs,
		GOGC:            o.gogc,
		Writers:         o.writers,
		Inflight:        o.inflight,
		AllRuns:         results,
	}
	for _, v := range o.informers {
		r.Informers = append(r.Informers, v.name)
	}
	for _, backend := range o.backends {
		for _, rate := range o.rates {
			for _, hs := range o.handlerSets {
				for _, v := range o.informers {
					if row, ok := aggregate(results, backend, rate, string(hs), v.name); ok {
						r.Rows = append(r.Rows, row)
					}
				}
			}
		}
	}
	r.Goals = goals(r.Rows)
	return r
}

// aggregate takes the median of every figure of one row's runs.
func aggregate(results []Result, backend string, rate float64, handlers, informer string) (Row, bool) {
	var rs []Result
	for _, res := range results {
		if res.Backend == backend && res.Rate == rate && res.Handlers == handlers && res.Informer == informer {
			rs = append(rs, res)
		}
	}
	if len(rs) == 0 {
		return Row{}, false
	}
	f := func(get func(Result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, res := range rs {
			xs[i] = get(res)
		}
		return benchkit.Median(xs)
	}
	i64 := func(get func(Result) int64) int64 { return int64(f(func(r Result) float64 { return float64(get(r)) })) }
	handler := func(get func(Result) *Handler) *Handler {
		if get(rs[0]) == nil {
			return nil
		}
		h := func(g func(Handler) float64) float64 { return f(func(r Result) float64 { return g(*get(r)) }) }
		return &Handler{
			Calls:          int64(h(func(x Handler) float64 { return float64(x.Calls) })),
			Share:          h(func(x Handler) float64 { return x.Share }),
			PerSecond:      h(func(x Handler) float64 { return x.PerSecond }),
			P50Ms:          h(func(x Handler) float64 { return x.P50Ms }),
			P99Ms:          h(func(x Handler) float64 { return x.P99Ms }),
			MaxMs:          h(func(x Handler) float64 { return x.MaxMs }),
			Backlog:        int64(h(func(x Handler) float64 { return float64(x.Backlog) })),
			Unstamped:      int64(h(func(x Handler) float64 { return float64(x.Unstamped) })),
			CatchUpSeconds: h(func(x Handler) float64 { return x.CatchUpSeconds }),
			CaughtUp:       !slices.ContainsFunc(rs, func(r Result) bool { return !get(r).CaughtUp }),
		}
	}
	m := Result{
		Backend: backend, Informer: informer, Handlers: handlers, Rate: rate, Objects: rs[0].Objects,
		WindowSeconds: f(func(r Result) float64 { return r.WindowSeconds }),
		Writes:        i64(func(r Result) int64 { return r.Writes }),
		Fast:          *handler(func(r Result) *Handler { return &r.Fast }),
		Slow:          handler(func(r Result) *Handler { return r.Slow }),
		PeakHeap:      i64(func(r Result) int64 { return r.PeakHeap }),
		PeakLive:      i64(func(r Result) int64 { return r.PeakLive }),
		EndHeap:       i64(func(r Result) int64 { return r.EndHeap }),
		BaselineHeap:  uint64(f(func(r Result) float64 { return float64(r.BaselineHeap) })),
		PeakRSS:       uint64(f(func(r Result) float64 { return float64(r.PeakRSS) })),
		CPUSeconds:    f(func(r Result) float64 { return r.CPUSeconds }),
		GCs:           uint64(f(func(r Result) float64 { return float64(r.GCs) })),
		LoadAverage:   f(func(r Result) float64 { return r.LoadAverage }),
		Series:        rs[0].Series,
	}
	// Any relist or lost write in any run must show.
	for _, res := range rs {
		m.Relists = max(m.Relists, res.Relists)
		m.Missed = max(m.Missed, res.Missed)
	}
	return Row{Backend: backend, Rate: rate, Handlers: handlers, Informer: informer, Runs: len(rs), Median: m}, true
}

// goals compares every informer but client-go with client-go in each
// scenario: throughput (the fast handler's events per second; at a target
// rate, the share of the writes it got in the window, since each child's
// writer reaches the rate to within its own noise) and p99 latency, of the
// fast handler and of the slow one. The control's comparisons are marked:
// they measure the noise, not an informer.
func goals(rows []Row) []Goal {
	var gs []Goal
	for _, theirs := range rows {
		if theirs.Informer != "client-go" {
			continue
		}
		for _, ours := range rows {
			if ours.Informer == "client-go" || ours.scenario() != theirs.scenario() {
				continue
			}
			v, _ := findInformer(ours.Informer)
			add := func(goal string, atLeast bool, num, den float64) {
				if den <= 0 {
					return
				}
				ratio := num / den
				rounded := math.Round(ratio*1000) / 1000
				met := rounded <= 1
				if atLeast {
					met = rounded >= 1
				}
				gs = append(gs, Goal{Goal: goal, Scenario: ours.scenario(), Ours: ours.Informer, Ratio: ratio, AtLeast: atLeast, Met: met, Control: v.control})
			}
			o, t := ours.Median, theirs.Median
			add("fast handler: throughput >= client-go's", true, throughput(o, o.Fast), throughput(t, t.Fast))
			add("fast handler: p99 latency <= client-go's", false, o.Fast.P99Ms, t.Fast.P99Ms)
			// A coalescing slow handler makes fewer calls than there are
			// writes by design: compare it with the unbounded queue instead
			// (Report.coalescing).
			if v.coalesceSlow {
				continue
			}
			if o.Slow != nil && t.Slow != nil {
				add("slow handler: throughput >= client-go's", true, throughput(o, *o.Slow), throughput(t, *t.Slow))
				add("slow handler: p99 latency <= client-go's", false, o.Slow.P99Ms, t.Slow.P99Ms)
			}
		}
	}
	return gs
}

// throughput is h's events per second, or at a target rate the share of
// the writes it got (in a row, the median of the runs' shares: the median
// calls over the median writes would mix runs).
func throughput(r Result, h Handler) float64 {
	if r.Rate == 0 {
		return h.PerSecond
	}
	return h.Share
}

func mib[T int64 | uint64 | float64](b T) float64 { return float64(b) / (1 << 20) }

// write prints the tables to stdout and writes results.md, results.json and
// the charts to dir.
func (r *Report) write(dir string, stdout io.Writer) error {
	md := r.markdown()
	if _, err := io.WriteString(stdout, md); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{"results.md": []byte(md), "results.json": append(js, '\n')}
	for name, c := range r.charts() {
		files[name] = c
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// chartName is the file of the heap chart of one backend and rate with the
// slow handler.
func chartName(backend string, rate float64) string {
	return fmt.Sprintf("heap-%s-%s.svg", backend, rateName(rate))
}

// charts draws, per backend and rate run with the slow handler, the heap
// over time of every informer.
func (r *Report) charts() map[string][]byte {
	out := map[string][]byte{}
	type key struct {
		backend string
		rate    float64
	}
	lines := map[key][]line{}
	var order []key
	for _, row := range r.Rows {
		if row.Handlers != string(fastAndSlow) {
			continue
		}
		k := key{row.Backend, row.Rate}
		if _, ok := lines[k]; !ok {
			order = append(order, k)
		}
		lines[k] = append(lines[k], line{name: row.Informer, series: row.Median.Series})
	}
	for _, k := range order {
		title := fmt.Sprintf("Heap above baseline with a slow handler (1 ms per call): %s, %s writes/s to %d ConfigMaps", k.backend, rateName(k.rate), r.Objects)
		out[chartName(k.backend, k.rate)] = heapChartSVG(title, lines[k])
	}
	return out
}

func (r *Report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Informers under load: %d ConfigMaps, %s of writes per run\n\n", r.Objects, time.Duration(r.DurationSeconds*float64(time.Second)))
	fmt.Fprintf(&b, "`%s` on %s, %s", r.Command, r.Machine, r.Date)
	if r.ServerVersion != "" {
		fmt.Fprintf(&b, ", API server %s", r.ServerVersion)
	}
	fmt.Fprintf(&b, "; GOGC=%d, medians of %d runs, each informer in a fresh child process.\n\n", r.GOGC, r.Runs)
	b.WriteString("*writes/s*: updates made per second of the window (envtest: patches the API server acknowledged, " +
		"from the parent, up to " + fmt.Sprint(r.Writers) + " at a time; fake: updates of the in-process fake server; " +
		"`max`: as fast as the API server takes them, or, on the fake, keeping " + fmt.Sprint(r.Inflight) + " writes ahead of the fast handler). " +
		"*events/s*: update calls a handler got per second of the window; *p50*/*p99*: milliseconds from the write to the call, over those calls; " +
		"*backlog*: writes of the window the handler had not got when it ended (a coalescing handler gets fewer calls than writes by design); " +
		"*catch-up*: seconds after the window until the slow handler had heard of every object's last write. " +
		"Heap figures are MiB above the child's heap after GC before the informer started: *peak heap* sampled (garbage included), " +
		"*peak live* the largest live heap a GC of the window marked (read after every cycle), *end* the heap after a full GC when the writes ended (what the queues hold). " +
		"*CPU s*: the child's CPU time over the window (with the fake backend this includes the fake server and the writer, the same for every informer); " +
		"*µs/write*: CPU s per write; *GCs*: GC cycles in the window; *load*: the machine's one-minute load average when the window ended (other programs included; above the core count, the figures are noisy). *relists*, *missed*: full lists after the first, and writes the fast handler never got; both must be 0.\n\n")
	b.WriteString("| backend | writes/s | handlers | informer | writes/s done | fast events/s | fast p50 | fast p99 | slow events/s | slow p50 | slow p99 | slow backlog | slow catch-up s | peak heap | peak live | end heap | CPU s | µs/write | GCs | load | relists | missed |\n")
	b.WriteString("|---|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range r.Rows {
		m := row.Median
		slow := "| | | | |"
		if m.Slow != nil {
			slow = fmt.Sprintf("%.0f | %s | %s | %d | %s |", m.Slow.PerSecond, ms(m.Slow.P50Ms), ms(m.Slow.P99Ms), m.Slow.Backlog, catchUpCell(*m.Slow))
		}
		perWrite := 0.0
		if m.Writes > 0 {
			perWrite = m.CPUSeconds / float64(m.Writes) * 1e6
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f | %.0f | %s | %s | %s %.1f | %.1f | %.1f | %.1f | %.1f | %d | %.1f | %d | %d |\n",
			row.Backend, rateName(row.Rate), row.Handlers, row.Informer, float64(m.Writes)/m.WindowSeconds,
			m.Fast.PerSecond, ms(m.Fast.P50Ms), ms(m.Fast.P99Ms), slow,
			mib(m.PeakHeap), mib(m.PeakLive), mib(m.EndHeap), m.CPUSeconds, perWrite, m.GCs, m.LoadAverage, m.Relists, m.Missed)
	}
	b.WriteString(r.goalTable())
	b.WriteString(r.coalescing())
	charts := r.charts()
	if len(charts) > 0 {
		b.WriteString("\nHeap over time with the slow handler:")
		for _, row := range r.Rows {
			if name := chartName(row.Backend, row.Rate); charts[name] != nil {
				fmt.Fprintf(&b, " [%s](%s)", name, name)
				delete(charts, name)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// goalTable lists the goals. With the control run, each goal row also
// shows the control's ratio for the same goal and scenario; a control ratio
// that no informer of ours shares a row with gets a row of its own.
func (r *Report) goalTable() string {
	if len(r.Goals) == 0 {
		return ""
	}
	key := func(g Goal) string { return g.Scenario + "|" + g.Goal }
	controls, compared := map[string]float64{}, map[string]bool{}
	for _, g := range r.Goals {
		if g.Control {
			controls[key(g)] = g.Ratio
		} else {
			compared[key(g)] = true
		}
	}
	var b strings.Builder
	b.WriteString("\nGoals, ours / client-go's in the same scenario (throughput at a target rate: the share of the writes each handler got in the window; met when the ratio, rounded to three decimals, is at least 1 for throughput, at most 1 for latency)")
	if len(controls) == 0 {
		b.WriteString(":\n\n| scenario | informer | goal | ratio | met |\n|---|---|---|--:|---|\n")
	} else {
		b.WriteString("; *control*: " + controlInformer + " / client-go on the same goal: one informer against itself, so what the run's noise alone makes of a ratio (no goal):\n\n" +
			"| scenario | informer | goal | ratio | met | control |\n|---|---|---|--:|---|--:|\n")
	}
	for _, g := range r.Goals {
		if g.Control && compared[key(g)] {
			continue
		}
		met := "no"
		switch {
		case g.Control:
			met = "control"
		case g.Met:
			met = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.3f | %s |", g.Scenario, g.Ours, g.Goal, g.Ratio, met)
		if len(controls) > 0 {
			if c, ok := controls[key(g)]; ok && !g.Control {
				fmt.Fprintf(&b, " %.3f |", c)
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// catchUpCell formats a slow handler's catch-up time, or the limit it passed.
func catchUpCell(h Handler) string {
	if !h.CaughtUp {
		return fmt.Sprintf("> %.0f", h.CatchUpSeconds)
	}
	return fmt.Sprintf("%.1f", h.CatchUpSeconds)
}

// coalescing compares, in each scenario with the slow handler, every
// coalescing variant with ours with unbounded queues: what the queues hold,
// how stale the slow handler's calls are and how long it takes to catch up.
func (r *Report) coalescing() string {
	var b strings.Builder
	for _, unbounded := range r.Rows {
		if unbounded.Informer != "ours" || unbounded.Median.Slow == nil {
			continue
		}
		for _, c := range r.Rows {
			v, err := findInformer(c.Informer)
			if err != nil || !v.coalesceSlow || c.scenario() != unbounded.scenario() || c.Median.Slow == nil {
				continue
			}
			if b.Len() == 0 {
				b.WriteString("\nCoalescing against the unbounded queue (same scenario; heap MiB above baseline; slow p99 in ms):\n\n")
				b.WriteString("| scenario | informer | end heap | peak live | slow calls/s | slow p99 | slow catch-up s | end heap vs ours |\n|---|---|--:|--:|--:|--:|--:|--:|\n")
			}
			for _, row := range []Row{unbounded, c} {
				m := row.Median
				ratio := ""
				if row.Informer != "ours" && unbounded.Median.EndHeap > 0 {
					ratio = fmt.Sprintf("%.3f", float64(m.EndHeap)/float64(unbounded.Median.EndHeap))
				}
				fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %.0f | %s | %s | %s |\n", row.scenario(), row.Informer,
					mib(m.EndHeap), mib(m.PeakLive), m.Slow.PerSecond, ms(m.Slow.P99Ms), catchUpCell(*m.Slow), ratio)
			}
		}
	}
	return b.String()
}

// ms formats milliseconds with three significant digits or so.
func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
