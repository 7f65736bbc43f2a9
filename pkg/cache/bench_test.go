package cache

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/internal/benchsize"
	"github.com/leaninformer/leaninformer/internal/memstat"
)

// Benchmarks compare our Indexer with client-go's on the same data in the
// same run. Run them with:
//
//	go test -run '^$' -bench . -benchmem ./pkg/cache/

const (
	benchNamespaces = 20
	podsPerApp      = 4 // a label value shared by a few pods, like a small Deployment's
	benchPageSize   = 500
)

// benchIndexers are the two indices of the benchmarks: the namespace and the
// "app" label.
func benchIndexers() toolscache.Indexers {
	return toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		"app": func(o any) ([]string, error) {
			return []string{o.(*corev1.Pod).Labels["app"]}, nil
		},
	}
}

func benchNamespace(i int) string { return "ns-" + strconv.Itoa(i%benchNamespaces) }
func benchName(i int) string      { return fmt.Sprintf("pod-%07d", i) }
func benchKey(i int) string       { return benchNamespace(i) + "/" + benchName(i) }

// benchPod returns pod i as a typical controller's informer holds it: a
// Deployment's pod with one container, scheduled and running (about 3 KiB
// of heap).
func benchPod(i int, rv string) *corev1.Pod {
	app := "app-" + strconv.Itoa(i/podsPerApp)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       benchNamespace(i),
			Name:            benchName(i),
			UID:             types.UID(fmt.Sprintf("%08x-4a1e-4f6b-9c1d-5e2f3a4b6c7d", i)),
			ResourceVersion: rv,
			Labels:          map[string]string{"app": app, "pod-template-hash": "7c9f8d6b5d"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-30T12:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7c9f8d6b5d",
				UID: types.UID(fmt.Sprintf("%08x-0000-4000-8000-000000000000", i/podsPerApp)),
			}},
			CreationTimestamp: metav1.NewTime(time.Unix(1_700_000_000, 0)),
		},
		Spec: corev1.PodSpec{
			NodeName:           "node-" + strconv.Itoa(i%100),
			ServiceAccountName: "default",
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "registry.example.com/team/" + app + ":v1.2.3",
				Args:  []string{"--port=8080", "--log-level=info"},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", Value: benchName(i)},
					{Name: "MODE", Value: "production"},
				},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("100m"),
						corev1.ResourceMemory: resource.MustParse("128Mi"),
					},
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
			}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app}},
			}}},
		},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			HostIP: "10.0.0." + strconv.Itoa(i%100),
			PodIP:  fmt.Sprintf("10.%d.%d.%d", 1+i>>16&0xff, i>>8&0xff, i&0xff),
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "main", Ready: true, Image: "registry.example.com/team/" + app + ":v1.2.3",
				ImageID:     "registry.example.com/team/" + app + "@sha256:0123456789abcdef0123456789abcdef",
				ContainerID: fmt.Sprintf("containerd://%064x", i),
			}},
		},
	}
}

// impls are the indexers under comparison.
var impls = []struct {
	name string
	new  func() toolscache.Indexer
}{
	{"impl=leaninformer", func() toolscache.Indexer {
		return NewIndexer(toolscache.MetaNamespaceKeyFunc, benchIndexers())
	}},
	{"impl=client-go", func() toolscache.Indexer {
		return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, benchIndexers())
	}},
}

// filled returns a new store holding benchReadSize() pods. Every
// sub-benchmark builds its own, so that neither implementation inherits the
// other's garbage or cache state.
func filled(b *testing.B, newStore func() toolscache.Indexer) toolscache.Indexer {
	b.Helper()
	s := newStore()
	for i := range benchReadSize() {
		if err := s.Add(benchPod(i, "1")); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC() // start measuring with no collection of the setup's garbage under way
	return s
}

// benchReadSize is the store size of the read and write benchmarks.
func benchReadSize() int { return benchsize.N(10_000) }

func BenchmarkAdd(b *testing.B) {
	pods := make([]*corev1.Pod, benchReadSize())
	for i := range pods {
		pods[i] = benchPod(i, "1")
	}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			var store toolscache.Indexer
			for i := 0; b.Loop(); i++ {
				if i%len(pods) == 0 { // start over with an empty store
					b.StopTimer()
					store = impl.new()
					b.StartTimer()
				}
				if err := store.Add(pods[i%len(pods)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUpdate replaces stored pods with a newer version whose indexed
// values are unchanged, the common update.
func BenchmarkUpdate(b *testing.B) {
	newer := make([]*corev1.Pod, benchReadSize())
	for i := range newer {
		newer[i] = benchPod(i, "2")
	}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			store := filled(b, impl.new)
			for i := 0; b.Loop(); i++ {
				if err := store.Update(newer[i%len(newer)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	keys := make([]string, benchReadSize())
	for i := range keys {
		keys[i] = benchKey(i)
	}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			store := filled(b, impl.new)
			for i := 0; b.Loop(); i++ {
				if _, ok, _ := store.GetByKey(keys[i%len(keys)]); !ok {
					b.Fatal("missing")
				}
			}
		})
	}
}

func BenchmarkList(b *testing.B) {
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			store := filled(b, impl.new)
			for b.Loop() {
				if len(store.List()) != benchReadSize() {
					b.Fatal("short list")
				}
			}
		})
	}
}

// BenchmarkByIndex reads a namespace (500 pods) and an app label (4 pods).
func BenchmarkByIndex(b *testing.B) {
	for _, idx := range []struct {
		name, index string
		value       func(i int) string
		want        int
	}{
		{"namespace", toolscache.NamespaceIndex, benchNamespace, benchReadSize() / benchNamespaces},
		{"app", "app", func(i int) string { return "app-" + strconv.Itoa(i%(benchReadSize()/podsPerApp)) }, podsPerApp},
	} {
		values := make([]string, 100)
		for i := range values {
			values[i] = idx.value(i)
		}
		for _, impl := range impls {
			b.Run("index="+idx.name+"/"+impl.name, func(b *testing.B) {
				store := filled(b, impl.new)
				for i := 0; b.Loop(); i++ {
					objs, err := store.ByIndex(idx.index, values[i%len(values)])
					if err != nil || len(objs) != idx.want {
						b.Fatalf("ByIndex: %d objects, %v", len(objs), err)
					}
				}
			})
		}
	}
}

// relister runs one relist of an unchanged collection of n pods: every
// object arrives as a fresh decoded copy (a DeepCopy of the stored one).
type relister interface {
	store() toolscache.Indexer
	// relist relists; atPeak, if not nil, is called where the relist holds
	// the most memory.
	relist(b *testing.B, n int, atPeak func())
}

// ours relists page by page into the replace buffer.
type ours struct{ c *Indexer }

func (r ours) store() toolscache.Indexer { return r.c }

func (r ours) relist(b *testing.B, n int, atPeak func()) {
	r.c.StartReplace()
	page := make([]any, 0, benchPageSize)
	for start := 0; start < n; start += benchPageSize {
		page = page[:0]
		for i := start; i < min(start+benchPageSize, n); i++ {
			live, _, _ := r.c.GetByKey(benchKey(i))
			page = append(page, live.(*corev1.Pod).DeepCopy())
		}
		for _, o := range page {
			if _, _, err := r.c.AddToReplace(o, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	clear(page) // the pipeline releases a page once it is handled
	r.c.testHookBeforeWriteLock = atPeak
	d, err := r.c.FinishReplace("2")
	r.c.testHookBeforeWriteLock = nil
	if err != nil || len(d.Changes) != n {
		b.Fatalf("FinishReplace: %v", err)
	}
}

// clientGo relists as client-go's reflector does: the whole list, then
// Replace.
type clientGo struct{ s toolscache.Indexer }

func (r clientGo) store() toolscache.Indexer { return r.s }

func (r clientGo) relist(b *testing.B, n int, atPeak func()) {
	list := make([]any, n)
	for i := range list {
		live, _, _ := r.s.GetByKey(benchKey(i))
		list[i] = live.(*corev1.Pod).DeepCopy()
	}
	if atPeak != nil {
		atPeak() // a lower bound: Replace still builds a map and indices
	}
	if err := r.s.Replace(list, "2"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRestart relists an unchanged collection of 10k and 100k pods
// with two indices. Besides time and allocations it reports, from one more
// relist after the timed ones:
//   - steady-MiB: the heap of the store at rest (after a full GC);
//   - peak-live/steady: the live heap (after a full GC) at the relist's
//     peak, over the steady store: ours inside FinishReplace with the diff
//     computed and both generations held; client-go's with the decoded list
//     in hand just before Replace (Replace then adds its new map and
//     indices, so client-go's real peak is higher);
//   - peak-heap/steady: the sampled heap peak, garbage included, with the
//     default GOGC: it depends on GC pacing as much as on the store;
//   - peak-heap-limit/steady, only with -memlimit: the same under a memory
//     limit (GOMEMLIMIT) of the process's memory at rest (free pages
//     returned to the OS) plus 20% of the steady store. Off by default, so
//     that every default figure is taken as users' processes run, without
//     a memory limit.
func BenchmarkRestart(b *testing.B) {
	for _, n := range benchsize.Sizes(10_000, 100_000) {
		variants := []struct {
			name string
			new  func() relister
		}{
			{"impl=leaninformer-reuse", func() relister {
				return ours{NewIndexer(toolscache.MetaNamespaceKeyFunc, benchIndexers())}
			}},
			{"impl=leaninformer-noreuse", func() relister {
				return ours{NewIndexer(toolscache.MetaNamespaceKeyFunc, benchIndexers(), WithRelistReuse(false))}
			}},
			{"impl=client-go", func() relister {
				return clientGo{toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, benchIndexers())}
			}},
		}
		for _, v := range variants {
			b.Run(fmt.Sprintf("n=%dk/%s", n/1000, v.name), func(b *testing.B) {
				base := memstat.HeapAfterGC()
				r := v.new()
				for i := range n {
					if err := r.store().Add(benchPod(i, "1")); err != nil {
						b.Fatal(err)
					}
				}
				for b.Loop() {
					r.relist(b, n, nil)
				}
				reportRelistMemory(b, r, n, base)
			})
		}
	}
}

// reportRelistMemory measures two more relists of r (see BenchmarkRestart);
// base is the heap before the store was built.
func reportRelistMemory(b *testing.B, r relister, n int, base uint64) {
	steady := memstat.HeapAfterGC() - base
	ratio := func(heap uint64) float64 { return float64(heap-base) / float64(steady) }

	var atPeak uint64
	sampler := memstat.Start(time.Millisecond)
	r.relist(b, n, func() { atPeak = memstat.HeapAfterGC() })
	unlimited := sampler.Stop()
	b.ReportMetric(memstat.MiB(steady), "steady-MiB")
	b.ReportMetric(ratio(atPeak), "peak-live/steady")
	b.ReportMetric(ratio(unlimited.Heap), "peak-heap/steady")
	if !*underMemLimit {
		return
	}

	debug.FreeOSMemory() // so that memory at rest is the store's, not free pages
	limit := runtimeMemory() + steady/5
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(limit)))
	sampler = memstat.Start(time.Millisecond)
	r.relist(b, n, nil)
	limited := sampler.Stop()
	b.ReportMetric(ratio(limited.Heap), "peak-heap-limit/steady")
}

// underMemLimit adds BenchmarkRestart's relist under a memory limit.
var underMemLimit = flag.Bool("memlimit", false, "BenchmarkRestart: also relist under a GOMEMLIMIT near the store (peak-heap-limit/steady)")

// runtimeMemory is the memory a GOMEMLIMIT applies to: what the Go runtime
// has mapped and not released.
func runtimeMemory() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// BenchmarkRelistWriteLock measures how long finishing a relist holds the
// store's write lock, which is how long readers wait: from where
// FinishReplace goes to the write lock until it returns (write-lock-ms).
// Ours unchanged and with a quarter of the pods changed are written in
// place (the quarter is the most it writes in place); with half changed it
// builds a second generation and only swaps it in. client-go's figure is
// the whole Replace call (replace-ms), an upper bound of its lock hold: it
// builds the items map before it locks and every index under the lock.
//
//	go test -run '^$' -bench RelistWriteLock -benchtime 3x ./pkg/cache/
func BenchmarkRelistWriteLock(b *testing.B) {
	for _, n := range benchsize.Sizes(10_000, 100_000) {
		for _, share := range []int{0, 25, 50} {
			changed := n * share / 100
			// relistObject is pod i as the relist at rv lists it: a new
			// version for the changed share, otherwise a decoded copy of
			// what live holds.
			relistObject := func(live toolscache.Indexer, i int, rv string) *corev1.Pod {
				if i < changed {
					return benchPod(i, rv)
				}
				o, _, _ := live.GetByKey(benchKey(i))
				return o.(*corev1.Pod).DeepCopy()
			}
			b.Run(fmt.Sprintf("n=%dk/changed=%d%%/impl=leaninformer", n/1000, share), func(b *testing.B) {
				c := NewIndexer(toolscache.MetaNamespaceKeyFunc, benchIndexers())
				for i := range n {
					if err := c.Add(benchPod(i, "1")); err != nil {
						b.Fatal(err)
					}
				}
				var held time.Duration
				var locking time.Time
				c.testHookBeforeWriteLock = func() { locking = time.Now() }
				relists := 0
				for b.Loop() {
					relists++
					rv := strconv.Itoa(relists + 1)
					c.StartReplace()
					for i := range n {
						if _, _, err := c.AddToReplace(relistObject(c, i, rv), nil); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := c.FinishReplace(rv); err != nil {
						b.Fatal(err)
					}
					held += time.Since(locking)
				}
				b.ReportMetric(float64(held.Microseconds())/1e3/float64(relists), "write-lock-ms")
			})
			b.Run(fmt.Sprintf("n=%dk/changed=%d%%/impl=client-go", n/1000, share), func(b *testing.B) {
				s := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, benchIndexers())
				for i := range n {
					if err := s.Add(benchPod(i, "1")); err != nil {
						b.Fatal(err)
					}
				}
				var held time.Duration
				relists := 0
				list := make([]any, n)
				for b.Loop() {
					relists++
					rv := strconv.Itoa(relists + 1)
					for i := range list {
						list[i] = relistObject(s, i, rv)
					}
					start := time.Now()
					if err := s.Replace(list, rv); err != nil {
						b.Fatal(err)
					}
					held += time.Since(start)
				}
				b.ReportMetric(float64(held.Microseconds())/1e3/float64(relists), "replace-ms")
			})
		}
	}
}
