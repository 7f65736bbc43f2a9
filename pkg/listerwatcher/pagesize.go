package listerwatcher

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// Every LIST page is one request through the client's rate limiter, which
// client-go's default rest.Config sets to a burst of 10 requests, then 5 per
// second. Pages of 500 make a restart of 10,000 objects 20 requests, and the
// limiter holds the last ten of them back for 2 s, where client-go's
// informer sends one LIST (resourceVersion "0" or its last resourceVersion,
// both without a limit, served whole from the watch cache). Larger pages
// cost memory instead: a page is held, decoded, besides the store.
//
// So the pages of a restart are sized to fit the limiter's burst, and the
// memory bounds them:
//   - the first page asks for the default page size (500), unless an earlier
//     restart told how large the collection and its objects are;
//   - from then on the sizer knows the collection's size, from the API
//     server's remainingItemCount (sent for lists without selectors) or from
//     the previous restart, and spreads what remains evenly over
//     targetListRequests LISTs: the smallest pages that finish within the
//     burst, the last of which takes whatever is left (up to the byte
//     bound) in case the collection grew. Without either, each page doubles
//     the last one;
//   - sizes count what the API server lists, which a client-side filter
//     (a sharded informer without server-side shard selectors) thins out
//     before the pages get here;
//   - no page holds more than maxPageBytes of decoded objects (estimated
//     from a sample of the last page that had objects, or from
//     unsampledObjectBytes before one had), or 1/maxPageShare of what the
//     listing keeps where that is more (up to maxPageBytesCap), and no page
//     is smaller than the first: never more requests than the default page
//     size alone would need, and never more memory per page than 16 MiB or
//     2.5% of the store the list fills.
//
// Past the byte bound a list takes more requests than the burst, each one
// past it 200 ms at client-go's defaults: there the memory bound wins over
// the rate limit. The share keeps that to about maxPageShare LISTs for a
// large collection (at 1M objects of 1 KiB, 40 instead of 82), at the same
// cost relative to the store as 16 MiB is to a store of 640 MiB.
const (
	// targetListRequests is the LISTs a restart aims for: client-go's
	// default burst of 10, less the WATCH that follows the list and the
	// watch that failed with 410 before a relist.
	targetListRequests = 8
	// maxPageBytes bounds the decoded objects of one page: 16 MiB is
	// under 2% of a store of a million small objects (about 1 KiB each).
	maxPageBytes = 16 << 20
	// maxPageShare lets a page of a larger collection hold up to
	// 1/maxPageShare (2.5%) of the decoded bytes the listing keeps, and
	// maxPageBytesCap bounds that: one response of at most 64 MiB.
	maxPageShare    = 40
	maxPageBytesCap = 64 << 20
	// sampledObjects is how many objects of each page the size estimate
	// walks, spread over the page.
	sampledObjects = 16
	// unsampledObjectBytes is the decoded size the byte bound assumes
	// before any object was seen (a client-side filter may keep none of
	// the pages it decodes): about a typical Pod's, so that the first
	// pages of large objects stay near maxPageBytes too.
	unsampledObjectBytes = 4 << 10
)

// pageSizer is the page-size policy of a Run: it decides the limit of each
// LIST of a paginated restart from the listing's progress (pageProgress,
// carried by the listing phase) and from what earlier pages and listings
// taught it: the decoded size of an object and the size of the collection.
// Its methods are called from the run's goroutine only.
type pageSizer struct {
	// fixed: WithPageSize was given; every page asks for first.
	fixed bool
	// first is the limit of a restart's first page without knowledge of
	// the collection, and the smallest limit.
	first int64

	// Learned across restarts.
	objectBytes int64 // estimated decoded bytes per object; 0 before any page
	previous    int64 // objects of the last complete listing; -1 before one
}

// pageProgress is how far one listing got: the listing phase carries it
// from page to page, and a new attempt starts a new one.
//
// Limits count the objects the API server lists, and so do expected and
// listed. They differ from the objects received where the ListerWatcher
// filters the pages on the client (a sharded informer on a server without
// shard selectors keeps about 1/N of each page): counting what it kept
// would plan a collection N times too small and send N times the LISTs.
type pageProgress struct {
	expected int64 // objects in the collection, as the server lists it; -1 unknown
	listed   int64 // objects the server listed so far (estimated, see listedBy)
	// received is the objects the ListerWatcher returned so far: against
	// listed, how much of a page a filter keeps.
	received int64
	lists    int   // LIST responses so far
	limit    int64 // the limit of the last LIST sent
}

func newPageSizer(pageSize int64, fixed bool) pageSizer {
	return pageSizer{fixed: fixed, first: pageSize, previous: -1}
}

// start begins a listing and returns its progress, whose limit is the first
// page's.
func (s *pageSizer) start() pageProgress {
	p := pageProgress{expected: s.previous, limit: s.first}
	if !s.fixed && p.expected > 0 && s.objectBytes > 0 {
		p.limit = s.plan(p)
	}
	return p
}

// observe takes in a LIST response of the listing p: its items (sampled
// before the consumer may clear them), its remainingItemCount, nil when the
// server sent none, and whether more pages follow (it had a continue
// token). It returns the progress with the next page's limit.
func (s *pageSizer) observe(p pageProgress, items []runtime.Object, remaining *int64, more bool) pageProgress {
	p.lists++
	p.listed += listedBy(p, int64(len(items)), more)
	p.received += int64(len(items))
	if s.fixed {
		return p
	}
	if remaining != nil && *remaining >= 0 {
		p.expected = p.listed + *remaining
	} else if p.expected >= 0 && p.expected <= p.listed {
		p.expected = -1 // the collection outgrew the previous one's size
	}
	if b := sampleBytes(items); b > 0 {
		s.objectBytes = b
	}
	p.limit = s.plan(p)
	return p
}

// listedBy estimates how many objects the server listed in a page of
// received objects. A page with a continue token was full: the server
// listed its limit, whatever a filter dropped (a server may send fewer, and
// then the estimate runs ahead, which only makes the next pages smaller).
// The last page holds what was left, which the server does not say: its
// received objects are scaled by the share the full pages kept (p holds the
// pages before this one, all of them full).
func listedBy(p pageProgress, received int64, more bool) int64 {
	switch {
	case more:
		return max(p.limit, received)
	case p.received > 0 && p.listed > p.received:
		return min(max(p.limit, received), received*p.listed/p.received)
	default:
		return received
	}
}

// done records that the listing p is complete.
func (s *pageSizer) done(p pageProgress) { s.previous = p.listed }

// plan spreads the objects left over the LISTs left of the target, or
// doubles the last page when the collection's size is unknown, within the
// byte bound and never below the first page's limit.
func (s *pageSizer) plan(p pageProgress) int64 {
	want := 2 * p.limit
	last := false
	if left := p.expected - p.listed; p.expected >= 0 && left > 0 {
		lists := int64(max(1, targetListRequests-p.lists))
		want = (left + lists - 1) / lists
		last = lists == 1
	}
	objectBytes := s.objectBytes
	if objectBytes == 0 {
		objectBytes = unsampledObjectBytes
	}
	bound := s.pageBytes(p) / objectBytes
	if last {
		// The plan's last LIST takes whatever is left, up to the byte
		// bound: a limit only caps the page, and a collection that grew
		// since it was counted, or whose size was estimated through a
		// filter, then needs no LIST past the plan.
		want = bound
	}
	want = min(want, bound)
	return max(want, s.first)
}

// pageBytes is the byte bound of p's next page: maxPageBytes, or
// 1/maxPageShare of the bytes the listing keeps where that is more, up to
// maxPageBytesCap. What it keeps is the collection scaled by the share of
// the listed objects the ListerWatcher returned (a client-side filter keeps
// a fraction, and the store holds only that), known once a page came.
func (s *pageSizer) pageBytes(p pageProgress) int64 {
	if p.expected <= 0 || p.listed <= 0 || p.received <= 0 {
		return maxPageBytes
	}
	kept := p.expected * s.objectBytes / p.listed * p.received
	return min(maxPageBytesCap, max(maxPageBytes, kept/maxPageShare))
}

// sampleBytes estimates the decoded bytes per object of items from up to
// sampledObjects of them spread over the slice; 0 for an empty page.
func sampleBytes(items []runtime.Object) int64 {
	if len(items) == 0 {
		return 0
	}
	step := max(1, len(items)/sampledObjects)
	var sum, n int64
	for i := 0; i < len(items); i += step {
		if items[i] == nil {
			continue
		}
		sum += decodedBytes(items[i])
		n++
	}
	if n == 0 {
		return 0
	}
	return max(1, sum/n)
}
