package listerwatcher

import (
	"context"
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	return listFiltered(s, n, 1, counted, newObject)
}

// listFiltered is listCollection through a ListerWatcher that keeps one
// object of every keepOneIn of each page, as a client-side shard filter
// does.
func listFiltered(s *pageSizer, n, keepOneIn int, counted bool, newObject func(i int) k8sruntime.Object) []int64 {
	var limits []int64
	p := s.start()
	for listed := 0; ; {
		limits = append(limits, p.limit)
		page := n - listed
		if p.limit > 0 {
			page = min(page, int(p.limit))
		}
		var items []k8sruntime.Object
		for i := range page {
			if (listed+i)%keepOneIn == 0 {
				items = append(items, newObject(listed+i))
			}
		}
		listed += page
		var remaining *int64
		if counted && listed < n {
			remaining = new(int64(n - listed))
		}
		p = s.observe(p, items, remaining, listed < n)
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
	// The last LIST may take more than its share, up to the byte bound, in
	// case the collection grew.
	if want := []int64{500, 1358, 1357, 1357, 1357, 1357, 1357, maxPageBytes / p.objectBytes}; !reflect.DeepEqual(limits, want) {
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

// Past 640 MiB of decoded objects a page may hold 2.5% of the collection:
// a list of 1.6 GB takes about maxPageShare LISTs, not one per 16 MiB. A
// client-side filter that keeps a quarter keeps the 16 MiB bound: what a
// page may hold is a share of what the store keeps.
func TestPageSizerLetsPagesGrowWithALargeCollection(t *testing.T) {
	const n = 100_000 // of about 16 KiB each
	payload := strings.Repeat("x", 16<<10)
	object := func(i int) k8sruntime.Object {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%07d", i), ResourceVersion: "12345"},
			Data:       map[string]string{"payload": payload},
		}
	}
	p := newPageSizer(DefaultPageSize, false)
	limits := listCollection(&p, n, true, object)
	bytes := int64(n) * p.objectBytes
	if bytes < 1500<<20 || bytes > 1800<<20 {
		t.Fatalf("estimated %d bytes an object: %d MiB in all, want about 1.6 GiB", p.objectBytes, bytes>>20)
	}
	shareBound := bytes / maxPageShare / p.objectBytes
	for i, l := range limits[1 : len(limits)-1] {
		if l < shareBound*99/100 || l > shareBound*101/100 {
			t.Errorf("limit of LIST %d: %d, want 2.5%% of the collection, %d", i+2, l, shareBound)
		}
	}
	if len(limits) > maxPageShare+2 {
		t.Errorf("%d LISTs, want at most %d: the first page and 2.5%% of the collection each", len(limits), maxPageShare+2)
	}

	filtered := newPageSizer(DefaultPageSize, false)
	limits = listFiltered(&filtered, n, 4, true, object)
	byteBound := maxPageBytes / filtered.objectBytes
	for i, l := range limits {
		if l > byteBound {
			t.Errorf("a quarter kept: limit of LIST %d is %d, above the 16 MiB bound of %d", i+1, l, byteBound)
		}
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
	// A collection that grew past it: the plan's last LIST takes what is
	// left, up to the byte bound, and no LIST is added.
	limits = listCollection(&p, 20_000, false, sizedObject(1000))
	if want := []int64{1250, 1250, 1250, 1250, 1250, 1250, 1250, maxPageBytes / p.objectBytes}; !reflect.DeepEqual(limits, want) {
		t.Errorf("relist limits of a collection that doubled: %v, want %v", limits, want)
	}
	// Past the byte bound as well: then pages of the bound follow.
	limits = listCollection(&p, 50_000, false, sizedObject(1000))
	bound := maxPageBytes / p.objectBytes
	if n := len(limits); n <= targetListRequests || limits[n-1] != bound || limits[n-2] != bound {
		t.Errorf("relist limits of a collection that grew past the byte bound: %v, want pages of the bound (%d) past the plan", limits, bound)
	}
}

// A sharded informer on a server without shard selectors lists the whole
// collection and keeps its share of each page: the pages are planned in the
// objects the server lists, not in those kept, or a relist of a third of
// 30,000 objects would plan 10,000 and send three times the LISTs, past
// client-go's default burst.
func TestPageSizerCountsWhatTheServerLists(t *testing.T) {
	for _, counted := range []bool{false, true} {
		t.Run(fmt.Sprintf("remainingItemCount=%v", counted), func(t *testing.T) {
			p := newPageSizer(DefaultPageSize, false)
			first := listFiltered(&p, 30_000, 3, counted, sizedObject(1000))
			if len(first) > targetListRequests {
				t.Errorf("first listing, a third kept: %d LISTs (%v), want at most %d", len(first), first, targetListRequests)
			}
			if p.previous < 29_000 || p.previous > 31_000 {
				t.Errorf("the listing's size: %d, want about the 30,000 the server listed", p.previous)
			}
			relist := listFiltered(&p, 30_000, 3, counted, sizedObject(1000))
			if len(relist) > targetListRequests {
				t.Errorf("relist, a third kept: %d LISTs (%v), want at most %d", len(relist), relist, targetListRequests)
			}
			// Unfiltered, the same collection lists in the same requests, of
			// the same sizes give or take the estimate of the last page.
			plain := newPageSizer(DefaultPageSize, false)
			listCollection(&plain, 30_000, counted, sizedObject(1000))
			want := listCollection(&plain, 30_000, counted, sizedObject(1000))
			same := len(relist) == len(want)
			for i := 0; same && i < len(want); i++ {
				same = relist[i] >= want[i]*99/100 && relist[i] <= want[i]*101/100
			}
			if !same {
				t.Errorf("relist limits, a third kept: %v; unfiltered: %v", relist, want)
			}
		})
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
//
// The same holds through a client-side filter that keeps a third of every
// page, as a sharded informer does on a server without shard selectors.
func TestPaginatedRestartOf10000ObjectsFitsTheDefaultRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		withSelector, filtered bool
	}{
		{name: "remainingItemCount"},
		{name: "selector", withSelector: true},
		{name: "client-side filter", filtered: true},
		{name: "selector and client-side filter", withSelector: true, filtered: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, 10_000)
			var inner toolscacheLW = srv.ListerWatcher()
			if tc.withSelector {
				inner = selectorLW{srv.ListerWatcher()}
			}
			want := 10_000
			if tc.filtered {
				inner = thirdLW{inner}
				want = 0
				for i := range 10_000 {
					if keepThird(fmt.Sprintf("cm-%05d", i)) {
						want++
					}
				}
			}
			limiterClock := clocktesting.NewFakePassiveClock(time.Now())
			lw := newLimitedLW(inner, limiterClock)
			h := start(t, srv, lw, WithStrategy(ListWatch))
			expectRestart := func(restart string) {
				t.Helper()
				lists, throttled := lw.lists.Load(), lw.throttled.Load()
				_, names, _ := h.restart()
				h.watchStarted()
				if len(names) != want {
					t.Fatalf("%s of %d objects, want %d", restart, len(names), want)
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

// thirdLW keeps the objects of every LIST page whose name keepThird keeps,
// as a client-side shard filter keeps its share of each page. Its watches
// are not filtered: the tests count LISTs.
type thirdLW struct{ toolscacheLW }

func keepThird(name string) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return h.Sum32()%3 == 0
}

func (lw thirdLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
	list, err := lw.toolscacheLW.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	kept := items[:0]
	for _, o := range items {
		if m, err := meta.Accessor(o); err == nil && keepThird(m.GetName()) {
			kept = append(kept, o)
		}
	}
	return list, meta.SetList(list, kept)
}

// A client-side filter that keeps none of the pages it decodes gives the
// sizer no object to measure: the pages still stay within the byte bound,
// as if each object were unsampledObjectBytes, instead of growing to an
// eighth of the collection (one response of 125,000 decoded objects of a
// million) or doubling without end.
func TestPageSizerBoundsPagesBeforeAnyObjectWasSeen(t *testing.T) {
	const n = 1_000_000
	bound := int64(maxPageBytes / unsampledObjectBytes)
	for _, counted := range []bool{false, true} {
		s := newPageSizer(DefaultPageSize, false)
		for attempt := range 2 { // initial list and relist
			p := s.start()
			for listed := int64(0); listed < n; {
				if p.limit > bound {
					t.Fatalf("remainingItemCount=%v, listing %d: a limit of %d after %d objects listed and none kept, want at most %d", counted, attempt, p.limit, listed, bound)
				}
				listed = min(n, listed+p.limit)
				var remaining *int64
				if counted && listed < n {
					remaining = new(n - listed)
				}
				p = s.observe(p, nil, remaining, listed < n)
			}
			s.done(p)
		}
	}
}
