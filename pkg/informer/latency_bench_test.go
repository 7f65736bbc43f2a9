package informer

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// writtenAt is the annotation BenchmarkFastBesideSlow stamps each write
// with: Unix nanoseconds.
const writtenAt = "bench.leaninformer.io/written-at"

// latencyHandler records, for each update, the time from the write to its
// call: the fast handler of BenchmarkFastBesideSlow.
type latencyHandler struct {
	mu  sync.Mutex
	lat []time.Duration
}

func (h *latencyHandler) OnAdd(any, bool) {}
func (h *latencyHandler) OnDelete(any)    {}
func (h *latencyHandler) OnUpdate(_, obj any) {
	now := time.Now()
	ns, err := strconv.ParseInt(obj.(*rbacv1.RoleBinding).Annotations[writtenAt], 10, 64)
	if err != nil {
		return // the initial list's objects carry no stamp
	}
	h.mu.Lock()
	h.lat = append(h.lat, now.Sub(time.Unix(0, ns)))
	h.mu.Unlock()
}

func (h *latencyHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.lat)
}

// quantile returns the q-quantile of the recorded latencies.
func (h *latencyHandler) quantile(q float64) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := slices.Clone(h.lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// slowHandler takes 1 ms per update, as a handler that waits on an API
// call would.
type slowHandler struct{}

func (slowHandler) OnAdd(any, bool)   {}
func (slowHandler) OnUpdate(any, any) { time.Sleep(time.Millisecond) }
func (slowHandler) OnDelete(any)      {}

// BenchmarkFastBesideSlow measures a fast handler's latency, write to call,
// on our informer beside a slow handler (1 ms per update) that has an
// unbounded queue or coalesces (Coalesce), at 500 writes a second to 1,000
// RoleBindings of the fake server, where the slow handler keeps up: the
// scenario of make load's fake 500/s fast+slow rows, both variants in one
// process. Run with, for instance:
//
//	go test -run '^$' -bench FastBesideSlow -benchtime 5000x -count 6 ./pkg/informer/
func BenchmarkFastBesideSlow(b *testing.B) {
	const interval = 2 * time.Millisecond // 500 writes a second
	for _, coalesce := range []bool{false, true} {
		b.Run(fmt.Sprintf("coalesce=%v", coalesce), func(b *testing.B) {
			s := loadRoleBindings(b, 1000)
			inf := NewSharedIndexInformerWithOptions(s.ListerWatcher(), &rbacv1.RoleBinding{}, toolscache.SharedIndexInformerOptions{})
			fast := &latencyHandler{}
			var slow toolscache.ResourceEventHandler = slowHandler{}
			if coalesce {
				slow = Coalesce(slow)
			}
			var regs []toolscache.ResourceEventHandlerRegistration
			for _, h := range []toolscache.ResourceEventHandler{fast, slow} {
				reg, err := inf.AddEventHandler(h)
				if err != nil {
					b.Fatal(err)
				}
				regs = append(regs, reg)
			}
			stop := runInformer(inf)
			defer stop()
			if !waitUntil(func() bool { return regs[0].HasSynced() && regs[1].HasSynced() }) {
				b.Fatal("no sync")
			}
			rb := roleBinding(0).(*rbacv1.RoleBinding)
			rb.Annotations = map[string]string{}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
				rb.Annotations[writtenAt] = strconv.FormatInt(time.Now().UnixNano(), 10)
				rb.ResourceVersion = ""
				if _, err := s.Update(rb); err != nil {
					b.Fatal(err)
				}
			}
			if !waitUntil(func() bool { return fast.count() >= b.N }) {
				b.Fatalf("the fast handler got %d of %d updates", fast.count(), b.N)
			}
			b.StopTimer()
			b.ReportMetric(float64(fast.quantile(0.5).Microseconds()), "p50-µs")
			b.ReportMetric(float64(fast.quantile(0.99).Microseconds()), "p99-µs")
		})
	}
}
