package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/leaninformer/leaninformer/internal/testenv"
	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

// spans records every count by every replica, by namespace.
type spans struct {
	mu  sync.Mutex
	all map[string][]span
}

type span struct {
	replica    string
	start, end time.Time
}

func (s *spans) recorder(replica string) func(ns string, start, end time.Time) {
	return func(ns string, start, end time.Time) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.all[ns] = append(s.all[ns], span{replica, start, end})
	}
}

// overlaps lists the counts of one namespace by two replicas at once.
func (s *spans) overlaps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for ns, list := range s.all {
		sort.Slice(list, func(i, j int) bool { return list[i].start.Before(list[j].start) })
		for i := range list {
			for j := range i {
				if a, b := list[j], list[i]; a.replica != b.replica && a.end.After(b.start) {
					out = append(out, fmt.Sprintf("%s: %s %v-%v and %s %v-%v", ns, a.replica, a.start, a.end, b.replica, b.start, b.end))
				}
			}
		}
	}
	return out
}

// countedBy returns the namespaces replica began to count after since.
func (s *spans) countedBy(replica string, since time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for ns, list := range s.all {
		for _, sp := range list {
			if sp.replica == replica && sp.start.After(since) {
				out = append(out, ns)
				break
			}
		}
	}
	return out
}

func (s *spans) byReplica() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, list := range s.all {
		for _, sp := range list {
			out[sp.replica]++
		}
	}
	return out
}

// TestOperatorThreeReplicas runs the operator as three sharded replicas on
// an API server with the ShardedListAndWatch gate: every namespace is
// counted, each by one replica at a time; a replica that stops hands its
// namespaces over, and one that comes back takes its share again.
func TestOperatorThreeReplicas(t *testing.T) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			t.Skipf("no envtest binaries (make test builds them): %v", err)
		}
		t.Fatal(err)
	}
	apiServer := &envtest.APIServer{}
	apiServer.Configure().Append("feature-gates", "ShardedListAndWatch=true")
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlane: envtest.ControlPlane{APIServer: apiServer}}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	// Three replicas and the test share one API server: the default client
	// rate limit (5/s) would throttle the counting.
	cfg.QPS, cfg.Burst = 200, 400
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	k := &kube{t: t, ctx: ctx, client: client}
	leases := k.createNamespace("shard-leases")

	// Names that differ in their first characters: FNV-1a, the API
	// server's shard hash, spreads names that differ only at the end badly.
	const namespaces = 24
	var names []string
	for i := range namespaces {
		ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: string(uuid.NewUUID())[:8] + "-team"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, ns.Name)
		for j := range i % 4 {
			k.createRoleBindings(ns.Name, "rb-"+strconv.Itoa(j))
		}
	}

	rec := &spans{all: map[string][]span{}}
	replicas := map[string]*runningManager{}
	start := func(id string) {
		mgr, err := newManager(cfg, options{
			metricsBindAddress: "0", shardNamespace: leases, shardIdentity: id, onReconcile: rec.recorder(id), replicasInProcess: true,
			shardOptions: []shard.Option{shard.WithLeaseDuration(2 * time.Second), shard.WithRenewDeadline(1500 * time.Millisecond), shard.WithRenewInterval(250 * time.Millisecond)},
		})
		if err != nil {
			t.Fatal(err)
		}
		replicas[id] = runManager(t, mgr)
	}
	expectAll := func(extra int) {
		t.Helper()
		for i, ns := range names {
			k.expectCount(ns, strconv.Itoa(i%4+extra))
		}
	}

	for _, id := range []string{"r0", "r1", "r2"} {
		start(id)
	}
	expectAll(0)
	t.Logf("counts by replica: %v", rec.byReplica())

	// The replicas' RoleBinding informers are sharded and filtered on the
	// server.
	inf, err := replicas["r0"].mgr.GetCache().GetInformer(ctx, rbMetadata())
	if err != nil {
		t.Fatal(err)
	}
	if st := inf.(*informer.SharedIndexInformer).SyncStatus(); !st.Shard.Sharded || st.Shard.Filtering != shard.FilteringServer {
		t.Errorf("r0's RoleBinding informer: %s", st)
	}
	nsInf, err := replicas["r0"].mgr.GetCache().GetInformer(ctx, namespaceMetadata())
	if err != nil {
		t.Fatal(err)
	}
	if st := nsInf.(*informer.SharedIndexInformer).SyncStatus(); st.Shard.Sharded {
		t.Errorf("r0's Namespace informer is sharded: %s", st)
	}

	t.Log("r1 stops: r0 and r2 take its namespaces over")
	replicas["r1"].stop(t)
	for _, ns := range names {
		k.createRoleBindings(ns, "rb-after-stop")
	}
	expectAll(1)

	t.Log("r1 comes back and takes its share again")
	rejoined := time.Now()
	start("r1")
	for _, ns := range names {
		k.createRoleBindings(ns, "rb-after-join")
	}
	expectAll(2)
	t.Logf("counts by replica: %v", rec.byReplica())
	// r0 and r2 may have counted all of that before r1 took its share over
	// (a hand-over waits for their Leases to shrink); once it has it, r1
	// counts the namespaces of its share as its cache lists them. About a
	// third of the 24 namespaces hash into it: that none does is as likely
	// as (2/3)^24, 6 in 100,000.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return len(rec.countedBy("r1", rejoined)) > 0, nil
	}); err != nil {
		t.Errorf("r1 counted no namespace within 30s of coming back; counts by replica: %v", rec.byReplica())
	}
	t.Logf("r1 counted %d namespaces after it came back", len(rec.countedBy("r1", rejoined)))

	if o := rec.overlaps(); len(o) > 0 {
		t.Fatalf("namespaces counted by two replicas at once:\n%s", strings.Join(o, "\n"))
	}
}

func rbMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("RoleBinding"))
	return m
}

// runningManager is a started manager.
type runningManager struct {
	mgr    manager.Manager
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

func runManager(t *testing.T, mgr manager.Manager) *runningManager {
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningManager{mgr: mgr, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *runningManager) stop(t *testing.T) {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("the manager stopped with an error: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("the manager did not stop within a minute")
		}
	})
}
