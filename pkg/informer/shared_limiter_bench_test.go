package informer

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/leaninformer/leaninformer/internal/benchsize"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// BenchmarkSharedLimiter starts K informers together, each of its own
// kind (a fake API server of N RoleBindings each), behind client-side rate
// limiters with client-go's defaults (QPS 5, burst 10): with
// limiter=shared, one for all, as a SharedInformerFactory on one clientset
// has (a clientset gives all its typed clients one token bucket); with
// limiter=own, one each, as informers on clientsets of their own have (and
// controller-runtime's cache gives its informers). Our page sizes assume a
// bucket of the informer's own: ours, paginating, sends about 8 LISTs a
// kind where client-go's informer in LIST mode sends one. Figures:
//
//	sync-s   wall time until every informer's handler got every object
//	LISTs    LIST requests of all K informers
//
// For instance:
//
//	go test -run '^$' -bench 'SharedLimiter' -benchtime 3x ./pkg/informer/
func BenchmarkSharedLimiter(b *testing.B) {
	n := benchsize.N(10_000)
	for _, kinds := range []int{1, 3, 5} {
		for _, shared := range []bool{true, false} {
			limiter := "own"
			if shared {
				limiter = "shared"
			}
			if kinds == 1 && !shared {
				continue // one informer: the same as shared
			}
			for _, v := range variants() {
				b.Run(fmt.Sprintf("N=%d/kinds=%d/limiter=%s/%s", n, kinds, limiter, v.name), func(b *testing.B) {
					v.setup(b)
					servers := make([]*fake.Server, kinds)
					for i := range servers {
						servers[i] = loadRoleBindings(b, n)
					}
					var sync time.Duration
					var lists int64
					for b.Loop() {
						d, l := sharedLimiterRun(b, v, servers, n, shared)
						sync += d
						lists += l
					}
					runs := float64(b.N)
					b.ReportMetric(sync.Seconds()/runs, "sync-s")
					b.ReportMetric(float64(lists)/runs, "LISTs")
				})
			}
		}
	}
}

// sharedLimiterRun starts one informer of v on each server, behind one full
// token bucket for all (shared) or one each, and returns how long until all
// were synced and how many LISTs they sent.
func sharedLimiterRun(b *testing.B, v variant, servers []*fake.Server, n int, shared bool) (time.Duration, int64) {
	newLimiter := func() flowcontrol.RateLimiter {
		return flowcontrol.NewTokenBucketRateLimiter(rest.DefaultQPS, rest.DefaultBurst)
	}
	limiter := newLimiter()
	lws := make([]*measuringLW, len(servers))
	counters := make([]*counter, len(servers))
	start := time.Now()
	for i, s := range servers {
		if !shared {
			limiter = newLimiter()
		}
		lws[i] = newMeasuringLW(s.ListerWatcher(), false)
		lws[i].limiter = limiter // before the informer runs: one bucket for all, or one each
		inf := v.build(lws[i])
		counters[i] = &counter{}
		if _, err := inf.AddEventHandler(counters[i]); err != nil {
			b.Fatal(err)
		}
		stop := runInformer(inf)
		defer stop()
	}
	for _, c := range counters {
		if !c.waitFor(int64(n)) {
			b.Fatal("no sync within 5 minutes")
		}
	}
	took := time.Since(start)
	var lists uint64
	for _, lw := range lws {
		lists += lw.lists.Load()
	}
	return took, int64(lists)
}
