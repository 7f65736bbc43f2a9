package shard

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// atoms cuts the hash space into 32 buckets; a uint32 mask is a set of them.
const atoms = 32

func fromMask(m uint32) Range {
	var r Range
	for i := range atoms {
		if m&(1<<i) != 0 {
			r = r.Union(bucketRange(i, atoms))
		}
	}
	return r
}

func TestRangeSetOperationsAgainstMasks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		a, b := rng.Uint32(), rng.Uint32()
		if rng.IntN(8) == 0 {
			a = math.MaxUint32
		}
		ra, rb := fromMask(a), fromMask(b)
		for _, tc := range []struct {
			op   string
			got  Range
			want uint32
		}{
			{"union", ra.Union(rb), a | b},
			{"intersect", ra.Intersect(rb), a & b},
			{"minus", ra.Minus(rb), a &^ b},
		} {
			if want := fromMask(tc.want); !tc.got.Equal(want) {
				t.Fatalf("%032b %s %032b = %s, want %s", a, tc.op, b, tc.got, want)
			}
		}
		if got, want := ra.Overlaps(rb), a&b != 0; got != want {
			t.Fatalf("%032b overlaps %032b = %v, want %v", a, b, got, want)
		}
		if got, want := ra.Fraction(), float64(bits.OnesCount32(a))/atoms; math.Abs(got-want) > 1e-12 {
			t.Fatalf("fraction of %032b = %v, want %v", a, got, want)
		}
		for range 8 {
			h := rng.Uint64()
			if got, want := ra.Contains(h), a&(1<<bucketOf(h, atoms)) != 0; got != want {
				t.Fatalf("%032b contains %016x = %v, want %v", a, h, got, want)
			}
		}
		back, err := ParseRange(ra.String())
		if err != nil || !back.Equal(ra) {
			t.Fatalf("ParseRange(%q) = %s, %v", ra.String(), back, err)
		}
	}
}

func TestRangeEdges(t *testing.T) {
	top := NewRange(math.MaxUint64, 0)
	if !top.Contains(math.MaxUint64) || top.Contains(math.MaxUint64-1) {
		t.Errorf("the top hash alone: %s", top)
	}
	if got := top.String(); got != "0xffffffffffffffff-0x10000000000000000" {
		t.Errorf("top.String() = %q", got)
	}
	if !NewRange(5, 5).Empty() || !NewRange(6, 5).Empty() {
		t.Error("a range that ends where it starts is empty")
	}
	if !NewRange(0, 0).Equal(FullRange()) || FullRange().Terms() != 1 || FullRange().Fraction() != 1 {
		t.Error("NewRange(0, 0) is everything, in one term")
	}
	if !FullRange().Minus(FullRange()).Empty() || !(Range{}).Union(Range{}).Empty() {
		t.Error("empty results")
	}
	if got := NewRange(0, 10).Union(NewRange(10, 20)); !got.Equal(NewRange(0, 20)) || got.Terms() != 1 {
		t.Errorf("adjacent intervals merge: %s", got)
	}
	if got := FullRange().Minus(NewRange(10, 20)); got.Terms() != 2 || got.Contains(15) || !got.Contains(9) || !got.Contains(20) {
		t.Errorf("a hole: %s", got)
	}
}

func TestParseRangeRejectsBadInput(t *testing.T) {
	for _, in := range []string{
		"0x0-0x8000000000000000",                 // short bound: the API server rejects it too
		"0x0000000000000000",                     // no end
		"0x8000000000000000-0x0000000000000000",  // reversed
		"0x0000000000000000-0x0000000000000000",  // empty
		"0x000000000000000g-0x1000000000000000",  // not hex
		"0x0000000000000000-0x20000000000000000", // past the top
		"0x0000000000000000-0x1000000000000000,", // empty interval
	} {
		if r, err := ParseRange(in); err == nil {
			t.Errorf("ParseRange(%q) = %s, want an error", in, r)
		}
	}
}

func TestSelectorFormat(t *testing.T) {
	if got, want := FullRange().Selector(KeyUID), "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"; got != want {
		t.Errorf("FullRange().Selector = %q, want %q", got, want)
	}
	two := NewRange(0, 1<<62).Union(NewRange(1<<63, 0))
	want := "shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000') || " +
		"shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"
	if got := two.Selector(KeyNamespace); got != want {
		t.Errorf("two terms: %q, want %q", got, want)
	}
	if got := (Range{}).Selector(KeyUID); got != "" {
		t.Errorf("the empty range has no selector, got %q", got)
	}
}

// TestClientFilterMatchesServerSelector checks that Range.Contains of Hash
// agrees with apimachinery's shard selector (the code the API server
// filters with) on the selector terms the Range writes, for random UIDs,
// namespaces and ranges.
func TestClientFilterMatchesServerSelector(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		r := fromMask(rng.Uint32())
		if rng.IntN(4) == 0 { // arbitrary bounds, not bucket-aligned
			r = NewRange(rng.Uint64(), rng.Uint64())
		}
		for _, key := range []Key{KeyUID, KeyNamespace} {
			var reqs []sharding.ShardRangeRequirement
			for term := range strings.SplitSeq(r.Selector(key), " || ") {
				if term == "" {
					continue
				}
				// shardRange(KEY, 'START', 'END')
				parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(term, "shardRange("), ")"), ", ")
				reqs = append(reqs, sharding.ShardRangeRequirement{
					Key: parts[0], Start: strings.Trim(parts[1], "'"), End: strings.Trim(parts[2], "'"),
				})
			}
			sel := sharding.NewSelector(reqs...)
			for range 20 {
				obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: uuid.NewUUID(), Namespace: "ns-" + string(uuid.NewUUID())[:8]}}
				h, err := key.HashOf(obj)
				if err != nil {
					t.Fatal(err)
				}
				server, err := sel.Matches(obj)
				if err != nil {
					t.Fatal(err)
				}
				if r.Empty() {
					server = false // no selector: the member lists nothing
				}
				if got := r.Contains(h); got != server {
					t.Fatalf("%s %s of %v: client says %v, server selector %v (selector %q)", key, r, obj.ObjectMeta, got, server, r.Selector(key))
				}
			}
		}
	}
}

func TestBucketsPartitionTheSpace(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 7, 16, 256, 1000, MaxBuckets} {
		var all Range
		prevEnd := uint64(0)
		for i := range n {
			b := bucketRange(i, n)
			if b.spans[0].first != prevEnd {
				t.Fatalf("n=%d: bucket %d starts at %x, the previous ended before %x", n, i, b.spans[0].first, prevEnd)
			}
			prevEnd = b.spans[0].last + 1
			if n <= 1000 {
				all = all.Union(b)
			}
		}
		if n <= 1000 && !all.Equal(FullRange()) {
			t.Fatalf("n=%d: buckets cover %s", n, all)
		}
		for range 1000 {
			h := rng.Uint64()
			if !bucketRange(bucketOf(h, n), n).Contains(h) {
				t.Fatalf("n=%d: %x is not in its bucket %d", n, h, bucketOf(h, n))
			}
		}
	}
}

func TestKeyValues(t *testing.T) {
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "9b2c"}}
	if v, _ := KeyUID.ValueOf(obj); v != "9b2c" {
		t.Errorf("uid: %q", v)
	}
	if v, _ := KeyNamespace.ValueOf(obj); v != "" {
		t.Errorf("a cluster-scoped object's namespace is empty: %q", v)
	}
	if _, err := KeyUID.HashOf("not an object"); err == nil {
		t.Error("hashing a non-object succeeds")
	}
	if got, want := Hash("test-uid-123"), "0x"+sharding.HashField("test-uid-123"); bound(got, false) != want {
		t.Errorf("Hash = %s, the API server's %s", bound(got, false), want)
	}
}

// TestHashSpread: random UUIDs (what the API server gives objects) spread
// evenly over the hash space, so UID ranges hold shares of objects close
// to their shares of the space. Names that differ only in their last
// characters do not: FNV-1a's high bits barely change with the last bytes,
// which matters for KeyNamespace (see the README).
func TestHashSpread(t *testing.T) {
	const n = 30000
	quarters := [4]int{}
	for range n {
		quarters[Hash(string(uuid.NewUUID()))>>62]++
	}
	for i, c := range quarters {
		if share := float64(c) / n; share < 0.23 || share > 0.27 {
			t.Errorf("quarter %d of the hash space holds %.3f of %d random UIDs", i, share, n)
		}
	}
	t.Logf("random UIDs per quarter of the hash space: %v", quarters)
	for _, format := range []string{"team-%d", "ns-%03d"} {
		buckets := map[int]int{}
		for i := range 1000 {
			buckets[bucketOf(Hash(fmt.Sprintf(format, i)), DefaultBuckets)]++
		}
		t.Logf("%q for 0..999: %d of %d buckets used", format, len(buckets), DefaultBuckets)
	}
}

// The selector a member's range makes stays within what the API server
// accepts (100,000 characters) for every bucket count WithBuckets allows:
// with two members, the worst case, and either key.
func TestSelectorsFitTheServersBoundAtMaxBuckets(t *testing.T) {
	for _, members := range [][]string{{"a", "b"}, {"ctl-replica-0", "ctl-replica-1"}, {"a", "b", "c"}} {
		for _, r := range Assign(members, MaxBuckets) {
			for _, key := range []Key{KeyUID, KeyNamespace} {
				if n := len(r.Selector(key)); n > 100_000*3/4 {
					t.Errorf("members %v, %d buckets: a %d-span range's selector by %s has %d characters, want well under 100,000", members, MaxBuckets, r.Terms(), key, n)
				}
			}
		}
	}
}
