package shard

import (
	"slices"
	"strings"
)

// DefaultBuckets is how many equal buckets the hash space is cut into for
// assignment. 256 keeps every member's share within one bucket of an equal
// split (at most 1.1/N of the objects up to 25 members) and its selector at
// most about 65 terms; see the package README for the figures.
const DefaultBuckets = 256

// Assign splits the hash space among members, deterministically: every
// replica that sees the same members computes the same split. The space is
// cut into buckets equal buckets, and buckets go to members by balanced
// rendezvous hashing: every (bucket, member) pair has a score, a hash of
// both; pairs are taken in decreasing score, and a pair gives its bucket to
// its member unless the bucket is taken or the member already holds its
// share (buckets/len(members), one more for the first buckets%len(members)
// members to reach it). A member that leaves frees only its own buckets
// plus the few that the changed shares move, so about 1/N of the space
// moves, against about half of it for an equal split of sorted members.
//
// The result maps each member to its Range; duplicate members count once.
// The scores are part of the protocol between replicas (replicas of
// different versions must agree): they never change.
func Assign(members []string, buckets int) map[string]Range {
	members = slices.Clone(members)
	slices.Sort(members)
	members = slices.Compact(members)
	out := make(map[string]Range, len(members))
	if len(members) == 0 || buckets <= 0 {
		return out
	}
	owners := assignBuckets(members, buckets)
	spans := make(map[int][]span, len(members))
	for b, m := range owners {
		r := bucketRange(b, buckets).spans[0]
		spans[m] = append(spans[m], r)
	}
	for i, m := range members {
		out[m] = normalize(spans[i])
	}
	return out
}

// assignBuckets returns the index in members (sorted, unique) of each
// bucket's owner.
func assignBuckets(members []string, buckets int) []int {
	type pair struct {
		score          uint64
		bucket, member int
	}
	seeds := make([]uint64, len(members))
	for i, m := range members {
		seeds[i] = Hash(m)
	}
	pairs := make([]pair, 0, buckets*len(members))
	for b := range buckets {
		bucketSeed := mix64(uint64(b))
		for i := range members {
			pairs = append(pairs, pair{mix64(seeds[i] ^ bucketSeed), b, i})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case a.bucket != b.bucket:
			return a.bucket - b.bucket
		default:
			return strings.Compare(members[a.member], members[b.member])
		}
	})

	share, extra := buckets/len(members), buckets%len(members)
	owners := make([]int, buckets)
	for i := range owners {
		owners[i] = -1
	}
	held := make([]int, len(members))
	for _, p := range pairs {
		if owners[p.bucket] >= 0 {
			continue
		}
		switch n := held[p.member]; {
		case n < share:
		case n == share && extra > 0:
			extra--
		default:
			continue
		}
		owners[p.bucket] = p.member
		held[p.member]++
	}
	return owners
}

// mix64 is SplitMix64's finalizer: it spreads FNV's weak low bits so that
// scores of neighbouring buckets are independent.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
