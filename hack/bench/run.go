package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leaninformer/leaninformer/internal/benchkit"
	"github.com/leaninformer/leaninformer/internal/benchresults"
	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/internal/testenv"
)

// run is the parent: cluster, population, children, report.
func run(ctx context.Context, o options, stdout, stderr io.Writer) (err error) {
	selected, err := selectVariants(o.variants)
	if err != nil {
		return err
	}
	// The floor goes first in every run: GOMEMLIMIT is computed from it.
	if o.memLimit && !slices.ContainsFunc(selected, func(v variant) bool { return v.kind == floorKind }) {
		floor, _ := findVariant("floor")
		selected = append(selected, floor)
	}
	slices.SortStableFunc(selected, func(a, b variant) int { return cmpBool(a.kind != floorKind, b.kind != floorKind) })
	if err := os.MkdirAll(filepath.Join(o.out, "logs"), 0o755); err != nil {
		return err
	}

	prog := benchkit.NewProgress(stderr)
	started := time.Now()
	prov := startProvenance()
	if o.kubeconfig == "" {
		prog.Step("starting kube-apiserver and etcd (envtest)")
	}
	var flags []testenv.APIServerFlag
	if o.kubeconfig == "" {
		flags = append(flags, testenv.APIServerFlag{Name: "etcd-compaction-interval", Value: o.compaction.String()})
	}
	cl, err := testenv.StartCluster(o.kubeconfig, flags...)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := cl.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop envtest: %w", stopErr)
		}
	}()
	admin := rest.CopyConfig(cl.Config)
	admin.QPS, admin.Burst = 5000, 10000
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	serverVersion := "unknown"
	if v, err := cs.Discovery().ServerVersion(); err == nil {
		serverVersion = v.GitVersion
	}
	total, err := populate(ctx, cs, o.kind, o.objects, o.workers, prog)
	if err != nil {
		return err
	}
	prog.Finish(fmt.Sprintf("populate: the cluster holds %d bench %s, %d in all (%s)", o.objects, o.kind.title, total, since(started)))
	if err := settle(ctx, o.settle, prog); err != nil {
		return err
	}

	m := &measurer{o: o, admin: admin, cs: cs, total: total, prog: prog, dir: o.out, revision: int(time.Now().Unix())}
	if o.listCost {
		header := listCostHeader(o, prov, serverVersion, total)
		prog.Step("timing LISTs by shape")
		if err := listCost(ctx, o, cl.Config, m.touch, header, stdout); err != nil {
			return err
		}
		prog.Finish(fmt.Sprintf("list cost timed in %s", since(started)))
		return nil
	}
	m.jobs = len(selected) * o.runs
	if o.memLimit {
		m.jobs *= 2
	}
	phases, err := m.measureAll(ctx, selected, 0)
	if err != nil {
		return err
	}
	var limit int64
	if o.memLimit {
		if limit, err = memLimitFrom(phases); err != nil {
			return err
		}
		limited, err := m.measureAll(ctx, selected, limit)
		if err != nil {
			return err
		}
		phases = append(phases, limited...)
	}
	prog.Finish(fmt.Sprintf("measured %d children in %s; %d measured again: the API server re-initialized its watch cache meanwhile, or served an unwritten child from it", m.done, since(started), m.disturbed))

	rep := newReport(o, selected, phases, limit, total, serverVersion)
	rep.Provenance = prov.finish(o)
	if err := rep.write(o.out, stdout); err != nil {
		return err
	}
	return rep.publish(o.publish)
}

// measureAll runs every selected variant --runs times: first those of a
// resource written just before each child, then, once a compaction has
// passed since the last of the bench's writes, the unwritten ones (which
// write nothing).
func (m *measurer) measureAll(ctx context.Context, selected []variant, memLimit int64) ([]benchresults.Phase, error) {
	var written, unwritten []variant
	for _, v := range selected {
		if v.unwritten {
			unwritten = append(unwritten, v)
		} else {
			written = append(written, v)
		}
	}
	var phases []benchresults.Phase
	for i, vs := range [][]variant{written, unwritten} {
		if len(vs) == 0 {
			continue
		}
		if i == 1 {
			if err := settle(ctx, unwrittenWait(m.o.compaction), m.prog); err != nil {
				return nil, err
			}
		}
		for run := range m.o.runs {
			for _, v := range childOrder(vs, run) {
				ps, err := m.runChildUndisturbed(ctx, v, memLimit, run)
				if err != nil {
					return nil, err
				}
				phases = append(phases, ps...)
			}
		}
	}
	return phases, nil
}

// maxDisturbed is how many times in a row a child may be measured again
// (errDisturbed, errNotUnwritten) before the bench gives up.
const maxDisturbed = 3

// runChildUndisturbed runs the child again while the API server disturbed
// it, or did not read an unwritten child's pages from etcd (after another
// wait), up to maxDisturbed times.
func (m *measurer) runChildUndisturbed(ctx context.Context, v variant, memLimit int64, run int) ([]benchresults.Phase, error) {
	for attempt := 1; ; attempt++ {
		ps, err := m.runChild(ctx, v, memLimit, run)
		again := errors.Is(err, errDisturbed) || errors.Is(err, errNotUnwritten)
		if !again || attempt == maxDisturbed {
			return ps, err
		}
		m.disturbed++
		m.prog.Finish(fmt.Sprintf("%v; measuring it again", err))
		if errors.Is(err, errNotUnwritten) {
			if err := settle(ctx, unwrittenWait(m.o.compaction), m.prog); err != nil {
				return nil, err
			}
		}
	}
}

// compactorPollPeriod is how often the API server's watch cache reads the
// compacted revision and drops its snapshots below it (v1.37.2's
// k8s.io/apiserver/pkg/storage/cacher: 15 s).
const compactorPollPeriod = 15 * time.Second

// unwrittenWait is how long after its last write a resource is unwritten
// since a compaction, as the watch cache knows it: the API server compacts
// every interval to the revision it saw one interval before, so a compaction
// past the write comes within two intervals, and the watch cache notices it
// within its poll period (with a few seconds to spare).
func unwrittenWait(compaction time.Duration) time.Duration {
	return 2*compaction + compactorPollPeriod + 5*time.Second
}

// childOrder is the order in which run number run measures the selected
// variants: the floor first, then the others in table order in even runs
// and in reverse in odd ones. Of each pair the goals compare, client-go's
// row comes first in the table, so that each side goes first in every
// other run and follows the same other child in neither: the child before
// leaves the API server and the machine in a state of its own (a LIST of
// every object just served, garbage to collect, a repopulation after a
// churn), which a fixed order would hand to the same side of every ratio.
func childOrder(selected []variant, run int) []variant {
	order := slices.Clone(selected)
	floors := 0
	for floors < len(order) && order[floors].kind == floorKind {
		floors++
	}
	if run%2 == 1 {
		slices.Reverse(order[floors:])
	}
	return order
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func since(t time.Time) string { return time.Since(t).Round(time.Second).String() }

// memLimitFrom is 1.5 times the floor's steady heap plus the Go runtime's
// memory at the floor child's baseline (medians): near what a process
// holding only the objects needs.
func memLimitFrom(phases []benchresults.Phase) (int64, error) {
	var floor, base []float64
	for _, p := range phases {
		if p.Row == "floor" && p.MemLimit == 0 {
			floor = append(floor, float64(p.SteadyHeap))
			base = append(base, float64(p.BaselineRuntime))
		}
	}
	if len(floor) == 0 {
		return 0, errors.New("GOMEMLIMIT needs the floor variant's figures")
	}
	return int64(1.5*benchkit.Median(floor) + benchkit.Median(base)), nil
}

// measurer runs children one at a time.
type measurer struct {
	o          options
	admin      *rest.Config
	cs         kubernetes.Interface // admin
	total      int
	prog       *benchkit.Progress
	dir        string
	jobs, done int
	disturbed  int // children measured again (errDisturbed)
	revision   int // the revision annotation the last churn set
}

// runChild measures v in a fresh child process behind a fresh proxy, and
// checks through the proxy's counts that the child used v's strategy.
func (m *measurer) runChild(ctx context.Context, v variant, memLimit int64, run int) ([]benchresults.Phase, error) {
	label := fmt.Sprintf("%s run %d/%d", v.name, run+1, m.o.runs)
	if memLimit > 0 {
		label += fmt.Sprintf(" GOMEMLIMIT=%.0fMiB", mib(memLimit))
	}
	m.prog.Step(fmt.Sprintf("measure [%d/%d] %s", m.done+1, m.jobs, label))

	proxy, err := faultproxy.New(m.admin)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	kubeconfig := filepath.Join(m.dir, "kubeconfig-proxy")
	if err := writeKubeconfig(kubeconfig, proxy.URL()); err != nil {
		return nil, err
	}
	logPath := filepath.Join(m.dir, "logs", strings.NewReplacer(" ", "_", "/", "_", "=", "").Replace(label)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()

	if m.o.touch && !v.unwritten {
		if err := m.touch(ctx); err != nil {
			return nil, err
		}
	}
	before, err := m.serverCounts(ctx)
	if err != nil {
		return nil, err
	}
	ch := planChurn(m.o.objects, v.churn)
	timeout := max(10*time.Minute, time.Duration(m.total)*10*time.Millisecond)
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, m.o.exe, childFlag,
		"--variant", v.name,
		"--kind", m.o.kind.resource,
		"--kubeconfig", kubeconfig,
		"--bench-objects", strconv.Itoa(m.o.objects),
		"--total", strconv.Itoa(m.total),
		"--page-size", strconv.FormatInt(m.o.pageSize, 10),
		"--limits", m.o.limits.name,
		"--sample-interval", m.o.interval.String(),
		"--timeout", timeout.String(),
		"--relist-delay", m.o.relistDelay.String(),
		"--churn-deleted", strconv.Itoa(len(ch.deleted)),
		"--churn-created", strconv.Itoa(len(ch.created)),
		"--timeline-interval", m.o.timelineInterval.String(),
	)
	cmd.Env = withGCTrace(childEnv(os.Environ(), m.o.gogc, memLimit, v.env()))
	cmd.Stderr = logFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start child %s: %w", label, err)
	}
	relist := func() error { return forceRelist(proxy, m.o.kind.resource) }
	if v.churn > 0 {
		m.revision++
		relist = func() error {
			return churnThenRelist(ctx, proxy, m.o.kind.resource, func(ctx context.Context) error {
				return ch.apply(ctx, m.cs, m.o.kind, m.revision, m.o.workers, m.prog)
			})
		}
	}
	phases, protoErr := talk(stdout, stdin, relist)
	if protoErr != nil {
		cancel() // the child may be waiting for us
	}
	waitErr := cmd.Wait()
	after, countsErr := m.serverCounts(ctx)
	if v.churn > 0 {
		// Put the deleted objects back and the new ones away for the next
		// child; the modified ones keep their size.
		total, err := populate(ctx, m.cs, m.o.kind, m.o.objects, m.o.workers, m.prog)
		if err != nil {
			return nil, fmt.Errorf("after child %s: %w", label, err)
		}
		if total != m.total {
			return nil, fmt.Errorf("after child %s: the cluster holds %d %s, %d before", label, total, m.o.kind.title, m.total)
		}
		if err := settle(ctx, m.o.settle, m.prog); err != nil {
			return nil, err
		}
	}
	switch {
	case waitErr != nil || protoErr != nil:
		return nil, fmt.Errorf("child %s failed: %w; the end of %s:\n%s", label, errors.Join(waitErr, protoErr), logPath, tail(logPath, 15))
	case phases == nil:
		return nil, fmt.Errorf("child %s printed no result; see %s", label, logPath)
	case countsErr != nil:
		return nil, countsErr
	}
	if err := m.checkState(v, after.sub(before)); err != nil {
		return nil, fmt.Errorf("child %s: %w", label, err)
	}

	restarts := 1
	st := proxy.Stats()
	if v.relist {
		restarts = 2
		if st.Faults.Gone != 1 || st.Faults.WatchesCut < 1 {
			return nil, fmt.Errorf("child %s: the proxy cut %d watches and refused %d with 410, want >= 1 and 1", label, st.Faults.WatchesCut, st.Faults.Gone)
		}
	}
	if err := v.checkRequests(st.Requests, restarts, m.total, m.o.pageSize); err != nil {
		return nil, fmt.Errorf("child %s, as the proxy saw it: %w", label, err)
	}
	for i := range phases {
		phases[i].MemLimit = memLimit
	}
	if log, err := os.ReadFile(logPath); err == nil {
		attachGCPeaks(phases, log)
	}
	m.done++
	return phases, nil
}

// settle waits d (--settle) after the bench's writes, so that with
// --touch=false and a short --etcd-compaction-interval a compaction has
// passed since the last write before the next child lists.
func settle(ctx context.Context, d time.Duration, prog *benchkit.Progress) error {
	if d <= 0 {
		return nil
	}
	prog.Step(fmt.Sprintf("settle: waiting %s after the last write", d))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// touch gives bench object 0 a new revision: the API server's watch cache
// then holds a snapshot at its newest resourceVersion, and serves the
// continue pages of a LIST from it. Its snapshots go at every etcd
// compaction (every 5 minutes), after which the continue pages of a
// resource nobody wrote since are read from etcd, about 2.5 times slower per
// object (100,000 RoleBindings, API server v1.37.2).
func (m *measurer) touch(ctx context.Context) error {
	m.revision++
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, revisionAnnotation, revision(m.revision))
	if err := m.o.kind.patch(ctx, m.cs, m.o.kind.namespace(0), m.o.kind.name(0), patch); err != nil {
		return fmt.Errorf("touch bench object 0: %w", err)
	}
	return nil
}

// talk runs the parent's side of the protocol: it forces a relist when the
// child asks and returns the child's result.
func talk(stdout io.Reader, stdin io.WriteCloser, relist func() error) ([]benchresults.Phase, error) {
	defer stdin.Close()
	var phases []benchresults.Phase
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == msgRelist:
			if err := relist(); err != nil {
				return nil, err
			}
			if _, err := fmt.Fprintln(stdin, msgGo); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, msgResult):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, msgResult)), &phases); err != nil {
				return nil, fmt.Errorf("child result: %w", err)
			}
		default:
			return nil, fmt.Errorf("unexpected line from the child: %q", line)
		}
	}
	return phases, sc.Err()
}

// forceRelist makes the child relist: the next watch of resource gets 410
// Gone, and the open one is cut so that the client opens that next one.
func forceRelist(p *faultproxy.Proxy, resource string) error {
	watches := faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: resource}
	if _, err := p.Inject(faultproxy.Rule{Match: watches, Fault: faultproxy.Fault{Kind: faultproxy.Gone}, Times: 1}); err != nil {
		return err
	}
	if n := p.CutWatches(watches); n == 0 {
		return fmt.Errorf("force relist: the child has no %s watch open", resource)
	}
	return nil
}

// childEnv is the parent's environment as a child gets it: GOGC, GOMEMLIMIT
// and client-go's switches replaced by the child's (benchkit.ChildEnv).
func childEnv(environ []string, gogc int, memLimit int64, extra []string) []string {
	return benchkit.ChildEnv(environ, gogc, memLimit, extra...)
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
