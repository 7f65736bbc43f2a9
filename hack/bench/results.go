package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// defaultTimelineInterval samples the informers' timelines often enough to
// show a sync of a second, and seldom enough to keep results.json small.
const defaultTimelineInterval = 20 * time.Millisecond

// Provenance says where a results file came from, so that a figure quoted
// from it names the code, the machine and the command that produced it.
type Provenance struct {
	// Commit is git's HEAD in the directory the run started in, and Dirty
	// whether the work tree differed from it (untracked files included:
	// they may be built); "unknown" without git.
	Commit string `json:"commit"`
	Dirty  bool   `json:"dirty"`
	// Flags holds every flag's value, defaults included.
	Flags map[string]string `json:"flags"`
	// LoadAverage is the machine's 1, 5 and 15 minute load averages when
	// the run started and when it ended: other programs' work included.
	LoadAverageStart [3]float64 `json:"loadAverageStart"`
	LoadAverageEnd   [3]float64 `json:"loadAverageEnd"`
	// Note is the caveat readers need about the figures' noise.
	Note string `json:"note"`
}

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
func (s provenanceStart) finish(o options) Provenance {
	return Provenance{Commit: s.commit, Dirty: s.dirty, Flags: o.flags, LoadAverageStart: s.load, LoadAverageEnd: loadAverages(), Note: provenanceNote}
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

// numberArray is a JSON array of numbers as MarshalIndent spreads it over
// lines, one element a line.
var numberArray = regexp.MustCompile(`\[(\s*-?[0-9][0-9.eE+-]*,)*\s*-?[0-9][0-9.eE+-]*\s*\]`)

// json is the report as results.json holds it: indented, but with arrays of
// numbers (the timelines) on one line each, so that the file stays
// readable and reviewable.
func (r *Report) json() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	b = numberArray.ReplaceAllFunc(b, func(a []byte) []byte {
		return []byte(strings.Join(strings.Fields(string(a)), ""))
	})
	return append(b, '\n'), nil
}

// publish writes results.json to dir, if set: make bench's copy, committed
// under docs/benchmarks/ for hack/docgen.
func (r *Report) publish(dir string) error {
	if dir == "" {
		return nil
	}
	b, err := r.json()
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
