// Command bench measures leaninformer side by side with client-go's informer
// on a real API server: time to sync, peak and steady Go heap, the largest
// live heap a GC marked, peak RSS and GC CPU, for the initial sync, a forced
// relist and the list machinery without a store, each in a fresh child
// process, several runs each, with and without a GOMEMLIMIT near the store's
// size. `make bench` runs it; see the README's "Benchmark" section.
//
// It starts kube-apiserver and etcd through envtest (or uses --kubeconfig),
// populates --objects objects of --kind (RoleBindings, ConfigMaps or Pods),
// then re-executes itself with a hidden
// --child flag once per variant and run. Children reach the API server
// through a fault-injecting proxy (internal/faultproxy) in this process,
// which forces the relists (after changing objects, for the churn
// variants) and counts the requests, so that every row can be checked
// against the strategy it claims. Children use the client-side rate limit
// users have (--limits; client-go's default rest.Config by default).
//
// Besides the tables, results.json holds where the run came from (commit,
// dirty tree, every flag, machine, load averages), every run's figures and
// each informer child's heap over time; --publish writes a copy where it is
// committed (make bench: docs/benchmarks/), from which hack/docgen writes
// the README's and docs/benchmarks.md's generated blocks and the chart.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type options struct {
	kind       objectKind
	objects    int
	runs       int
	pageSize   int64 // negative: the informer's own page sizes
	limits     clientLimits
	gogc       int
	kubeconfig string
	variants   string
	out        string
	memLimit   bool
	touch      bool
	// compaction is the API server's --etcd-compaction-interval: the one
	// the bench starts gets it; with --kubeconfig it says the cluster's.
	// settle is the wait after populating.
	compaction, settle time.Duration
	listCost           bool
	workers            int
	interval           time.Duration
	relistDelay        time.Duration
	exe                string // the program children run as
	commandLine        string

	// timelineInterval, publish and flags: see results.go.
	timelineInterval time.Duration
	publish          string
	flags            map[string]string
}

// resolveWaits sets the compaction interval and the settle a run uses
// where the flags leave them to the bench, and records them among the flags
// the results show: what ran, not the zero that chose it.
func (o *options) resolveWaits() {
	switch {
	case o.compaction == 0 && o.kubeconfig == "":
		o.compaction = defaultCompaction
	case o.compaction == 0:
		o.compaction = apiServerCompaction
	}
	if !o.touch {
		o.settle = max(o.settle, unwrittenWait(o.compaction))
	}
	if o.flags != nil {
		o.flags["etcd-compaction-interval"], o.flags["settle"] = o.compaction.String(), o.settle.String()
	}
}

const (
	// defaultCompaction is the etcd compaction interval of the API server
	// the bench starts: short, so that the -unwritten variants wait less
	// than a minute for a resource unwritten since a compaction. The other
	// children list within seconds of their touch, well before a
	// compaction drops the watch cache's snapshot of it (checkState checks).
	defaultCompaction = 15 * time.Second
	// apiServerCompaction is kube-apiserver's default interval.
	apiServerCompaction = 5 * time.Minute
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		os.Exit(childMain(os.Args[2:]))
	}
	os.Exit(parentMain(os.Args[1:], os.Stdout, os.Stderr))
}

func parentMain(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: bench [flags]

Measures leaninformer beside client-go's informer, each variant in fresh child
processes, and writes results.md, results.json and charts to --out. Children
use the client-side rate limit users get (--limits; the table header says
which), and our informer sizes its LIST pages unless --page-size is given.

  bench --objects 10000                                    # client-go's default rest.Config: QPS 5, burst 10
  bench --objects 10000 --limits controller-runtime-v0.20  # QPS 20, burst 30
  bench --objects 10000 --limits none                      # unthrottled (controller-runtime's GetConfig since v0.21)
  bench --variants '^(client-go-list|ours-listwatch)(-churn(10|100))?$'
                                                           # ListWatch: sync, relist, relists after changes
  bench --memlimit                                         # every variant again under a GOMEMLIMIT (rows and goals labelled)
  bench --list-cost --limits none --runs 60 --page-size 1358
                                                           # no children: the API server's time for one LIST and for pages

Flags:
`)
		fs.PrintDefaults()
	}
	kind := fs.String("kind", roleBindings.resource, "kind of objects to populate and list: "+strings.Join(kindNames(), ", ")+
		" (pods get a node name and a running status, so use them with envtest, where no controller acts on them)")
	fs.IntVar(&o.objects, "objects", 10000, "objects to populate and list")
	fs.IntVar(&o.runs, "runs", 3, "child runs per variant; the median is reported")
	fs.Int64Var(&o.pageSize, "page-size", -1, "LIST page size of our paginated strategies (informer.WithPageSize) and the floor; "+
		"negative (the default): our informer sizes its pages itself and the floor lists by 500")
	limits := fs.String("limits", clientGoLimits.name, limitsUsage)
	fs.IntVar(&o.gogc, "gogc", 100, "GOGC of the children")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "use this cluster instead of starting envtest")
	fs.StringVar(&o.variants, "variants", "", "regular expression selecting variants by name (default all): "+strings.Join(variantNames(), ", "))
	fs.StringVar(&o.out, "out", "_output/bench", "folder for results.md, results.json, the charts and the children's logs")
	fs.BoolVar(&o.touch, "touch", true, "update one bench object before each child but the -unwritten variants', so that the API server serves continue pages from its watch cache, "+
		"as for a resource that changes; false measures every child on a resource nobody wrote since the last etcd compaction, whose continue pages come from etcd "+
		"(it waits as before the -unwritten variants after populating and after each churn)")
	fs.DurationVar(&o.compaction, "etcd-compaction-interval", 0, "the --etcd-compaction-interval of the API server the bench starts (0: 15s), or, with --kubeconfig, the cluster's (0: 5m, the API server's default); "+
		"the -unwritten variants run last, 2 intervals + 20s after the bench's last write")
	fs.DurationVar(&o.settle, "settle", 0, "wait this long after populating, and after each churn child's repopulation, before the next child")
	fs.BoolVar(&o.memLimit, "memlimit", false, "also run every variant under GOMEMLIMIT = 1.5 x the floor + the baseline (needs the floor variant); "+
		"off by default: users' processes run without a memory limit unless they set one, and every default row runs as theirs do")
	fs.BoolVar(&o.listCost, "list-cost", false, "run no children: time listing the populated objects in one LIST and in pages, --runs rounds, "+
		"with the children's client (--limits, protobuf), and write list-cost.md; --page-size adds pages of that size")
	fs.IntVar(&o.workers, "populate-workers", 32, "concurrent requests while populating")
	fs.DurationVar(&o.interval, "sample-interval", 2*time.Millisecond, "heap sampling interval of the children")
	fs.DurationVar(&o.relistDelay, "relist-delay", defaultRelistDelay, "how long after the sync relist rows force the relist "+
		"(at least the time the client's rate limiter takes to refill its burst: 2s at client-go's defaults)")
	fs.DurationVar(&o.timelineInterval, "timeline-interval", defaultTimelineInterval, "heap sampling interval of the informers' timelines (the memory-over-time chart)")
	fs.StringVar(&o.publish, "publish", "", "also write results.json, with the commit, the machine and every run, to this folder (make bench: docs/benchmarks)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.flags = flagValues(fs)
	if o.timelineInterval <= 0 {
		fmt.Fprintln(stderr, "bench: --timeline-interval must be positive")
		return 2
	}
	if o.objects < 1 || o.runs < 1 || o.workers < 1 {
		fmt.Fprintln(stderr, "bench: --objects, --runs and --populate-workers must be positive")
		return 2
	}
	if o.compaction < 0 || o.compaction > 0 && o.compaction < time.Second {
		fmt.Fprintln(stderr, "bench: --etcd-compaction-interval must be at least 1s")
		return 2
	}
	if o.settle < 0 {
		fmt.Fprintln(stderr, "bench: --settle must not be negative")
		return 2
	}
	o.resolveWaits()
	if o.listCost && o.memLimit {
		fmt.Fprintln(stderr, "bench: --list-cost runs no children, so --memlimit has nothing to limit")
		return 2
	}
	var err error
	if o.limits, err = parseLimits(*limits); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	k, err := findKind(*kind)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	o.kind = k
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "bench: find own executable for the children: %v\n", err)
		return 1
	}
	o.exe = exe
	o.commandLine = strings.Join(append([]string{os.Args[0]}, args...), " ")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "\nbench: %v\n", err)
		return 1
	}
	return 0
}
