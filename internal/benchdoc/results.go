package benchdoc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Results is the part of hack/bench's results.json the documents quote.
type Results struct {
	Provenance    Provenance `json:"provenance"`
	Command       string     `json:"command"`
	Kind          string     `json:"kind"`
	Date          string     `json:"date"`
	Machine       Machine    `json:"machine"`
	ServerVersion string     `json:"serverVersion"`
	Objects       int        `json:"objects"`
	TotalObjects  int        `json:"totalObjects"`
	PageSize      int64      `json:"pageSize"`
	// Limits describes the children's client-side rate limit ("" in files
	// of runs before it was recorded).
	Limits   string  `json:"limits"`
	GOGC     int     `json:"gogc"`
	Runs     int     `json:"runs"`
	MemLimit int64   `json:"memLimitBytes"`
	Rows     []Row   `json:"rows"`
	Goals    []Goal  `json:"goals"`
	AllRuns  []Phase `json:"allRuns"`
}

// Provenance is where the results came from.
type Provenance struct {
	Commit           string            `json:"commit"`
	Dirty            bool              `json:"dirty"`
	Flags            map[string]string `json:"flags"`
	LoadAverageStart [3]float64        `json:"loadAverageStart"`
	LoadAverageEnd   [3]float64        `json:"loadAverageEnd"`
	Note             string            `json:"note"`
}

// Machine is where the benchmark ran.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemoryGiB int    `json:"memoryGiB"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
}

// Row is one line of the tables: the medians of a variant's runs.
type Row struct {
	Name     string `json:"name"`
	Desc     string `json:"description"`
	MemLimit int64  `json:"memLimitBytes"`
	Runs     int    `json:"runs"`
	Median   Phase  `json:"median"`
}

// Goal is a target ratio and what the run measured.
type Goal struct {
	Goal   string  `json:"goal"`
	Ours   string  `json:"ours"`
	Theirs string  `json:"theirs"`
	Ratio  float64 `json:"ratio"`
	Target float64 `json:"target"`
	Met    bool    `json:"met"`
}

// Phase is what one child measured over one window (or the medians of a
// row's). Heap figures are bytes above the child's baseline.
type Phase struct {
	Row          string    `json:"row"`
	MemLimit     int64     `json:"memLimitBytes"`
	SyncSeconds  float64   `json:"syncSeconds"`
	PeakHeap     int64     `json:"peakHeapBytes"`
	PeakLive     int64     `json:"peakLiveBytes"`
	SteadyHeap   int64     `json:"steadyHeapBytes"`
	PeakRSS      uint64    `json:"peakRSSBytes"`
	CPUSeconds   float64   `json:"cpuSeconds"`
	GCCPUSeconds float64   `json:"gcCPUSeconds"`
	GCs          uint64    `json:"gcs"`
	Objects      int       `json:"objects"`
	BaselineHeap uint64    `json:"baselineHeapBytes"`
	BaselineRSS  uint64    `json:"baselineRSSBytes"`
	Requests     Requests  `json:"requests"`
	Timeline     *Timeline `json:"timeline,omitempty"`
}

// Requests are the requests a child sent in a window.
type Requests struct {
	Lists            int64 `json:"lists"`
	StreamingWatches int64 `json:"streamingWatches"`
}

// Timeline is a child's heap over time, in KiB above its baseline.
type Timeline struct {
	Ms      []int64 `json:"ms"`
	HeapKiB []int64 `json:"heapKiB"`
	LiveKiB []int64 `json:"liveKiB"`
	Marks   []Mark  `json:"marks"`
	// Resumed holds the indices of the samples taken first after a pause
	// in sampling: the chart does not join them to the samples before.
	Resumed []int `json:"resumed,omitempty"`
}

// Mark is a step of a child's life on its timeline.
type Mark struct {
	Name string `json:"name"`
	Ms   int64  `json:"ms"`
}

// Load reads and checks a results file.
func Load(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// check rejects files the documents could not name the origin of.
func (r *Results) check() error {
	var missing []string
	for what, empty := range map[string]bool{
		"provenance.commit": r.Provenance.Commit == "", "command": r.Command == "", "date": r.Date == "",
		"kind": r.Kind == "", "rows": len(r.Rows) == 0, "allRuns": len(r.AllRuns) == 0,
	} {
		if empty {
			missing = append(missing, what)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("not a complete hack/bench results file: no %s", strings.Join(sorted(missing), ", "))
	}
	for _, p := range r.AllRuns {
		if tl := p.Timeline; tl != nil && (len(tl.Ms) != len(tl.HeapKiB) || len(tl.Ms) != len(tl.LiveKiB)) {
			return errors.New("a timeline of row " + p.Row + " has arrays of different lengths")
		}
		if tl := p.Timeline; tl != nil && slices.ContainsFunc(tl.Resumed, func(i int) bool { return i < 0 || i > len(tl.Ms) }) {
			return errors.New("a timeline of row " + p.Row + " resumes at a sample it does not have")
		}
	}
	return nil
}

func (r *Results) row(name string, limit int64) (Row, bool) {
	for _, row := range r.Rows {
		if row.Name == name && row.MemLimit == limit {
			return row, true
		}
	}
	return Row{}, false
}

func (r *Results) goal(goal, ours string) (Goal, bool) {
	for _, g := range r.Goals {
		if g.Goal == goal && g.Ours == ours {
			return g, true
		}
	}
	return Goal{}, false
}

// title names the objects of the run.
func (r *Results) title() string {
	switch r.Kind {
	case "rolebindings":
		return "RoleBindings"
	case "configmaps":
		return "ConfigMaps"
	case "pods":
		return "Pods"
	}
	return r.Kind
}

// shortCommit is the commit as the blocks quote it, with "+dirty" when the
// tree had changes.
func (r *Results) shortCommit() string {
	c := r.Provenance.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if r.Provenance.Dirty {
		c += "+dirty"
	}
	return c
}

// day is the run's date without the time.
func (r *Results) day() string {
	d, _, _ := strings.Cut(r.Date, "T")
	return d
}

// origin is the sentence the README's headline ends with.
func (r *Results) origin() string {
	return fmt.Sprintf("`%s` at %s, %s, on %s (%d cores, %s; load average %.1f at the start, %.1f at the end: other work shared the machine), API server %s",
		r.Command, r.shortCommit(), r.day(), r.Machine.CPU, r.Machine.Cores, r.Machine.Go,
		r.Provenance.LoadAverageStart[0], r.Provenance.LoadAverageEnd[0], r.ServerVersion)
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
