package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leaninformer/leaninformer/internal/benchdoc"
	"github.com/leaninformer/leaninformer/internal/benchkit"
	"github.com/leaninformer/leaninformer/internal/benchobjects"
	"github.com/leaninformer/leaninformer/internal/benchresults"
	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/internal/testenv"
)

// TestMain lets the test binary serve as the smoke test's child process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		os.Exit(childMain(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

func TestKindsIndexInvertsNames(t *testing.T) {
	build := map[string]func(int) metav1.Object{
		"rolebindings": func(i int) metav1.Object { return roleBinding(i) },
		"configmaps":   func(i int) metav1.Object { return configMap(i) },
		"pods":         func(i int) metav1.Object { return pod(i) },
	}
	for _, k := range kinds {
		if k2, err := findKind(k.resource); err != nil || k2.title != k.title {
			t.Errorf("findKind(%q) = %v, %v", k.resource, k2.title, err)
		}
		for _, i := range []int{0, 9, 10, 12345, 99999} {
			o := build[k.resource](i)
			if got := k.index(o.GetNamespace(), o.GetName()); got != i {
				t.Errorf("%s: index(%s/%s) = %d, want %d", k.resource, o.GetNamespace(), o.GetName(), got, i)
			}
			if !isBench(o) {
				t.Errorf("%s %d lacks the bench label", k.resource, i)
			}
			if got := o.GetAnnotations()[revisionAnnotation]; got != revision(0) {
				t.Errorf("%s %d has %s=%q, want the churn's revision 0 (%q)", k.resource, i, revisionAnnotation, got, revision(0))
			}
		}
		other := 1 // an object in another namespace than object 0's
		for k.namespace(other) == k.namespace(0) {
			other++
		}
		name0 := k.name(0)
		for _, nn := range [][2]string{
			{k.namespace(other), name0}, {"default", name0}, {k.namespace(0), "x"},
			{k.namespace(0), name0[:len(name0)-1] + "x"}, {k.namespace(0), name0 + "0"},
		} {
			if got := k.index(nn[0], nn[1]); got != -1 {
				t.Errorf("%s: index(%s/%s) = %d, want -1", k.resource, nn[0], nn[1], got)
			}
		}
	}
	for _, i := range []int{0, 1, 2} {
		if n := len(roleBinding(i).Subjects); n < 3 || n > 5 {
			t.Errorf("RoleBinding %d has %d subjects, want 3 to 5", i, n)
		}
	}
	if _, err := findKind("secrets"); err == nil {
		t.Error("findKind(secrets) succeeded")
	}
}

func TestCheckRequests(t *testing.T) {
	byName := func(name string) variant {
		t.Helper()
		v, err := findVariant(name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	floor := byName("floor")
	stream := byName("client-go")
	list := byName("client-go-list")
	for _, tc := range []struct {
		v        variant
		c        faultproxy.RequestCounts
		restarts int
		pageSize int64
		ok       bool
	}{
		{stream, faultproxy.RequestCounts{Watches: 1, StreamingWatches: 1}, 1, 500, true},
		{stream, faultproxy.RequestCounts{Watches: 1, StreamingWatches: 1, Lists: 1}, 1, 500, false},
		{stream, faultproxy.RequestCounts{Watches: 3, StreamingWatches: 1}, 2, 500, false},
		{list, faultproxy.RequestCounts{Lists: 1, Watches: 1}, 1, 500, true},
		{list, faultproxy.RequestCounts{Lists: 1, Watches: 1, StreamingWatches: 1}, 1, 500, false},
		// 1000 objects in pages of 300: 4 pages, 3 continues per list.
		{floor, faultproxy.RequestCounts{Lists: 4, ListsWithLimit: 4, ListsWithContinue: 3}, 1, 300, true},
		{floor, faultproxy.RequestCounts{Lists: 4, ListsWithLimit: 3, ListsWithContinue: 3}, 1, 300, false},
		{floor, faultproxy.RequestCounts{Lists: 3, ListsWithLimit: 3, ListsWithContinue: 2}, 1, 300, false},
		{floor, faultproxy.RequestCounts{Lists: 8, ListsWithLimit: 8, ListsWithContinue: 6}, 2, 300, true},
		{floor, faultproxy.RequestCounts{Lists: 1}, 1, 0, true},
		// The informer's own page sizes: LISTs with limits, how many is
		// its business; the floor lists by 500.
		{byName("ours-listwatch"), faultproxy.RequestCounts{Lists: 3, ListsWithLimit: 3, ListsWithContinue: 1}, 2, -1, true},
		{byName("ours-listwatch"), faultproxy.RequestCounts{Lists: 1, ListsWithLimit: 1}, 2, -1, false},
		{byName("ours-listwatch"), faultproxy.RequestCounts{Lists: 2, ListsWithLimit: 1}, 1, -1, false},
		{floor, faultproxy.RequestCounts{Lists: 2, ListsWithLimit: 2, ListsWithContinue: 1}, 1, -1, true},
		{floor, faultproxy.RequestCounts{Lists: 1, ListsWithLimit: 1}, 1, -1, false},
	} {
		err := tc.v.checkRequests(tc.c, tc.restarts, 1000, tc.pageSize)
		if (err == nil) != tc.ok {
			t.Errorf("%s with %+v, %d restarts, page %d: error %v, want ok=%v", tc.v.name, tc.c, tc.restarts, tc.pageSize, err, tc.ok)
		}
	}
}

func TestPlanChurn(t *testing.T) {
	if c := planChurn(1000, 0); c.modified != nil || c.deleted != nil || c.created != nil {
		t.Errorf("planChurn(1000, 0) = %+v, want nothing", c)
	}
	c := planChurn(1000, 10)
	if len(c.modified) != 100 || c.modified[99] != 99 || !slices.Equal(c.deleted, []int{990, 991, 992, 993, 994, 995, 996, 997, 998, 999}) || c.created[0] != 1000 || len(c.created) != 10 {
		t.Errorf("planChurn(1000, 10) = %+v, want 100 modified from 0, 990-999 deleted, 10 created from 1000", c)
	}
	c = planChurn(1000, 100)
	if len(c.modified) != 990 || slices.Contains(c.modified, c.deleted[0]) {
		t.Errorf("planChurn(1000, 100) modifies %d objects, want the 990 it does not delete", len(c.modified))
	}
	if c := planChurn(30, 10); len(c.modified) != 3 || len(c.deleted) != 1 || c.created[0] != 30 {
		t.Errorf("planChurn(30, 10) = %+v, want 3 modified, 1 deleted, 1 created", c)
	}
}

func TestParseLimits(t *testing.T) {
	for in, want := range map[string]string{
		"client-go":                "client rate limit QPS 5, burst 10 (--limits client-go)",
		"controller-runtime-v0.20": "client rate limit QPS 20, burst 30 (--limits controller-runtime-v0.20)",
		"none":                     "no client-side rate limit (--limits none)",
		"50/100":                   "client rate limit QPS 50, burst 100 (--limits 50/100)",
	} {
		l, err := parseLimits(in)
		if err != nil || l.String() != want {
			t.Errorf("parseLimits(%q) = %q, %v; want %q", in, l, err, want)
		}
	}
	if l, _ := parseLimits("client-go"); l.refill() != 2*time.Second {
		t.Errorf("client-go's limiter refills in %v, want 2s", l.refill())
	}
	for _, bad := range []string{"", "5", "0/10", "5/0", "fast", "-1/10"} {
		if _, err := parseLimits(bad); err == nil {
			t.Errorf("parseLimits(%q) succeeded", bad)
		}
	}
}

func TestMemLimitFromTheFloorsMedians(t *testing.T) {
	phases := []benchresults.Phase{
		{Row: "floor", SteadyHeap: 10 << 20, BaselineRuntime: 6 << 20},
		{Row: "floor", SteadyHeap: 30 << 20, BaselineRuntime: 8 << 20},
		{Row: "floor", SteadyHeap: 20 << 20, BaselineRuntime: 7 << 20},
		{Row: "floor", SteadyHeap: 99 << 20, MemLimit: 1}, // a limited run: ignored
		{Row: "client-go", SteadyHeap: 50 << 20},
	}
	if got, err := memLimitFrom(phases); err != nil || got != 37<<20 {
		t.Errorf("memLimitFrom = %d MiB, %v; want 1.5*20+7 = 37 MiB", got>>20, err)
	}
	if _, err := memLimitFrom(phases[4:]); err == nil {
		t.Error("memLimitFrom without a floor succeeded")
	}
}

func TestGoals(t *testing.T) {
	r := &Report{Results: benchresults.Results{Rows: []benchresults.Row{
		{Name: "ours-listwatch", Median: benchresults.Phase{PeakHeap: 30, PeakLive: 26, SteadyHeap: 25, SyncSeconds: 1}},
		{Name: "ours-listwatch relist", Median: benchresults.Phase{PeakHeap: 40, PeakLive: 28}},
		{Name: "client-go-list", Median: benchresults.Phase{PeakHeap: 50, SyncSeconds: 2}},
		{Name: "client-go-list relist", Median: benchresults.Phase{PeakHeap: 80, PeakLive: 56}},
	}}}
	got := map[string]benchresults.Goal{}
	for _, g := range goals(r) {
		got[g.Goal] = g
	}
	for goal, want := range map[string]float64{
		"relist: marked-live peak vs client-go":              0.5,
		"relist: marked-live peak vs our steady store":       28.0 / 25,
		"relist: sampled peak vs client-go":                  0.5,
		"initial sync: sampled peak vs client-go LIST":       0.6,
		"initial sync: marked-live peak vs our steady store": 26.0 / 25,
		"time to sync vs client-go":                          0.5,
	} {
		if g, ok := got[goal]; !ok || g.Ratio != want || g.Met != (want <= g.Target) {
			t.Errorf("goal %q = %+v (present %v), want ratio %v", goal, g, ok, want)
		}
	}
	if _, ok := got["initial sync: sampled peak vs client-go streaming"]; ok {
		t.Error("a goal was computed for a row the run does not have")
	}

	// The unwritten pair has the time goals of the others, and no other.
	r.Rows = append(r.Rows,
		benchresults.Row{Name: "ours-listwatch-unwritten", Median: benchresults.Phase{PeakHeap: 30, SteadyHeap: 25, SyncSeconds: 3}},
		benchresults.Row{Name: "ours-listwatch-unwritten relist", Median: benchresults.Phase{PeakLive: 28, SyncSeconds: 1}},
		benchresults.Row{Name: "client-go-list-unwritten", Median: benchresults.Phase{PeakHeap: 50, SyncSeconds: 2}},
		benchresults.Row{Name: "client-go-list-unwritten relist", Median: benchresults.Phase{PeakLive: 56, SyncSeconds: 2}},
	)
	unwritten := map[string]float64{}
	for _, g := range goals(r) {
		if strings.HasSuffix(g.Ours, "-unwritten") || strings.HasSuffix(g.Ours, "-unwritten relist") {
			unwritten[g.Goal] = g.Ratio
		}
	}
	if want := map[string]float64{"time to sync vs client-go": 1.5, "relist time vs client-go": 0.5}; !maps.Equal(unwritten, want) {
		t.Errorf("goals of the unwritten pair: %v, want %v", unwritten, want)
	}
}

// The count of objects read from etcd sums the etcd series of the
// resource only (the metric has a series per storage, and the kinds'
// names overlap: clusterrolebindings).
func TestSumSeries(t *testing.T) {
	exposition := []byte(`# HELP apiserver_storage_list_returned_objects_total [ALPHA] Number of objects returned for a LIST request from storage
# TYPE apiserver_storage_list_returned_objects_total counter
apiserver_storage_list_returned_objects_total{group="rbac.authorization.k8s.io",resource="clusterrolebindings",storage="etcd"} 7
apiserver_storage_list_returned_objects_total{group="rbac.authorization.k8s.io",resource="rolebindings",storage="etcd"} 9500
apiserver_storage_list_returned_objects_total{group="rbac.authorization.k8s.io",resource="rolebindings",storage="watchcache"} 20000
apiserver_storage_list_total{group="rbac.authorization.k8s.io",index="",resource="rolebindings",storage="etcd"} 7
`)
	etcd := func(resource string) (float64, error) {
		return sumSeries(exposition, etcdListedMetric, `resource="`+resource+`"`, `storage="etcd"`)
	}
	if n, err := etcd("rolebindings"); n != 9500 || err != nil {
		t.Errorf("objects read from etcd = %v, %v; want 9500", n, err)
	}
	if n, err := etcd("pods"); n != 0 || err != nil {
		t.Errorf("objects of a resource never read from etcd = %v, %v; want 0", n, err)
	}
	if _, err := sumSeries([]byte(`apiserver_storage_list_returned_objects_total{resource="pods",storage="etcd"} many`), etcdListedMetric); err == nil {
		t.Error("an unparsable value was counted")
	}
}

// A child's row must measure the state it is labelled with: a paginated
// child of an unwritten resource reads its continue pages from etcd, and no
// child of a written one reads from etcd.
func TestCheckState(t *testing.T) {
	unwritten, _ := findVariant("ours-listwatch-unwritten")
	theirs, _ := findVariant("client-go-list-unwritten")
	written, _ := findVariant("ours-listwatch")
	churned, _ := findVariant("ours-listwatch-churn100")
	m := &measurer{o: options{touch: true, pageSize: -1}, total: 10007}
	for _, tc := range []struct {
		v        variant
		fromEtcd float64
		ok       bool
	}{
		{unwritten, 9507, true},
		{unwritten, 0, false},
		{theirs, 0, true}, // resourceVersion "0": the watch cache answers it whole
		{written, 0, true},
		{written, 1500, false}, // errDisturbed: measured again
		{churned, 10007, true}, // its relist may come from etcd while the watch cache catches up
	} {
		if err := m.checkState(tc.v, serverCounts{etcdListed: tc.fromEtcd}); (err == nil) != tc.ok {
			t.Errorf("%s with %v objects from etcd: %v, want ok %v", tc.v.name, tc.fromEtcd, err, tc.ok)
		}
	}
	small := &measurer{o: options{touch: true, pageSize: -1}, total: 400}
	if err := small.checkState(unwritten, serverCounts{}); err != nil {
		t.Errorf("a list of one page reads no continue page, yet: %v", err)
	}
	all := &measurer{o: options{touch: false, pageSize: -1}, total: 10007}
	if err := all.checkState(written, serverCounts{}); !errors.Is(err, errNotUnwritten) {
		t.Errorf("with --touch=false, a paginated child that read nothing from etcd: %v, want errNotUnwritten", err)
	}
	// The API server's own relist (its watch cache re-initializing) reads
	// from etcd and ends every watch: the child is measured again.
	if err := m.checkState(written, serverCounts{etcdListed: 10007, cacheInits: 1}); !errors.Is(err, errDisturbed) {
		t.Errorf("a child during which the watch cache re-initialized: %v, want errDisturbed", err)
	}
	// So does its periodic check of the watch cache against etcd, even
	// during an unwritten child, whose own reads it would hide.
	if err := m.checkState(unwritten, serverCounts{etcdListed: 19514, consistencyChecks: 1}); !errors.Is(err, errDisturbed) || !strings.Contains(err.Error(), "checked its watch cache") {
		t.Errorf("a child during which the API server checked its watch cache against etcd: %v, want errDisturbed naming the check", err)
	}
}

// Of each pair the goals compare, neither is always measured first: the
// child before a row's leaves the API server and the machine in a state of
// its own (a LIST of every object just served, garbage to collect, a
// repopulation after a churn), and a fixed order would hand that to the
// same side of every ratio. The floor stays first.
func TestChildOrderAlternatesThePairs(t *testing.T) {
	all, err := selectVariants("")
	if err != nil {
		t.Fatal(err)
	}
	pairs := [][2]string{{"client-go", "ours-stream"}, {"client-go-list", "ours-listwatch"},
		{"client-go-reflector", "ours-pipeline-stream"}, {"client-go-reflector-list", "ours-pipeline-listwatch"},
		{"client-go-strip", "ours-stream-strip"}, {"client-go-churn100", "ours-stream-churn100"}}
	for _, p := range pairs {
		first := map[string]int{}
		for run := range 4 {
			order := childOrder(all, run)
			if order[0].name != "floor" || len(order) != len(all) {
				t.Fatalf("run %d measures %d variants, %s first; want all %d, the floor first", run, len(order), order[0].name, len(all))
			}
			i := slices.IndexFunc(order, func(v variant) bool { return v.name == p[0] })
			j := slices.IndexFunc(order, func(v variant) bool { return v.name == p[1] })
			if i < j {
				first[p[0]]++
			} else {
				first[p[1]]++
			}
		}
		if first[p[0]] != 2 || first[p[1]] != 2 {
			t.Errorf("over 4 runs %s went first %d times, %s %d times; want 2 each", p[0], first[p[0]], p[1], first[p[1]])
		}
	}
}

func TestFlagValuesHoldDefaultsToo(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Int("runs", 3, "")
	fs.String("variants", "", "")
	if err := fs.Parse([]string{"--variants", "a|b"}); err != nil {
		t.Fatal(err)
	}
	if got := flagValues(fs); len(got) != 2 || got["runs"] != "3" || got["variants"] != "a|b" {
		t.Errorf("flagValues = %v", got)
	}
}

// The compaction interval defaults to 15 s on the API server the bench
// starts and to the API server's own 5 minutes for a --kubeconfig cluster;
// --touch=false waits as the unwritten variants do; the results show the
// values that ran.
func TestResolveWaits(t *testing.T) {
	for _, tc := range []struct {
		o                  options
		compaction, settle time.Duration
	}{
		{options{touch: true}, 15 * time.Second, 0},
		{options{touch: true, kubeconfig: "kc"}, 5 * time.Minute, 0},
		{options{touch: true, compaction: time.Minute, settle: time.Second}, time.Minute, time.Second},
		{options{touch: false}, 15 * time.Second, 50 * time.Second},
		{options{touch: false, settle: time.Hour}, 15 * time.Second, time.Hour},
	} {
		o := tc.o
		o.flags = map[string]string{"etcd-compaction-interval": "0s", "settle": "0s"}
		o.resolveWaits()
		if o.compaction != tc.compaction || o.settle != tc.settle ||
			o.flags["etcd-compaction-interval"] != tc.compaction.String() || o.flags["settle"] != tc.settle.String() {
			t.Errorf("%+v: compaction %v, settle %v, recorded %v; want %v and %v", tc.o, o.compaction, o.settle, o.flags, tc.compaction, tc.settle)
		}
	}
}

// A child runs with client-go's defaults whatever the parent's environment
// says: KUBE_CACHE_MUTATION_DETECTOR (which Kubernetes' test scripts
// export) makes client-go's informer and our plain store hold a copy of
// every object, but not our encoded store.
func TestChildEnv(t *testing.T) {
	env := childEnv([]string{"PATH=/bin", "GOGC=off", "GOMEMLIMIT=1", "KUBE_FEATURE_WatchListClient=true",
		"KUBE_CACHE_MUTATION_DETECTOR=true", "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=true", "KUBEBUILDER_ASSETS=/k8s"},
		50, 1234, []string{"KUBE_FEATURE_WatchListClient=false"})
	want := []string{"PATH=/bin", "KUBEBUILDER_ASSETS=/k8s", "GOGC=50", "GOMEMLIMIT=1234", "KUBE_FEATURE_WatchListClient=false"}
	if !slices.Equal(env, want) {
		t.Errorf("childEnv = %v, want %v", env, want)
	}
}

func TestChartIsValidSVG(t *testing.T) {
	rows := []benchresults.Row{{Name: "a<b", Median: benchresults.Phase{PeakHeap: 3 << 20, PeakLive: 2 << 20, SteadyHeap: 1 << 20}}, {Name: "c"}}
	svg := chartSVG("t & t", rows)
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Fatalf("chart is not well-formed XML: %v", err)
	}
	if n := bytes.Count(svg, []byte("<title>")); n != len(rows)*len(series) {
		t.Errorf("chart has %d bars, want %d", n, len(rows)*len(series))
	}
}

// smokeVariants are what TestSmoke runs: every variant, so that none of
// them breaks unnoticed.
const smokeVariants = ""

// TestSmoke runs the whole benchmark on a few objects against envtest, as
// --kubeconfig: the children (this test binary, see TestMain) must sync,
// relist and pass their own request checks and the proxy's. Before that it
// checks that populating is idempotent and shrinks an earlier, larger set.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	if _, err := testenv.AssetsDir(); err != nil {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			t.Skipf("no envtest binaries (make test builds them): %v", err)
		}
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// As make bench starts it, so that the -unwritten variants' wait ends
	// with a compaction behind it.
	cl, err := testenv.StartCluster("", testenv.APIServerFlag{Name: "etcd-compaction-interval", Value: defaultCompaction.String()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	}()
	cs, err := kubernetes.NewForConfig(cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	for _, step := range []struct {
		n    int
		said string
	}{
		{40, "0 of 40 bench RoleBindings exist, creating 40, deleting 0"},
		{40, "40 of 40 bench RoleBindings exist, creating 0, deleting 0"},
		{30, "30 of 30 bench RoleBindings exist, creating 0, deleting 10"},
	} {
		log.Reset()
		total, err := populate(ctx, cs, roleBindings, step.n, 8, benchkit.NewProgress(&log))
		if err != nil {
			t.Fatalf("populate(%d): %v", step.n, err)
		}
		if total <= step.n || !strings.Contains(log.String(), step.said) {
			t.Errorf("populate(%d) = %d in all, said %q; want more than %d (system ones too) and %q", step.n, total, log.String(), step.n, step.said)
		}
	}

	o := options{
		kind: roleBindings, objects: 30, runs: 1, pageSize: 7, limits: clientGoLimits, gogc: 100,
		kubeconfig: writeKubeconfigFile(t, cl),
		variants:   smokeVariants,
		out:        t.TempDir(), publish: t.TempDir(), memLimit: false, touch: true, workers: 8, interval: 2 * time.Millisecond,
		compaction: defaultCompaction,
		exe:        os.Args[0], commandLine: "smoke",
		relistDelay:      0, // the short-watch path of client-go's relist, to save time
		timelineInterval: 5 * time.Millisecond,
	}
	var stdout, stderr bytes.Buffer
	if err := run(ctx, o, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "30 of 30 bench RoleBindings exist, creating 0") {
		t.Errorf("run repopulated an already populated cluster:\n%s", stderr.String())
	}

	// The file must decode with the schema's unknown fields disallowed.
	b, err := os.ReadFile(filepath.Join(o.out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := benchresults.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	selected, err := selectVariants(smokeVariants)
	if err != nil {
		t.Fatal(err)
	}
	var wantRows []string
	for _, v := range selected {
		wantRows = append(wantRows, v.rows()...)
	}
	if len(selected) != len(variants()) {
		t.Fatalf("the smoke test runs %d of the %d variants", len(selected), len(variants()))
	}
	checkRows(t, rep, wantRows, []int64{0}, o.objects)
	if row, _ := rep.Row("floor", 0); row.Median.Requests.ListsWithContinue < 4 {
		t.Errorf("the floor sent %+v, want >= 4 continues for 30+ objects in pages of 7", row.Median.Requests)
	}
	// The busy client keeps the limiter empty: each of the relist's 5
	// pages waits its turn behind it (at least a token's 200 ms at QPS 5;
	// after the usual relist delay, the pages would fit in the burst).
	if row, _ := rep.Row(relistRow("ours-listwatch-busy"), 0); row.Median.SyncSeconds < 4*0.2 {
		t.Errorf("ours-listwatch-busy relisted 30 objects in pages of 7 in %.3f s, want at least 0.8 s behind a busy client at QPS 5", row.Median.SyncSeconds)
	}
	if row, _ := rep.Row("client-go-list", 0); row.Median.SteadyHeap <= 0 {
		t.Errorf("client-go-list keeps %d bytes above baseline, want a store", row.Median.SteadyHeap)
	}
	if rep.Provenance.Commit == "" || rep.Provenance.LoadAverageEnd == [3]float64{} {
		t.Errorf("results.json lacks its provenance: %+v", rep.Provenance)
	}
	for _, p := range rep.AllRuns {
		// Every window ends with a forced GC, which gctrace reports.
		if p.PeakMark == nil || p.PeakMark.MarkedMiB <= 0 || p.PeakMark.AllocatedMiB() < 0 {
			t.Errorf("row %q: PeakMark = %+v, want the gctrace of its largest mark", p.Row, p.PeakMark)
		}
	}
	timelines := 0
	for _, p := range rep.AllRuns {
		v, err := findVariant(p.Row)
		switch {
		case err != nil || v.kind != informerKind: // relist rows and rows without an informer
			if p.Timeline != nil {
				t.Errorf("row %q has a timeline", p.Row)
			}
		case p.Timeline == nil || len(p.Timeline.Ms) < 2 || len(p.Timeline.Marks) == 0:
			t.Errorf("informer row %q has no timeline: %+v", p.Row, p.Timeline)
		default:
			timelines++
			if v.relist && (len(p.Timeline.Marks) != 3 || len(p.Timeline.Resumed) != 1) {
				t.Errorf("relist row %q's timeline marks %+v and resumes at %v, want synced, relist forced and relisted, and one pause", p.Row, p.Timeline.Marks, p.Timeline.Resumed)
			}
		}
	}
	if timelines == 0 {
		t.Error("no informer row has a timeline")
	}
	// The published copy is what hack/docgen reads: it must take it.
	published := filepath.Join(o.publish, "results.json")
	if b2, err := os.ReadFile(published); err != nil || !bytes.Equal(b, b2) {
		t.Errorf("published results (%v) differ from results.json", err)
	}
	docs, err := benchdoc.Load(published)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := benchdoc.MemoryChart(docs); err != nil {
		t.Errorf("docgen's chart from the smoke results: %v", err)
	}
	if h := benchdoc.Headline(docs); !strings.Contains(h, "`ours-stream relist` vs `client-go relist`") {
		t.Errorf("docgen's headline from the smoke results lacks the relist line:\n%s", h)
	}
	md, err := os.ReadFile(filepath.Join(o.out, "results.md"))
	if err != nil || string(md) != stdout.String() || !strings.Contains(string(md), "| client-go-list relist |") {
		t.Errorf("results.md (err %v) differs from stdout or lacks the relist row:\n%s", err, md)
	}
	checkSVG(t, filepath.Join(o.out, "chart.svg"))

	// --list-cost lists the same objects in every shape, in as many
	// requests as the shape's limits make.
	lc := o
	lc.listCost, lc.runs, lc.out = true, 2, t.TempDir()
	stdout.Reset()
	stderr.Reset()
	if err := run(ctx, lc, &stdout, &stderr); err != nil {
		t.Fatalf("run --list-cost: %v\nstderr:\n%s", err, stderr.String())
	}
	checkListCost(t, stdout.String(), listShapes(lc.pageSize))
	if md, err := os.ReadFile(filepath.Join(lc.out, "list-cost.md")); err != nil || string(md) != stdout.String() {
		t.Errorf("list-cost.md (err %v) differs from stdout", err)
	}

	// The other kinds: the API server takes their objects as built (Pods
	// with the status a kubelet sets), and a child lists them; the
	// ConfigMaps' run also runs under the GOMEMLIMIT computed from the floor.
	for _, k := range []objectKind{configMaps, pods} {
		if _, err := populate(ctx, cs, k, 12, 8, benchkit.NewProgress(&log)); err != nil {
			t.Fatalf("populate 12 %s: %v", k.title, err)
		}
		o.kind, o.objects, o.variants, o.memLimit, o.out = k, 12, "^ours-listwatch-intern$", k.resource == configMaps.resource, t.TempDir()
		o.pageSize, o.limits = -1, noLimits // the informer's own page sizes
		stdout.Reset()
		stderr.Reset()
		if err := run(ctx, o, &stdout, &stderr); err != nil {
			t.Fatalf("run --kind %s: %v\nstderr:\n%s", k.resource, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), "| ours-listwatch-intern relist |") || !strings.Contains(stdout.String(), "12 bench "+k.title) {
			t.Errorf("run --kind %s printed no interning rows for 12 %s:\n%s", k.resource, k.title, stdout.String())
		}
		if !o.memLimit {
			continue
		}
		limited, err := benchresults.ReadFile(filepath.Join(o.out, "results.json"))
		if err != nil {
			t.Fatalf("results.json of the GOMEMLIMIT run: %v", err)
		}
		if limited.MemLimit <= 0 {
			t.Errorf("GOMEMLIMIT = %d, want one computed from the floor", limited.MemLimit)
		}
		checkRows(t, limited, []string{"floor", "ours-listwatch-intern", "ours-listwatch-intern relist"}, []int64{0, limited.MemLimit}, o.objects)
		checkSVG(t, filepath.Join(o.out, "chart-memlimit.svg"))
	}
	p, err := cs.CoreV1().Pods(benchobjects.PodNamespace(3)).Get(ctx, benchobjects.PodName(3), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 || len(p.ManagedFields) != 2 || p.OwnerReferences[0].Kind != "ReplicaSet" {
		t.Errorf("pod %s/%s lacks its running status, owner or its 2 field managers: %+v", p.Namespace, p.Name, p)
	}
}

// checkRows checks that rep has each of rows under each of limits, with
// plausible figures for objects objects.
func checkRows(t *testing.T, rep *benchresults.Results, rows []string, limits []int64, objects int) {
	t.Helper()
	for _, lim := range limits {
		for _, name := range rows {
			row, ok := rep.Row(name, lim)
			if !ok {
				t.Errorf("no row %q with GOMEMLIMIT %d", name, lim)
				continue
			}
			if m := row.Median; m.Objects < objects || m.SyncSeconds <= 0 || m.PeakRSS == 0 || m.BaselineHeap == 0 {
				t.Errorf("row %q (limit %d) has implausible figures: %+v", name, lim, m)
			}
		}
	}
}

func checkSVG(t *testing.T, path string) {
	t.Helper()
	svg, err := os.ReadFile(path)
	if err != nil || xml.Unmarshal(svg, new(struct{})) != nil {
		t.Errorf("%s missing or not XML: %v", path, err)
	}
}

// writeKubeconfigFile writes a cluster's kubeconfig to a file for the children.
func writeKubeconfigFile(t *testing.T, cl *testenv.Cluster) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, cl.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkListCost checks list-cost.md's rows: one per shape, each with the
// same objects, in the requests its limits make of them.
func checkListCost(t *testing.T, md string, shapes []listShape) {
	t.Helper()
	objects := -1
	for _, s := range shapes {
		var requests, n int
		var rest string
		line := ""
		for l := range strings.Lines(md) {
			if strings.HasPrefix(l, "| "+s.name+" |") {
				line = l
			}
		}
		if _, err := fmt.Sscanf(strings.TrimPrefix(line, "| "+s.name+" |"), " %d | %d |%s", &requests, &n, &rest); err != nil {
			t.Errorf("list-cost.md has no row for %q (%v):\n%s", s.name, err, md)
			continue
		}
		if objects < 0 {
			objects = n
		}
		if n != objects || n < 30 {
			t.Errorf("%q listed %d objects, want %d and at least the 30 bench ones", s.name, n, objects)
		}
		want := 1
		switch {
		case s.first == 0 || int64(n) <= s.first:
		case s.rest == 0:
			want = 2
		default:
			want = 1 + int((int64(n)-s.first+s.rest-1)/s.rest)
		}
		if requests != want {
			t.Errorf("%q took %d requests for %d objects, want %d", s.name, requests, n, want)
		}
	}
}

func TestListCostMarkdown(t *testing.T) {
	shapes := listShapes(0)
	timings := []listTiming{
		{shape: shapes[0], objects: 100, requests: 1, took: []time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}},
		{shape: shapes[3], objects: 100, requests: 2, took: []time.Duration{25 * time.Millisecond, 40 * time.Millisecond, 35 * time.Millisecond, 60 * time.Millisecond}},
	}
	md := listCostMarkdown("header", timings)
	for _, want := range []string{
		"header\n",
		"| one LIST, resourceVersion \"\" | 1 | 100 | 20.0 | 10.0-30.0 | 200.00 | 1.000 |",
		// The mean of the middle two of an even count: 37.5 ms of 25, 35, 40, 60.
		"| 1 object, then the rest in one continue page | 2 | 100 | 37.5 | 25.0-60.0 | 375.00 | 1.875 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if len(listShapes(0)) != 4 || listShapes(7)[4].first != 7 {
		t.Errorf("listShapes: %+v, %+v", listShapes(0), listShapes(7))
	}
}

// The API server refuses sub-second compaction intervals; a negative one or
// a negative settle is a typo.
func TestCompactionAndSettleFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--etcd-compaction-interval", "-15s"},
		{"--etcd-compaction-interval", "500ms"},
		{"--settle", "-1s"},
	} {
		var stderr strings.Builder
		if code := parentMain(args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "bench: --") {
			t.Errorf("bench %q: exit %d, %q; want 2 and a message naming the flag", args, code, stderr.String())
		}
	}
	if _, err := testenv.StartCluster("/nonexistent", testenv.APIServerFlag{Name: "etcd-compaction-interval", Value: "15s"}); err == nil ||
		!strings.Contains(err.Error(), "only a cluster started here") {
		t.Errorf("StartCluster of a kubeconfig with API server flags: %v, want an error saying they cannot apply", err)
	}
}

// The results' header names the unwritten rows' state only when the run
// has them.
func TestMarkdownNamesTheUnwrittenStateWhenMeasured(t *testing.T) {
	r := &Report{Results: benchresults.Results{Touched: true, Rows: []benchresults.Row{{Name: "ours-listwatch", Runs: 1}}}}
	if md := r.markdown(); strings.Contains(md, "-unwritten") || !strings.Contains(md, "one bench object updated before each child") {
		t.Errorf("a run without unwritten rows describes them:\n%s", md)
	}
	r.Rows = append(r.Rows, benchresults.Row{Name: "ours-listwatch-unwritten", Runs: 1})
	if md := r.markdown(); !strings.Contains(md, "but the `-unwritten` rows' (continue pages from etcd)") {
		t.Errorf("a run with unwritten rows does not say their state:\n%s", md)
	}
}
