package benchsize

import (
	"flag"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSizes(t *testing.T) {
	short := flag.Lookup("test.short")
	was := short.Value.String()
	defer func() { _ = short.Value.Set(was) }()

	for _, tc := range []struct {
		short string
		want  []int
		n     int
	}{
		{"false", []int{10, 10_000, 100_000}, 100_000},
		{"true", []int{10, ShortObjects}, ShortObjects},
	} {
		if err := short.Value.Set(tc.short); err != nil {
			t.Fatal(err)
		}
		if got := Sizes(10, 10_000, 100_000); !slices.Equal(got, tc.want) {
			t.Errorf("-short=%s: Sizes = %v, want %v", tc.short, got, tc.want)
		}
		if got := N(100_000); got != tc.n {
			t.Errorf("-short=%s: N(100000) = %d, want %d", tc.short, got, tc.n)
		}
	}
}
