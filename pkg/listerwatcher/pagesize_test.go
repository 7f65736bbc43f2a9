package listerwatcher

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// listCollection drives a pageSizer through one listing of a collection of
// n objects, each made by newObject, as the API server answers it: with
// remainingItemCount when counted is true. It returns the limit of every
// LIST.
func listCollection(s *pageSizer, n int, counted bool, newObject func(i int) k8sruntime.Object) []int64 {
	var limits []int64
	p := s.start()
	for listed := 0; ; {
		limits = append(limits, p.limit)
		page := n - listed
		if p.limit > 0 {
			page = min(page, int(p.limit))
		}
		items := make([]k8sruntime.Object, page)
		for i := range items {
			items[i] = newObject(listed + i)
		}
		listed += page
		var remaining *int64
		if counted && listed < n {
			remaining = new(int64(n - listed))
		}
		p = s.observe(p, items, remaining)
		if listed == n {
			s.done(p)
			return limits
		}
	}
}

// sizedObject returns ConfigMaps of about size decoded bytes.
func sizedObject(size int) func(i int) k8sruntime.Object {
	payload := strings.Repeat("x", max(0, size-1100))
	return func(i int) k8sruntime.Object {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%07d", i), ResourceVersion: "12345",
				Labels: map[string]string{"app": "bench"}},
			Data: map[string]string{"payload": strings.Clone(payload)},
		}
	}
}

func sum(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}

func TestPageSizerSharesTheCollectionOverTheTargetLISTs(t *testing.T) {
	p := newPageSizer(DefaultPageSize, false)
	limits := listCollection(&p, 10_000, true, sizedObject(2000))
	if want := []int64{500, 1358, 1357, 1357, 1357, 1357, 1357, 1357}; !reflect.DeepEqual(limits, want) {
		t.Errorf("limits of a list of 10,000 objects: %v, want %v: the first page, then the rest over %d LISTs", limits, want, targetListRequests)
	}
	// A relist knows the collection and its objects from the start.
	limits = listCollection(&p, 10_000, true, sizedObject(2000))
	if len(limits) != targetListRequests || limits[0] != 1250 {
		t.Errorf("limits of the relist: %v, want %d LISTs of 1250", limits, targetListRequests)
	}
}

func TestPageSizerBoundsTheBytesOfAPage(t *testing.T) {
	p := newPageSizer(DefaultPageSize, false)
	limits := listCollection(&p, 100_000, true, sizedObject(4096))
	bound := maxPageBytes / p.objectBytes
	if bound < 3500 || bound > 4200 {
		t.Fatalf("objects of about 4 KiB: estimated %d bytes each, bound %d objects per page", p.objectBytes, bound)
	}
	last := len(limits) - 1
	for i, l := range limits[1:last] {
		if l != bound {
			t.Errorf("limit of LIST %d: %d, want the byte bound %d (%d MiB of %d-byte objects)", i+2, l, bound, maxPageBytes>>20, p.objectBytes)
		}
	}
	if limits[last] > bound {
		t.Errorf("limit of the last LIST: %d, above the byte bound %d", limits[last], bound)
	}
	if want := 1 + (100_000-500+int(bound)-1)/int(bound); len(limits) != want {
		t.Errorf("%d LISTs, want %d", len(limits), want)
	}
}

func TestPageSizerNeverGoesBelowTheFirstPage(t *testing.T) {
	p := newPageSizer(DefaultPageSize, false)
	// 64 KiB objects: the byte bound allows 256 per page.
	for _, l := range listCollection(&p, 3000, true, sizedObject(64<<10)) {
		if l != DefaultPageSize {
			t.Errorf("limit %d for 64 KiB objects, want the first page's %d: never more LISTs than the default page size needs", l, DefaultPageSize)
		}
	}
	// A collection smaller than 8 first pages.
	if limits := listCollection(&p, 1234, true, sizedObject(1000)); !reflect.DeepEqual(limits, []int64{500, 500, 500}) {
		t.Errorf("limits of 1234 objects: %v, want [500 500 500]", limits)
	}
}

func TestPageSizerDoublesWithoutACount(t *testing.T) {
	p := newPageSizer(DefaultPageSize, false)
	limits := listCollection(&p, 10_000, false, sizedObject(1000))
	if want := []int64{500, 1000, 2000, 4000, 8000}; !reflect.DeepEqual(limits, want) {
		t.Errorf("limits without remainingItemCount: %v, want %v", limits, want)
	}
	// The relist takes the size of the last listing for the collection's.
	limits = listCollection(&p, 10_000, false, sizedObject(1000))
	if len(limits) != targetListRequests || sum(limits) < 10_000 {
		t.Errorf("relist limits without remainingItemCount: %v, want %d LISTs from the last listing's size", limits, targetListRequests)
	}
	// A collection that grew past it: once the planned pages are done,
	// pages double again.
	limits = listCollection(&p, 20_000, false, sizedObject(1000))
	if want := []int64{1250, 1250, 1250, 1250, 1250, 1250, 1250, 1250, 2500, 5000, 10000}; !reflect.DeepEqual(limits, want) {
		t.Errorf("relist limits of a collection that doubled: %v, want %v", limits, want)
	}
}

func TestPageSizerWithAFixedPageSize(t *testing.T) {
	for _, size := range []int64{0, 7, 500, 5000} {
		p := newPageSizer(size, true)
		for range 2 { // initial list and relist
			for _, l := range listCollection(&p, 10_000, true, sizedObject(2000)) {
				if l != size {
					t.Errorf("WithPageSize(%d): a LIST asked for %d", size, l)
				}
			}
		}
	}
}

func TestSampleBytesSkipsClearedEntries(t *testing.T) {
	obj := sizedObject(5000)
	items := []k8sruntime.Object{nil, obj(0), nil, obj(1)}
	if got, want := sampleBytes(items), decodedBytes(obj(2)); got != want {
		t.Errorf("sampleBytes = %d, want %d, the size of the objects present", got, want)
	}
	if got := sampleBytes([]k8sruntime.Object{nil}); got != 0 {
		t.Errorf("sampleBytes of a cleared page = %d, want 0", got)
	}
}

// limitedLW sends every request through a token bucket with rest.Config's
// default QPS and burst, on a clock only the test moves, and counts the
// requests the bucket would have made wait.
type limitedLW struct {
	toolscacheLW
	limiter   flowcontrol.PassiveRateLimiter
	lists     atomic.Int64
	throttled atomic.Int64
}

// toolscacheLW is the context-aware ListerWatcher limitedLW wraps.
type toolscacheLW interface {
	ListWithContext(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error)
	WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

func newLimitedLW(lw toolscacheLW, clk clock.PassiveClock) *limitedLW {
	return &limitedLW{toolscacheLW: lw, limiter: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(rest.DefaultQPS, rest.DefaultBurst, clk)}
}

func (lw *limitedLW) admit() {
	if !lw.limiter.TryAccept() {
		lw.throttled.Add(1)
	}
}

func (lw *limitedLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
	lw.admit()
	lw.lists.Add(1)
	return lw.toolscacheLW.ListWithContext(ctx, opts)
}

func (lw *limitedLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	lw.admit()
	return lw.toolscacheLW.WatchWithContext(ctx, opts)
}

func (lw *limitedLW) List(opts metav1.ListOptions) (k8sruntime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *limitedLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// A paginated restart of 10,000 objects must fit client-go's default rate
// limit (burst 10, then 5 per second) with the watch that follows, or every
// request past the burst waits 200 ms for the limiter: the list and the
// relist must not need more than targetListRequests LISTs, whether the
// server counts the objects left or not (selectors).
func TestPaginatedRestartOf10000ObjectsFitsTheDefaultRateLimit(t *testing.T) {
	for name, withSelector := range map[string]bool{"remainingItemCount": false, "selector": true} {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, 10_000)
			var inner toolscacheLW = srv.ListerWatcher()
			if withSelector {
				inner = selectorLW{srv.ListerWatcher()}
			}
			limiterClock := clocktesting.NewFakePassiveClock(time.Now())
			lw := newLimitedLW(inner, limiterClock)
			h := start(t, srv, lw, WithStrategy(ListWatch))
			expectRestart := func(restart string) {
				t.Helper()
				lists, throttled := lw.lists.Load(), lw.throttled.Load()
				_, names, _ := h.restart()
				h.watchStarted()
				if len(names) != 10_000 {
					t.Fatalf("%s of %d objects, want 10,000", restart, len(names))
				}
				if lists := lw.lists.Load() - lists; lists > targetListRequests {
					t.Errorf("%s: %d LISTs, want at most %d", restart, lists, targetListRequests)
				}
				if n := lw.throttled.Load() - throttled; n > 0 {
					t.Errorf("%s: %d requests past client-go's default burst of %d", restart, n, rest.DefaultBurst)
				}
			}
			expectRestart("initial list")

			// The relist comes once the limiter has refilled.
			limiterClock.SetTime(limiterClock.Now().Add(time.Duration(float64(rest.DefaultBurst) / float64(rest.DefaultQPS) * float64(time.Second))))
			expired := apierrors.NewResourceExpired("too old resource version")
			srv.SendWatchError(&expired.ErrStatus)
			h.expectErr(apierrors.IsResourceExpired)
			h.backoff(testBackoff.Initial)
			expectRestart("relist")
		})
	}
}
