package benchdoc

import (
	"fmt"
	"strings"

	"github.com/leaninformer/leaninformer/internal/benchresults"
)

// MarksBlock is docs/benchmarks.md's block on what the relists held when
// their largest GC began.
const MarksBlock = "marks"

// reachable is what a relist row's peak mark says the heap held, above the
// baseline, when that mark began: everything a cycle marks was reachable at
// its start or allocated while it marked (the runtime marks new objects
// live), and gctrace gives the heap at both ends of the mark. Each of its
// three figures is truncated to a whole MiB, so the true value lies between
// lo and hi; mid is the middle of that interval.
type reachable struct{ lo, mid, hi float64 }

func reachableAtMark(p benchresults.Phase) (reachable, bool) {
	if p.PeakMark == nil {
		return reachable{}, false
	}
	x := float64(p.PeakMark.MarkedMiB-p.PeakMark.AllocatedMiB()) - mib(p.BaselineHeap)
	return reachable{lo: x - 1, mid: x + 0.5, hi: x + 2}, true
}

// clientGoRelist is the client-go row a relist row of ours is compared with
// by the goals: the same list (streamed or paginated) and the same churn.
func clientGoRelist(ours string) (string, bool) {
	name, ok := strings.CutSuffix(ours, " relist")
	if !ok {
		return "", false
	}
	for prefix, theirs := range map[string]string{"ours-stream": "client-go", "ours-listwatch": "client-go-list"} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || (rest != "" && !strings.HasPrefix(rest, "-")) {
			continue
		}
		if strings.HasPrefix(rest, "-churn") {
			theirs += rest
		}
		return theirs + " relist", true
	}
	return "", false
}

// Marks is docs/benchmarks.md's table of every relist row (without a
// memory limit) whose peak mark the run recorded: the goals' figure (the
// marked-live peak over the steady store of the same variant) beside what
// the heap held when that peak mark began, over the same store and against
// client-go's relist of the same list. It is a diagnostic beside the goals,
// not a goal.
func Marks(r *benchresults.Results) string {
	var b strings.Builder
	b.WriteString("| relist | peak live Δ | peak mark | reachable when it began Δ | steady store Δ | peak live / steady | reachable / steady | reachable / client-go's |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	rows := 0
	for _, row := range r.Rows {
		sync, ok := strings.CutSuffix(row.Name, " relist")
		if !ok || row.MemLimit != 0 {
			continue
		}
		at, ok := reachableAtMark(row.Median)
		if !ok {
			continue
		}
		// The goals' steady store is the sync row's; a churn row has none,
		// and its own (after the relist: the same collection) stands in.
		steady := row.Median.SteadyHeap
		if s, found := r.Row(sync, 0); found {
			steady = s.Median.SteadyHeap
		}
		if steady <= 0 {
			continue
		}
		store := mib(steady)
		vs := "–"
		if theirs, ok := clientGoRelist(row.Name); ok {
			if t, found := r.Row(theirs, 0); found {
				if tat, ok := reachableAtMark(t.Median); ok && tat.lo > 0 {
					vs = fmt.Sprintf("%.2f (%.2f-%.2f)", at.mid/tat.mid, at.lo/tat.hi, at.hi/tat.lo)
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %.1f | %s | %.1f (%.0f-%.0f) | %.1f | %.2f | %.2f (%.2f-%.2f) | %s |\n",
			row.Name, mib(row.Median.PeakLive), row.Median.PeakMarkCell(), at.mid, at.lo, at.hi, store,
			mib(row.Median.PeakLive)/store, at.mid/store, at.lo/store, at.hi/store, vs)
		rows++
	}
	if rows == 0 {
		return "This run recorded no peak marks (its results file predates them).\n"
	}
	fmt.Fprintf(&b, "\n%d %s; MiB above each process's baseline heap, except the peak mark (gctrace's \"marked / allocated while marking\", absolute), "+
		"which is that of the run with the median peak live heap of the row's %d; steady store: the same variant's after its initial sync "+
		"(for the churn rows, which have no sync row, their own after the relist). "+
		"gctrace truncates each figure to a whole MiB, so what was reachable lies in the range shown. `make bench` at %s, %s.\n",
		r.Objects, title(r), r.Runs, shortCommit(r), day(r))
	return b.String()
}
