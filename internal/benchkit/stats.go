package benchkit

import (
	"math"
	"slices"
)

// Median returns the median of xs (the mean of the middle two for an even
// count), 0 for none; xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// AxisStep rounds a raw chart axis step up to 1, 2 or 5 times a power of
// ten; 1 for a step that is not positive.
func AxisStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*pow {
			return m * pow
		}
	}
	return 10 * pow
}
