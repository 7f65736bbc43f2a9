package benchdoc

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/leaninformer/leaninformer/internal/benchresults"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestReplaceBlock(t *testing.T) {
	doc := "a\n<!-- BEGIN GENERATED: x -->\nold\n<!-- END GENERATED: x -->\nb\n"
	got, err := ReplaceBlock(doc, "x", "new\n")
	if want := "a\n<!-- BEGIN GENERATED: x -->\nnew\n<!-- END GENERATED: x -->\nb\n"; err != nil || got != want {
		t.Fatalf("ReplaceBlock = %q, %v; want %q", got, err, want)
	}
	if again, err := ReplaceBlock(got, "x", "new"); err != nil || again != got {
		t.Errorf("ReplaceBlock is not idempotent: %q, %v", again, err)
	}
	if body, err := Block(got, "x"); err != nil || body != "\nnew\n" {
		t.Errorf("Block = %q, %v", body, err)
	}
	for name, bad := range map[string]string{
		"missing":   "a\n",
		"no end":    "<!-- BEGIN GENERATED: x -->\n",
		"twice":     doc + doc,
		"reversed":  "<!-- END GENERATED: x -->\n<!-- BEGIN GENERATED: x -->\n",
		"other one": strings.ReplaceAll(doc, ": x", ": y"),
	} {
		if _, err := ReplaceBlock(bad, "x", "new"); err == nil {
			t.Errorf("%s: ReplaceBlock succeeded", name)
		}
	}
}

// results is a small results file as hack/bench writes one.
func results() *benchresults.Results {
	tl := func(peak int64) *benchresults.Timeline {
		return &benchresults.Timeline{Ms: []int64{0, 20, 40, 60}, HeapKiB: []int64{0, peak, 2048, 4096}, LiveKiB: []int64{0, 1024, 1024, 2048},
			Marks: []benchresults.Mark{{Name: "synced", Ms: 20}, {Name: "relist forced", Ms: 40}, {Name: "relisted", Ms: 60}}, Resumed: []int{2}}
	}
	row := func(name string, heap, live, steady int64, sync float64) benchresults.Row {
		return benchresults.Row{Name: name, Desc: "desc of " + name, Runs: 1, Median: benchresults.Phase{Row: name, PeakHeap: heap << 20, PeakLive: live << 20, SteadyHeap: steady << 20, SyncSeconds: sync}}
	}
	return &benchresults.Results{
		Provenance: benchresults.Provenance{Commit: "0123456789abcdef0123", Dirty: true, Flags: map[string]string{"runs": "1", "variants": "a|b"},
			LoadAverageStart: [3]float64{1.5, 1, 1}, LoadAverageEnd: [3]float64{2.5, 1, 1}, Note: "noisy"},
		Command: "bench --runs 1", Kind: "rolebindings", Date: "2026-12-01T13:00:00Z", ServerVersion: "v1.37.2",
		Machine: benchresults.Machine{CPU: "cpu", Cores: 2, MemoryGiB: 24, Kernel: "6", Go: "go1.26"}, Objects: 100, TotalObjects: 107, PageSize: -1, GOGC: 100, Runs: 1,
		Rows: []benchresults.Row{row("client-go", 40, 30, 20, 1), row("ours-stream", 38, 24, 18, 1.2), row("client-go relist", 80, 60, 20, 1), row("ours-stream relist", 50, 30, 20, 0.9)},
		Goals: []benchresults.Goal{{Goal: "relist: marked-live peak vs client-go", Ours: "ours-stream relist", Theirs: "client-go relist", Ratio: 0.5, Target: 0.55, Met: true},
			{Goal: "time to sync vs client-go", Ours: "ours-stream", Theirs: "client-go", Ratio: 1.2, Target: 1.1}},
		AllRuns: []benchresults.Phase{
			{Row: "client-go", PeakHeap: 40 << 20, Timeline: tl(40 << 10)}, {Row: "client-go relist"},
			{Row: "ours-stream", PeakHeap: 38 << 20, Timeline: tl(38 << 10)}, {Row: "ours-stream relist"},
		},
	}
}

func TestBlocksNameTheirOrigin(t *testing.T) {
	r := results()
	for name, block := range map[string]string{
		"headline": Headline(r), "chart": Chart(r, "docs/benchmarks/memory.svg"), "run": Run(r), "goals": Goals(r), "tables": Tables(r),
	} {
		if !strings.Contains(block, "0123456789ab+dirty") && !strings.Contains(block, "0123456789abcdef0123") {
			t.Errorf("%s block does not name the commit:\n%s", name, block)
		}
	}
	h := Headline(r)
	for _, want := range []string{"`bench --runs 1`", "| 30.0 MiB | 60.0 MiB | 0.50x | <= 0.55x | met |", "| 1.20 s | 1.00 s | 1.20x | <= 1.10x | missed |", "load average 1.5"} {
		if !strings.Contains(h, want) {
			t.Errorf("headline lacks %q:\n%s", want, h)
		}
	}
	if strings.Contains(h, "interning") {
		t.Errorf("headline has a line for rows the run lacks:\n%s", h)
	}
	if run := Run(r); !strings.Contains(run, "`--variants=a\\|b`") || !strings.Contains(run, "chosen by our informer") {
		t.Errorf("run block does not escape | in table cells or lacks the page size:\n%s", run)
	}
	if tables := Tables(r); strings.Count(tables, "| client-go relist |") != 2 {
		t.Errorf("tables lack the median or the per-run line of client-go relist:\n%s", tables)
	}
}

func TestMemoryChart(t *testing.T) {
	r := results()
	svg, err := MemoryChart(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Fatalf("chart is not well-formed XML: %v", err)
	}
	if n := strings.Count(string(svg), "<polyline"); n != 8 {
		t.Errorf("chart has %d lines, want heap and live of 2 informers, before and after the pause", n)
	}
	r.AllRuns[0].Timeline.Resumed = []int{5}
	if err := check(r); err == nil {
		t.Error("a timeline resuming past its samples passed the check")
	}
	r.AllRuns = r.AllRuns[:2]
	if _, err := MemoryChart(r); err == nil {
		t.Error("a chart without our informer's timeline succeeded")
	}
}

func TestGenerateAndLoad(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "docs/benchmarks"), 0o755))
	var readme, bench string
	for _, n := range []string{HeadlineBlock, ChartBlock} {
		readme += beginMarker(n) + "\n" + endMarker(n) + "\n"
	}
	for _, n := range []string{RunBlock, GoalsBlock, MarksBlock, TablesBlock, VariantsBlock} {
		bench += beginMarker(n) + "\n" + endMarker(n) + "\n"
	}
	must(os.WriteFile(filepath.Join(root, "README.md"), []byte(readme), 0o644))
	must(os.WriteFile(filepath.Join(root, "docs/benchmarks.md"), []byte(bench), 0o644))
	js := filepath.Join(root, DefaultLayout.Results)
	must(os.WriteFile(js, []byte(`{"command": "x"}`), 0o644))
	if _, err := Generate(root, DefaultLayout); err == nil || !strings.Contains(err.Error(), "provenance.commit") {
		t.Errorf("Generate from an incomplete file: %v, want an error naming what is missing", err)
	}
	must(os.WriteFile(js, []byte(`{"command": "x", "commitSha": "0123"}`), 0o644))
	if _, err := Generate(root, DefaultLayout); err == nil || !strings.Contains(err.Error(), `unknown field "commitSha"`) {
		t.Errorf("Generate from a file with a field the schema lacks: %v, want an error naming it", err)
	}
	b, err := benchresults.Encode(results())
	must(err)
	must(os.WriteFile(js, b, 0o644))
	files, err := Generate(root, DefaultLayout)
	must(err)
	if len(files) != 3 || !strings.Contains(string(files["README.md"]), `<img src="docs/benchmarks/memory.svg"`) ||
		!strings.Contains(string(files["docs/benchmarks.md"]), "- `ours-stream`: desc of ours-stream") {
		t.Errorf("Generate wrote %d files:\n%s\n%s", len(files), files["README.md"], files["docs/benchmarks.md"])
	}
	must(os.WriteFile(filepath.Join(root, "README.md"), []byte("no blocks\n"), 0o644))
	if _, err := Generate(root, DefaultLayout); err == nil || !strings.Contains(err.Error(), "README.md") {
		t.Errorf("Generate into a README without blocks: %v, want an error naming it", err)
	}
}

// The headline says other work shared the machine only when the load
// before the run says so: the load at its end is the benchmark's own.
func TestOriginNamesASharedMachineOnlyWhenItWas(t *testing.T) {
	r := &benchresults.Results{Machine: benchresults.Machine{Cores: 2}}
	r.Provenance.LoadAverageEnd[0] = 3.3
	for start, shared := range map[float64]bool{0.9: false, 1.0: false, 1.1: true, 9.4: true} {
		r.Provenance.LoadAverageStart[0] = start
		if got := strings.Contains(origin(r), "other work shared the machine"); got != shared {
			t.Errorf("load %.1f at the start: says the machine was shared: %v, want %v (%s)", start, got, shared, origin(r))
		}
	}
}
