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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leaninformer/leaninformer/internal/benchkit"
	"github.com/leaninformer/leaninformer/internal/testenv"
)

// job is one child run.
type job struct {
	backend  string
	rate     float64
	handlers handlerSet
	informer informerVariant
	run      int
}

func (j job) String() string {
	return fmt.Sprintf("%s %s/s %s %s run %d", j.backend, rateName(j.rate), j.handlers, j.informer.name, j.run+1)
}

// jobs lists the runs of one backend: per rate and handler set, the
// informers that run with that set one after the other, their order
// rotating by one place a run, so that over as many runs as there are such
// informers each takes every place once and a drift of the machine's load
// favours none (with two, the order alternates).
func (o options) jobs(backend string) []job {
	var out []job
	for _, rate := range o.rates {
		for _, hs := range o.handlerSets {
			if rate == 0 && hs.slow() && !o.slowAtMax {
				continue
			}
			var infs []informerVariant
			for _, inf := range o.informers {
				if inf.coalesceSlow && !hs.slow() {
					continue // without the slow handler it is ours
				}
				infs = append(infs, inf)
			}
			for run := range o.runs {
				for _, inf := range rotated(infs, run) {
					out = append(out, job{backend: backend, rate: rate, handlers: hs, informer: inf, run: run})
				}
			}
		}
	}
	return out
}

// rotated returns a copy of infs moved n places to the left.
func rotated(infs []informerVariant, n int) []informerVariant {
	if len(infs) == 0 {
		return nil
	}
	n %= len(infs)
	return append(slices.Clone(infs[n:]), infs[:n]...)
}

// run is the parent: per backend, the cluster (envtest), the children, then
// the report.
func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if err := os.MkdirAll(filepath.Join(o.out, "logs"), 0o755); err != nil {
		return err
	}
	prog := benchkit.NewProgress(stderr)
	started := time.Now()
	total := 0
	for _, b := range o.backends {
		total += len(o.jobs(b))
	}
	var results []Result
	serverVersion := ""
	done := 0
	for _, backend := range o.backends {
		var w *clusterWriter
		if backend == envtestBackend {
			cl, err := startPopulated(ctx, o, prog)
			if err != nil {
				return err
			}
			defer func() {
				if err := cl.stop(); err != nil {
					fmt.Fprintf(stderr, "load: stop envtest: %v\n", err)
				}
			}()
			w, serverVersion = cl, cl.version
		}
		for _, j := range o.jobs(backend) {
			done++
			prog.Step(fmt.Sprintf("[%d/%d] %s (%s so far)", done, total, j, since(started)))
			res, err := runJob(ctx, o, j, w)
			if err != nil {
				return err
			}
			results = append(results, res)
		}
	}
	prog.Finish(fmt.Sprintf("measured %d children in %s", done, since(started)))
	rep := newReport(o, results, serverVersion)
	return rep.write(o.out, stdout)
}

func since(t time.Time) string { return time.Since(t).Round(time.Second).String() }

// runJob runs one child and, for the envtest backend, writes while it
// measures.
func runJob(ctx context.Context, o options, j job, w *clusterWriter) (Result, error) {
	logPath := filepath.Join(o.out, "logs", strings.NewReplacer(" ", "_", "/", "_", "+", "-").Replace(j.String())+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return Result{}, err
	}
	defer logFile.Close()
	args := []string{childFlag,
		"--backend", j.backend,
		"--informer", j.informer.name,
		"--handlers", string(j.handlers),
		"--objects", strconv.Itoa(o.objects),
		"--rate", strconv.FormatFloat(j.rate, 'f', -1, 64),
		"--duration", o.duration.String(),
		"--sample-interval", o.interval.String(),
		"--inflight", strconv.FormatInt(o.inflight, 10),
		"--run", strconv.Itoa(j.run),
	}
	if w != nil {
		args = append(args, "--kubeconfig", w.kubeconfig)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*o.duration+10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.exe, args...)
	cmd.Env = benchkit.ChildEnv(os.Environ(), o.gogc, 0)
	cmd.Stderr = logFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Result{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, err
	}
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("start child %s: %w", j, err)
	}
	res, talkErr := talk(ctx, out, stdin, j, o, w)
	if talkErr != nil {
		cancel() // the child may be waiting for us
	}
	waitErr := cmd.Wait()
	switch {
	case waitErr != nil || talkErr != nil:
		return Result{}, fmt.Errorf("child %s failed: %w; the end of %s:\n%s", j, errors.Join(waitErr, talkErr), logPath, tail(logPath, 15))
	case res == nil:
		return Result{}, fmt.Errorf("child %s printed no result; see %s", j, logPath)
	}
	if err := res.delivered(); err != nil {
		return Result{}, fmt.Errorf("child %s: %w; see %s", j, err, logPath)
	}
	return *res, nil
}

// talk is the parent's side of the line protocol: with the envtest backend
// it writes once the child is ready and tells it how many writes there were.
func talk(ctx context.Context, stdout io.Reader, stdin io.WriteCloser, j job, o options, w *clusterWriter) (*Result, error) {
	defer stdin.Close()
	var res *Result
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == msgReady && w != nil:
			writes, err := w.write(ctx, schedule{rate: j.rate, duration: o.duration, workers: o.writers})
			if err != nil {
				return nil, err
			}
			if _, err := fmt.Fprintf(stdin, "%s%d\n", msgStop, writes); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, msgResult):
			res = new(Result)
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, msgResult)), res); err != nil {
				return nil, fmt.Errorf("child result: %w", err)
			}
		default:
			return nil, fmt.Errorf("unexpected line from the child: %q", line)
		}
	}
	return res, sc.Err()
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// clusterWriter is the envtest backend's API server, populated, and the
// writes to it.
type clusterWriter struct {
	cs         kubernetes.Interface
	objects    int
	kubeconfig string // for the children
	version    string
	stop       func() error
}

// startPopulated starts (or reaches) the cluster and makes it hold the load
// ConfigMaps.
func startPopulated(ctx context.Context, o options, prog *benchkit.Progress) (*clusterWriter, error) {
	if o.kubeconfig == "" {
		prog.Step("starting kube-apiserver and etcd (envtest)")
	}
	cl, err := testenv.StartCluster(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	w := &clusterWriter{objects: o.objects, stop: cl.Stop, kubeconfig: filepath.Join(o.out, "kubeconfig")}
	if err := os.WriteFile(w.kubeconfig, cl.Kubeconfig, 0o600); err != nil {
		return nil, errors.Join(err, cl.Stop())
	}
	// The writer is the load, not what is measured: no client-side limit.
	cfg := rest.CopyConfig(cl.Config)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = apiruntime.ContentTypeProtobuf
	if w.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, errors.Join(err, cl.Stop())
	}
	w.version = "unknown"
	if v, err := w.cs.Discovery().ServerVersion(); err == nil {
		w.version = v.GitVersion
	}
	if err := populate(ctx, w.cs, o.objects, o.writers, prog); err != nil {
		return nil, errors.Join(err, cl.Stop())
	}
	return w, nil
}

// populate creates the namespaces and the load ConfigMaps that do not exist
// yet.
func populate(ctx context.Context, cs kubernetes.Interface, n, workers int, prog *benchkit.Progress) error {
	for i := range min(n, loadNamespaces) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
	}
	prog.Step(fmt.Sprintf("populate: creating the %d load ConfigMaps that do not exist yet", n))
	err := benchkit.Parallel(ctx, workers, n, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().ConfigMaps(nsName(i)).Create(ctx, configMap(i), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ConfigMap %s/%s: %w", nsName(i), cmName(i), err)
		}
		return nil
	}, func(done int) { prog.Set(fmt.Sprintf("populate: %d/%d", done, n)) })
	if err != nil {
		return err
	}
	// An earlier run against the same cluster may have made more.
	want := map[string]bool{}
	for i := range n {
		want[nsName(i)+"/"+cmName(i)] = true
	}
	list, err := cs.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: loadLabel + "=" + loadLabelValue})
	if err != nil {
		return fmt.Errorf("list the load ConfigMaps: %w", err)
	}
	for _, cm := range list.Items {
		if want[cm.Namespace+"/"+cm.Name] {
			continue
		}
		if err := cs.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete ConfigMap %s/%s of an earlier, larger run: %w", cm.Namespace, cm.Name, err)
		}
	}
	return nil
}

// write updates the load ConfigMaps round robin on schedule s, each patch
// carrying its time, and returns the number of writes.
func (w *clusterWriter) write(ctx context.Context, s schedule) (int64, error) {
	return s.run(ctx, func(ctx context.Context, i int) error {
		k := i % w.objects
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, writtenAtAnnotation, stamp(time.Now()))
		_, err := w.cs.CoreV1().ConfigMaps(nsName(k)).Patch(ctx, cmName(k), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	})
}
