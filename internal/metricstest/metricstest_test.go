package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFind(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g"}, []string{"a", "b"})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "c"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h"})
	reg.MustRegister(g, c, h)
	g.WithLabelValues("1", "x").Set(2)
	g.WithLabelValues("1", "y").Set(3)
	g.WithLabelValues("2", "x").Set(5)
	c.Add(7)
	h.Observe(0.5)
	h.Observe(1.5)

	for _, tc := range []struct {
		name  string
		want  map[string]string
		found int
		sum   float64
	}{
		{"g", nil, 3, 10},
		{"g", map[string]string{"a": "1"}, 2, 5},
		{"g", map[string]string{"a": "1", "b": "y"}, 1, 3},
		{"g", map[string]string{"c": ""}, 0, 0}, // a label the series lack matches none, even empty
		{"c", nil, 1, 7},
		{"missing", nil, 0, 0},
	} {
		got, err := Find(reg, tc.name, tc.want)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.found || Sum(got) != tc.sum {
			t.Errorf("Find(%s, %v): %d series summing to %v, want %d summing to %v", tc.name, tc.want, len(got), Sum(got), tc.found, tc.sum)
		}
	}
	hs, err := Find(reg, "h", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Count != 2 || hs[0].Sum != 2 || hs[0].Value != 2 {
		t.Errorf("histogram: %+v, want one series of count 2, sum 2, value 2", hs)
	}
}
