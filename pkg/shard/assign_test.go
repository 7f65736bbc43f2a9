package shard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// podNames returns n names like a Deployment's pods.
func podNames(rng *rand.Rand, n int) []string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		b.WriteString("controller-7d9f8c6b5-")
		for range 5 {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		out[i] = b.String()
	}
	return out
}

func TestAssignPartitionsEvenly(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, buckets := range []int{1, 16, 256, 1000} {
		for n := 1; n <= 30; n++ {
			members := podNames(rng, n)
			got := Assign(members, buckets)
			shuffled := slices.Clone(members)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			again := Assign(append(shuffled, members[0]), buckets) // order and duplicates do not matter
			var all Range
			for _, m := range members {
				r := got[m]
				if !r.Equal(again[m]) {
					t.Fatalf("B=%d N=%d: %s gets %s, and %s with the members reordered", buckets, n, m, r, again[m])
				}
				if all.Overlaps(r) {
					t.Fatalf("B=%d N=%d: %s overlaps another member's range", buckets, n, m)
				}
				all = all.Union(r)
				held := int(r.Fraction()*float64(buckets) + 0.5)
				if share := buckets / n; held < share || held > share+1 {
					t.Fatalf("B=%d N=%d: %s holds %d buckets, want %d or %d", buckets, n, m, held, share, share+1)
				}
			}
			if !all.Equal(FullRange()) {
				t.Fatalf("B=%d N=%d: the members hold %s, not everything", buckets, n, all)
			}
		}
	}
	if got := Assign(nil, DefaultBuckets); len(got) != 0 {
		t.Errorf("no members: %v", got)
	}
}

// equalSplit is the simplest deterministic assignment, for comparison:
// member i of the sorted members gets the i-th of N equal slices.
func equalSplit(members []string) map[string]Range {
	members = slices.Clone(members)
	slices.Sort(members)
	out := make(map[string]Range, len(members))
	for i, m := range members {
		out[m] = NewRange(bucketStart(i, len(members)), bucketStart(i+1, len(members)))
	}
	return out
}

// moved is the share of the hash space whose owner differs between two
// assignments (a member missing from one owns nothing there).
func moved(before, after map[string]Range) float64 {
	var f float64
	for m, r := range before {
		f += r.Minus(after[m]).Fraction()
	}
	return f
}

// movementFigures measures, for n members, how much of the hash space
// changes owner when one member leaves (every member in turn, over trials
// random sets of names): the mean and the largest share. A join moves
// exactly what the reverse leave moves, the assignment being a function of
// the members.
func movementFigures(n, trials int, assign func([]string) map[string]Range) (mean, worst float64) {
	rng := rand.New(rand.NewPCG(uint64(n), 9))
	var sum float64
	for range trials {
		members := podNames(rng, n)
		before := assign(members)
		for i := range members {
			rest := slices.Delete(slices.Clone(members), i, i+1)
			m := moved(before, assign(rest))
			sum += m
			worst = max(worst, m)
		}
	}
	return sum / float64(trials*n), worst
}

// TestAssignmentFigures prints the figures of the package README (run
// with -v) and checks the claims made there: balanced rendezvous moves
// little more than the leaving member's own share, an equal split of
// sorted members much more; every share is within 1.1/N up to 25 members
// with the default 256 buckets; selectors stay short.
func TestAssignmentFigures(t *testing.T) {
	const trials = 50
	rendezvous := func(m []string) map[string]Range { return Assign(m, DefaultBuckets) }
	t.Logf("%3s %7s %21s %21s %9s %9s %11s", "N", "1/N", "rendezvous mean/max", "equal split mean/max", "max share", "max terms", "max chars")
	for n := 2; n <= 10; n++ {
		rMean, rWorst := movementFigures(n, trials, rendezvous)
		eMean, eWorst := movementFigures(n, trials, equalSplit)
		var share float64
		var terms, chars int
		rng := rand.New(rand.NewPCG(uint64(n), 10))
		for range trials {
			for _, r := range rendezvous(podNames(rng, n)) {
				share = max(share, r.Fraction()*float64(n))
				terms = max(terms, r.Terms())
				chars = max(chars, len(r.Selector(KeyUID)))
			}
		}
		t.Logf("%3d %7.3f %10.3f / %-8.3f %10.3f / %-8.3f %8.3f/N %9d %11d", n, 1/float64(n), rMean, rWorst, eMean, eWorst, share, terms, chars)
		if limit := 1.35 / float64(n); rMean > limit {
			t.Errorf("N=%d: rendezvous moves %.3f on average when one member leaves, want at most 1.35/N = %.3f", n, rMean, limit)
		}
		if n > 2 && eMean < rMean {
			t.Errorf("N=%d: the equal split moves less (%.3f) than rendezvous (%.3f)", n, eMean, rMean)
		}
		if share > 1.1 {
			t.Errorf("N=%d: a member holds %.3f/N of the space, want at most 1.1/N", n, share)
		}
	}
	for n := 11; n <= 25; n++ {
		for _, r := range Assign(podNames(rand.New(rand.NewPCG(uint64(n), 11)), n), DefaultBuckets) {
			if share := r.Fraction() * float64(n); share > 1.1 {
				t.Errorf("N=%d: a member holds %.3f/N of the space, want at most 1.1/N", n, share)
			}
		}
	}
}

func BenchmarkAssign(b *testing.B) {
	for _, n := range []int{3, 10, 100} {
		members := podNames(rand.New(rand.NewPCG(1, 1)), n)
		b.Run(fmt.Sprint("members=", n), func(b *testing.B) {
			for b.Loop() {
				Assign(members, DefaultBuckets)
			}
		})
	}
}
