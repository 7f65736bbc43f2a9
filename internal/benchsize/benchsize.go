// Package benchsize sizes this repository's Go benchmarks: at their full
// object counts normally, and at ShortObjects under `go test -short`, which
// `make test` passes when it runs every benchmark once (`-bench . -benchtime
// 1x`), so that a benchmark of 100,000 or 1,000,000 objects still runs its
// code in CI without costing minutes.
package benchsize

import (
	"slices"
	"testing"
)

// ShortObjects is the object count benchmarks use under -short.
const ShortObjects = 1000

// N returns n, or at most ShortObjects under -short. Call it in the
// benchmark, after flag parsing.
func N(n int) int {
	if testing.Short() {
		return min(n, ShortObjects)
	}
	return n
}

// Sizes returns sizes, each passed through N, without the duplicates N
// makes, in the order given.
func Sizes(sizes ...int) []int {
	var out []int
	for _, n := range sizes {
		if n = N(n); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
