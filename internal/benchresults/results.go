package benchresults

import "fmt"

// Results is everything a results file holds: where the run came from, the
// medians of every row, the goals computed from them, and every run's
// figures.
type Results struct {
	Provenance Provenance `json:"provenance"`
	// Command is the benchmark's command line, as it was run.
	Command string `json:"command"`
	// Kind is the resource measured: rolebindings, configmaps or pods.
	Kind string `json:"kind"`
	// Date is when the results were computed, in RFC 3339, UTC.
	Date    string  `json:"date"`
	Machine Machine `json:"machine"`
	// ServerVersion is the API server's version, as it reports it.
	ServerVersion string `json:"serverVersion"`
	// Objects is the number of bench objects the run populated and listed.
	Objects int `json:"objects"`
	// TotalObjects is the number of objects of Kind in the cluster, the
	// bench objects included: what an informer lists.
	TotalObjects int `json:"totalObjects"`
	// PageSize is the LIST page size in objects of our paginated strategies
	// and the floor; negative: our informer sized its pages itself and the
	// floor listed by 500.
	PageSize int64 `json:"pageSize"`
	// Limits describes the children's client-side rate limit (requests per
	// second and burst); "" in files of runs before it was recorded.
	Limits string `json:"limits"`
	// Touched says whether a bench object was updated before each child,
	// so that the API server served continue pages from its watch cache.
	Touched bool `json:"touched"`
	// GOGC is the children's GOGC, in percent.
	GOGC int `json:"gogc"`
	// Runs is the number of child runs per row.
	Runs int `json:"runs"`
	// MemLimit is the GOMEMLIMIT in bytes of the run's limited rows; 0 when
	// the run had none.
	MemLimit int64 `json:"memLimitBytes"`
	// Rows are the medians of every row, without GOMEMLIMIT first.
	Rows []Row `json:"rows"`
	// Goals are the target ratios the run's rows can be compared against.
	Goals []Goal `json:"goals"`
	// AllRuns is every child's figures, one Phase a window.
	AllRuns []Phase `json:"allRuns"`
}

// Provenance says where a results file came from, so that a figure quoted
// from it names the code, the machine and the command that produced it.
type Provenance struct {
	// Commit is git's HEAD (40 hex digits) in the directory the run started
	// in; "unknown" without git.
	Commit string `json:"commit"`
	// Dirty says whether the work tree differed from Commit (untracked
	// files included: they may be built).
	Dirty bool `json:"dirty"`
	// Flags holds every flag's value by the flag's name, defaults included.
	Flags map[string]string `json:"flags"`
	// LoadAverageStart and LoadAverageEnd are the machine's 1, 5 and 15
	// minute load averages (runnable tasks, as /proc/loadavg says) when the
	// run started and when it ended: other programs' work included.
	LoadAverageStart [3]float64 `json:"loadAverageStart"`
	LoadAverageEnd   [3]float64 `json:"loadAverageEnd"`
	// Note is the caveat readers need about the figures' noise.
	Note string `json:"note"`
}

// Machine describes where the benchmark ran. Its fields are those of
// benchkit.Machine, which hack/bench converts to it: a field added there
// fails to compile the conversion instead of changing the file unnoticed.
type Machine struct {
	// CPU is the CPU's model name.
	CPU string `json:"cpu"`
	// Cores is the number of logical CPUs.
	Cores int `json:"cores"`
	// MemoryGiB is the machine's memory, in GiB rounded to the nearest.
	MemoryGiB int `json:"memoryGiB"`
	// Kernel is the Linux kernel's release.
	Kernel string `json:"kernel"`
	// Go is the Go version the benchmark was built with.
	Go string `json:"go"`
}

// Row is one line of a results table: the medians of one row's runs under
// one GOMEMLIMIT.
type Row struct {
	// Name is the row's name: a variant's, with " relist" for its forced
	// relist.
	Name string `json:"name"`
	// Desc says what the row measures.
	Desc string `json:"description"`
	// MemLimit is the GOMEMLIMIT in bytes the row's children ran under, 0
	// for none.
	MemLimit int64 `json:"memLimitBytes"`
	// Runs is the number of runs the medians are taken over.
	Runs int `json:"runs"`
	// Median holds the median of each figure over the runs, each taken
	// separately (so not necessarily one run's), and the first run's
	// requests.
	Median Phase `json:"median"`
}

// Goal is a target ratio of one of our rows' figures to another row's,
// and what the run measured.
type Goal struct {
	// Goal names what is compared, e.g. "relist: marked-live peak vs
	// client-go".
	Goal string `json:"goal"`
	// Ours and Theirs are the names of the rows compared; Theirs may be one
	// of ours (the steady store).
	Ours   string `json:"ours"`
	Theirs string `json:"theirs"`
	// Ratio is ours / theirs, of the rows' medians (no unit).
	Ratio float64 `json:"ratio"`
	// Target is the largest Ratio that meets the goal (no unit).
	Target float64 `json:"target"`
	// Met says whether Ratio <= Target.
	Met bool `json:"met"`
}

// Phase is what one child measured over one window, the initial sync or a
// forced relist, or the medians of a row's. Heap figures are bytes above
// the child's baseline heap.
type Phase struct {
	// Row is the name of the row the window belongs to.
	Row string `json:"row"`
	// MemLimit is the GOMEMLIMIT in bytes the child ran under, 0 for none.
	MemLimit int64 `json:"memLimitBytes"`
	// SyncSeconds is the window's length in seconds: from the start to the
	// handler having synced (informers), the list being complete (without
	// store, floor), or from the first request of a relist to the handler
	// having got all of it.
	SyncSeconds float64 `json:"syncSeconds"`
	// PeakHeap is the largest sampled size of heap objects, garbage
	// included, in bytes above the baseline.
	PeakHeap int64 `json:"peakHeapBytes"`
	// PeakLive is the largest live heap a GC marked, in bytes above the
	// baseline.
	PeakLive int64 `json:"peakLiveBytes"`
	// PeakMark is what gctrace said of the GC cycle that marked the most in
	// the window; nil where the child's log had no such lines.
	PeakMark *GCMark `json:"peakMark,omitempty"`
	// SteadyHeap is the heap after two full GCs at the end of the window,
	// in bytes above the baseline.
	SteadyHeap int64 `json:"steadyHeapBytes"`
	// PeakRSS is the process's VmHWM in bytes (absolute, not above the
	// baseline), reset at the window's start.
	PeakRSS uint64 `json:"peakRSSBytes"`
	// CPUSeconds is the process's CPU time in seconds (user and system, all
	// threads) over the window: decoding, storing, handlers, GC and the heap
	// sampler.
	CPUSeconds float64 `json:"cpuSeconds"`
	// GCCPUSeconds is the CPU time in seconds the Go runtime estimates its
	// GC spent over the window.
	GCCPUSeconds float64 `json:"gcCPUSeconds"`
	// GCs is the number of GC cycles that ended in the window.
	GCs uint64 `json:"gcs"`
	// Objects is the number of objects the store holds, or, without store,
	// how many objects the list brought.
	Objects int `json:"objects"`
	// BaselineHeap is the child's live heap in bytes after two full GCs before
	// the variant started: what the heap figures are relative to.
	BaselineHeap uint64 `json:"baselineHeapBytes"`
	// BaselineRSS is the child's VmRSS in bytes at the baseline.
	BaselineRSS uint64 `json:"baselineRSSBytes"`
	// BaselineRuntime is the Go runtime's memory in bytes (what GOMEMLIMIT
	// limits) at the baseline.
	BaselineRuntime uint64 `json:"baselineRuntimeBytes"`
	// Requests counts the requests the child sent in the window.
	Requests Requests `json:"requests"`
	// Timeline is the heap over the child's life, on the initial sync's
	// phase of informer rows; nil on the others.
	Timeline *Timeline `json:"timeline,omitempty"`
}

// GCMark is one GC cycle as GODEBUG=gctrace=1 prints it, in MiB (the
// runtime truncates), absolute rather than above the baseline. A GC counts
// as live everything allocated while it marks, so of its MarkedMiB up to
// EndMiB - StartMiB may be objects already unreachable when it ended.
type GCMark struct {
	// StartMiB is the heap when the mark began.
	StartMiB int64 `json:"startMiB"`
	// EndMiB is the heap when the mark ended.
	EndMiB int64 `json:"endMiB"`
	// MarkedMiB is the live heap the cycle marked.
	MarkedMiB int64 `json:"markedMiB"`
}

// AllocatedMiB is what was allocated while the cycle marked.
func (m GCMark) AllocatedMiB() int64 { return m.EndMiB - m.StartMiB }

// PeakMarkCell is p's PeakMark as the tables show it: "marked / allocated
// while marking", in MiB, or "–" without one.
func (p Phase) PeakMarkCell() string {
	if p.PeakMark == nil {
		return "–"
	}
	return fmt.Sprintf("%d / %d", p.PeakMark.MarkedMiB, p.PeakMark.AllocatedMiB())
}

// Requests counts the requests a child sent in a window, by kind. Its
// fields are those of faultproxy.RequestCounts, which hack/bench converts to
// it, and keep that type's names in the file.
type Requests struct {
	// Lists is the number of LIST requests.
	Lists int64 `json:"Lists"`
	// ListsWithLimit is the number of LISTs with a limit (paginated).
	ListsWithLimit int64 `json:"ListsWithLimit"`
	// ListsWithContinue is the number of LISTs with a continue token.
	ListsWithContinue int64 `json:"ListsWithContinue"`
	// Watches is the number of WATCH requests.
	Watches int64 `json:"Watches"`
	// StreamingWatches is the number of WATCHes with
	// sendInitialEvents=true (streaming lists).
	StreamingWatches int64 `json:"StreamingWatches"`
	// Other is the number of every other request (get, create, discovery,
	// ...).
	Other int64 `json:"Other"`
}

// Timeline is the heap over an informer child's life, from the informer's
// start through its initial sync and, for relist rows, the forced relist:
// what the memory-over-time chart draws. The three sample arrays have one
// element per sample.
type Timeline struct {
	// Ms is each sample's time, in milliseconds since the informer started.
	Ms []int64 `json:"ms"`
	// HeapKiB is the size of heap objects, garbage included, in KiB above
	// the child's baseline heap.
	HeapKiB []int64 `json:"heapKiB"`
	// LiveKiB is the live heap the last GC marked, in KiB above the
	// child's baseline heap: it changes only when a GC ends.
	LiveKiB []int64 `json:"liveKiB"`
	// Marks are the moments the child reached a step.
	Marks []Mark `json:"marks"`
	// Resumed holds the indices of the samples taken first after a pause
	// in sampling (while the child checks its store): a chart does not join
	// them to the samples before.
	Resumed []int `json:"resumed,omitempty"`
}

// Mark is one step of a child's life on its Timeline.
type Mark struct {
	// Name is the step: MarkSynced, MarkRelistForced or MarkRelisted.
	Name string `json:"name"`
	// Ms is when the child reached it, in milliseconds since the informer
	// started.
	Ms int64 `json:"ms"`
}

// The steps a Mark names.
const (
	// MarkSynced: the informer has synced.
	MarkSynced = "synced"
	// MarkRelistForced: the benchmark's proxy answered a watch with 410
	// Gone, forcing a relist.
	MarkRelistForced = "relist forced"
	// MarkRelisted: the handler has got every object of the relist.
	MarkRelisted = "relisted"
)

// Row returns the row named name that ran under GOMEMLIMIT memLimit (0 for
// none), and whether there is one.
func (r *Results) Row(name string, memLimit int64) (Row, bool) {
	for _, row := range r.Rows {
		if row.Name == name && row.MemLimit == memLimit {
			return row, true
		}
	}
	return Row{}, false
}

// MemLimits are the GOMEMLIMIT settings in bytes the run's rows ran under:
// 0 (none), and MemLimit if the run had one.
func (r *Results) MemLimits() []int64 {
	if r.MemLimit > 0 {
		return []int64{0, r.MemLimit}
	}
	return []int64{0}
}
