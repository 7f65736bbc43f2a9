package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/leaninformer/leaninformer/internal/testenv"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

type parentOptions struct {
	objects     int
	replicas    []int
	handover    []int
	work        time.Duration
	concurrency int
	// qps and burst are every replica's client-side rate limit.
	qps, burst int
	out        string
	workers    int
	timeout    time.Duration
	// verbosity is the replicas' klog level (their logs in out).
	verbosity int
}

func parentMain(args []string) error {
	var o parentOptions
	fs := flag.NewFlagSet("shardbench", flag.ContinueOnError)
	fs.IntVar(&o.objects, "objects", 30000, "ConfigMaps to populate (about 1 KiB each)")
	replicas := fs.String("replicas", "1,2,4", "replica counts of the sharded rows")
	handover := fs.String("handover", "2,4", "replica counts of the hand-over rows (one replica killed); empty for none")
	fs.DurationVar(&o.work, "work", 2*time.Millisecond, "time each reconcile waits, standing for its requests")
	fs.IntVar(&o.concurrency, "concurrency", 4, "MaxConcurrentReconciles of every replica")
	fs.IntVar(&o.qps, "qps", 5, "client-side QPS of every replica (default: client-go's rest.Config default)")
	fs.IntVar(&o.burst, "burst", 10, "client-side burst of every replica (default: client-go's rest.Config default)")
	fs.StringVar(&o.out, "out", "_output/shardbench", "folder for results.md, results.json and the replicas' logs")
	fs.IntVar(&o.workers, "populate-workers", 32, "concurrent requests while populating")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long a row may take to settle")
	fs.IntVar(&o.verbosity, "v", 0, "klog verbosity of every replica, whose logs go to --out (1: member Leases, 2: range changes and their relists, 6: every request)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if o.replicas, err = parseInts(*replicas); err != nil {
		return fmt.Errorf("--replicas: %w", err)
	}
	if o.handover, err = parseInts(*handover); err != nil {
		return fmt.Errorf("--handover: %w", err)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	b, err := newBench(o)
	if err != nil {
		return err
	}
	defer b.stop()
	return b.run()
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// bench is the control plane, the objects and the rows measured on them.
type bench struct {
	o          parentOptions
	env        *envtest.Environment
	cfg        *rest.Config
	client     *kubernetes.Clientset
	certDir    string
	kubeconfig string
	rows       []row
	group      int
}

const leaseNamespace = "shardbench-leases"

func newBench(o parentOptions) (*bench, error) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp("", "shardbench-")
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, certDir: certDir}
	apiServer := &envtest.APIServer{CertDir: certDir}
	apiServer.Configure().Set("feature-gates", "ShardedListAndWatch=true")
	b.env = &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlane: envtest.ControlPlane{APIServer: apiServer},
		ControlPlaneStartTimeout: time.Minute, ControlPlaneStopTimeout: time.Minute}
	if b.cfg, err = b.env.Start(); err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	b.cfg.QPS, b.cfg.Burst = 2000, 4000
	if b.client, err = kubernetes.NewForConfig(b.cfg); err != nil {
		return nil, err
	}
	admin, err := b.env.AddUser(envtest.User{Name: "shardbench", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return nil, err
	}
	b.kubeconfig = filepath.Join(certDir, "kubeconfig")
	if err := os.WriteFile(b.kubeconfig, kc, 0o600); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bench) stop() {
	if b.env != nil {
		_ = b.env.Stop()
	}
	_ = os.RemoveAll(b.certDir)
}

// setGate restarts the API server with the ShardedListAndWatch gate on or
// off; etcd, and so the objects, stay.
func (b *bench) setGate(on bool) error {
	apiServer := b.env.ControlPlane.GetAPIServer()
	if err := apiServer.Stop(); err != nil {
		return err
	}
	apiServer.Configure().Set("feature-gates", "ShardedListAndWatch="+strconv.FormatBool(on))
	if err := apiServer.Start(); err != nil {
		return err
	}
	// The restarted API server needs a moment before it serves lists.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		if _, err := b.client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the restarted API server does not answer: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (b *bench) run() error {
	ctx := context.Background()
	start := time.Now()
	if err := b.populate(ctx); err != nil {
		return err
	}
	fmt.Printf("populated %d ConfigMaps in %v\n", b.o.objects, time.Since(start).Round(time.Second))
	for _, mode := range []string{"server", "client"} {
		if err := b.setGate(mode == "server"); err != nil {
			return err
		}
		if mode == "server" {
			for _, impl := range []string{implClientGo, implOurs} {
				if err := b.measure(impl, "", 1, 0); err != nil {
					return err
				}
			}
		}
		for _, n := range b.o.replicas {
			if err := b.measure(implOursShard, mode, n, 0); err != nil {
				return err
			}
		}
		for _, n := range b.o.handover {
			if err := b.measure(implOursShard, mode, n, n); err != nil {
				return err
			}
		}
	}
	return b.report()
}

// populate creates the bench's ConfigMaps that do not exist yet.
func (b *bench) populate(ctx context.Context) error {
	for _, ns := range append(namespaces(), leaseNamespace) {
		_, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	payload := strings.Repeat("x", 1024)
	work := make(chan int)
	errs := make(chan error, b.o.workers)
	var wg sync.WaitGroup
	for range b.o.workers {
		wg.Go(func() {
			for i := range work {
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: namespaces()[i%len(namespaces())], Name: fmt.Sprintf("cm-%07d", i),
						Labels: map[string]string{"app": "shardbench", "shard": strconv.Itoa(i % 16)}},
					Data: map[string]string{"payload": payload, "index": strconv.Itoa(i)},
				}
				if _, err := b.client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range b.o.objects {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("populating: %w", err)
	default:
		return nil
	}
}

func namespaces() []string {
	out := make([]string, 10)
	for i := range out {
		out[i] = fmt.Sprintf("shardbench-%02d", i)
	}
	return out
}

// replica is one running child.
type replica struct {
	id     string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	last   status
	lines  chan status
	exited chan error
}

func (b *bench) startReplica(impl, group, id string, leaseDuration time.Duration) (*replica, error) {
	renewDeadline, renewInterval := shard.DefaultRenewDeadline, shard.DefaultRenewInterval
	if leaseDuration != shard.DefaultLeaseDuration {
		renewDeadline, renewInterval = leaseDuration*2/3, leaseDuration/8
	}
	cmd := exec.Command(os.Args[0], childFlag, "--kubeconfig", b.kubeconfig, "--impl", impl, "--group", group, "--identity", id,
		"--lease-namespace", leaseNamespace, "--objects", strconv.Itoa(b.o.objects), "--concurrency", strconv.Itoa(b.o.concurrency),
		"--qps", strconv.Itoa(b.o.qps), "--burst", strconv.Itoa(b.o.burst),
		"--work", b.o.work.String(), "--lease-duration", leaseDuration.String(), "--renew-deadline", renewDeadline.String(),
		"--renew-interval", renewInterval.String(), "--v", strconv.Itoa(b.o.verbosity))
	logFile, err := os.Create(filepath.Join(b.o.out, group+"-"+id+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	r := &replica{id: id, cmd: cmd, lines: make(chan status, 1), exited: make(chan error, 1)}
	if r.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			var st status
			if json.Unmarshal(sc.Bytes(), &st) != nil {
				continue
			}
			r.mu.Lock()
			r.last = st
			r.mu.Unlock()
			if st.StoreHeap != 0 {
				r.lines <- st
			}
		}
		r.exited <- cmd.Wait()
		_ = logFile.Close()
	}()
	return r, nil
}

func (r *replica) status() status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// measureHeap asks the replica for its heap after GC.
func (r *replica) measureHeap() (int64, error) {
	if _, err := io.WriteString(r.stdin, "measure\n"); err != nil {
		return 0, err
	}
	select {
	case st := <-r.lines:
		return st.StoreHeap, nil
	case err := <-r.exited:
		return 0, fmt.Errorf("replica %s exited: %w", r.id, err)
	case <-time.After(time.Minute):
		return 0, fmt.Errorf("replica %s did not measure its heap", r.id)
	}
}

func (r *replica) stop() error {
	_, _ = io.WriteString(r.stdin, "stop\n")
	select {
	case err := <-r.exited:
		return err
	case <-time.After(time.Minute):
		_ = r.cmd.Process.Kill()
		return fmt.Errorf("replica %s did not stop within a minute", r.id)
	}
}

// kill sends SIGKILL, waits for the replica to exit, and returns when the
// signal was sent: the exit (the kernel freeing the process's memory, 10-20
// ms for 512 MiB here) is part of the hand-over.
func (r *replica) kill() time.Time {
	sent := time.Now()
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	// A killed replica exits with "signal: killed"; anything else is news.
	if err := <-r.exited; err == nil || !strings.Contains(err.Error(), "killed") {
		fmt.Fprintf(os.Stderr, "replica %s, killed, exited with %v\n", r.id, err)
	}
	return sent
}

// settled reports whether the replicas hold the whole space (every
// informer synced and holding its member's share of the assignment over the
// replicas, no relist pending) and whether they have settled (held, and
// every stored object reconciled).
func (b *bench) settled(rs []*replica, group string, sharded bool) (held, done bool, sts []status) {
	sts = make([]status, len(rs))
	names := make([]string, len(rs))
	for i, r := range rs {
		sts[i] = r.status()
		names[i] = group + "-" + r.id
	}
	want := shard.Assign(names, shard.DefaultBuckets)
	total, reconciled := 0, true
	for i, st := range sts {
		if !st.Synced {
			return false, false, sts
		}
		if sharded && (st.Pending || st.Serving != want[names[i]].String() || st.Stored != st.Serving) {
			return false, false, sts
		}
		reconciled = reconciled && st.StoredDone == st.Objects
		total += st.Objects
	}
	held = total == b.o.objects
	return held, held && reconciled, sts
}

// waitSettled waits for the replicas to settle, and returns how long after
// since they held the whole space and had settled.
func (b *bench) waitSettled(rs []*replica, group string, sharded bool, since time.Time) (heldAfter, settledAfter time.Duration, sts []status, err error) {
	deadline := time.Now().Add(b.o.timeout)
	for {
		held, done, sts := b.settled(rs, group, sharded)
		if held && heldAfter == 0 {
			heldAfter = time.Since(since)
		}
		if done {
			return heldAfter, time.Since(since), sts, nil
		}
		for _, r := range rs {
			select {
			case err := <-r.exited:
				return 0, 0, nil, fmt.Errorf("replica %s exited (see its log in %s): %w", r.id, b.o.out, err)
			default:
			}
		}
		if time.Now().After(deadline) {
			return 0, 0, sts, errors.New("the replicas did not settle within --timeout")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
