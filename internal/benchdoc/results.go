package benchdoc

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/leaninformer/leaninformer/internal/benchresults"
)

// Load reads a results file with benchresults.ReadFile, which fails on a
// field the schema lacks, and checks that the documents can name its origin.
func Load(path string) (*benchresults.Results, error) {
	r, err := benchresults.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := check(r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// check rejects files the documents could not name the origin of.
func check(r *benchresults.Results) error {
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

// findGoal returns the run's goal named goal for our row ours, and whether
// the run computed it.
func findGoal(r *benchresults.Results, goal, ours string) (benchresults.Goal, bool) {
	for _, g := range r.Goals {
		if g.Goal == goal && g.Ours == ours {
			return g, true
		}
	}
	return benchresults.Goal{}, false
}

// title names the objects of the run.
func title(r *benchresults.Results) string {
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
func shortCommit(r *benchresults.Results) string {
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
func day(r *benchresults.Results) string {
	d, _, _ := strings.Cut(r.Date, "T")
	return d
}

// origin is the sentence the README's headline ends with.
func origin(r *benchresults.Results) string {
	return fmt.Sprintf("`%s` at %s, %s, on %s (%d cores, %s; load average %.1f at the start, %.1f at the end%s), API server %s",
		r.Command, shortCommit(r), day(r), r.Machine.CPU, r.Machine.Cores, r.Machine.Go,
		r.Provenance.LoadAverageStart[0], r.Provenance.LoadAverageEnd[0], sharedMachine(r), r.ServerVersion)
}

// sharedMachine says that other work shared the machine when the load
// before the run started was over half its cores: the load at the end
// includes the benchmark's own API server and children, so it proves
// nothing.
func sharedMachine(r *benchresults.Results) string {
	if r.Machine.Cores > 0 && r.Provenance.LoadAverageStart[0] > float64(r.Machine.Cores)/2 {
		return ": other work shared the machine"
	}
	return ""
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
