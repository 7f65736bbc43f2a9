package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/leaninformer/leaninformer/internal/benchresults"
)

// defaultTimelineInterval samples the informers' timelines often enough to
// show a sync of a second, and seldom enough to keep results.json small.
const defaultTimelineInterval = 20 * time.Millisecond

// provenanceNote is written into every results file: the load averages say
// how much, but not what, else ran.
const provenanceNote = "Times depend on what else the machine runs (see the load averages); heap figures much less so."

type provenanceStart struct {
	commit string
	dirty  bool
	load   [3]float64
}

// startProvenance records what the run starts from.
func startProvenance() provenanceStart {
	commit, dirty := gitCommit()
	return provenanceStart{commit: commit, dirty: dirty, load: loadAverages()}
}

// finish completes the provenance at the end of the run.
func (s provenanceStart) finish(o options) benchresults.Provenance {
	return benchresults.Provenance{Commit: s.commit, Dirty: s.dirty, Flags: o.flags, LoadAverageStart: s.load, LoadAverageEnd: loadAverages(), Note: provenanceNote}
}

// gitCommit asks git for the current directory's HEAD and whether the work
// tree differs from it.
func gitCommit() (commit string, dirty bool) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	status, err := exec.Command("git", "status", "--porcelain").Output()
	return strings.TrimSpace(string(head)), err != nil || len(bytes.TrimSpace(status)) > 0
}

// loadAverages reads /proc/loadavg; zeros where it cannot.
func loadAverages() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	fields := strings.Fields(string(b))
	for i := range min(3, len(fields)) {
		l[i], _ = strconv.ParseFloat(fields[i], 64)
	}
	return l
}

// flagValues returns every flag of fs with its value, set or default.
func flagValues(fs *flag.FlagSet) map[string]string {
	m := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { m[f.Name] = f.Value.String() })
	return m
}

// publish writes results.json to dir, if set: make bench's copy, committed
// under docs/benchmarks/ for hack/docgen.
func (r *Report) publish(dir string) error {
	if dir == "" {
		return nil
	}
	b, err := benchresults.Encode(&r.Results)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, "results.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("publish the results: %w", err)
	}
	return nil
}
