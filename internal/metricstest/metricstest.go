// Package metricstest reads series back from a Prometheus registry, for
// tests that check what an informer, a cache or a shard member published.
package metricstest

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Series is one gathered series of a metric.
type Series struct {
	Labels map[string]string
	// Value is a counter's or gauge's value, a histogram's sample count.
	Value float64
	// Count and Sum are a histogram's sample count and sum.
	Count uint64
	Sum   float64
}

// Find gathers g and returns the series of metric name whose labels include
// every label of want (nil: every series), in the order g gathers them.
func Find(g prometheus.Gatherer, name string, want map[string]string) ([]Series, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering metrics: %w", err)
	}
	var out []Series
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			s := Series{Labels: make(map[string]string, len(m.GetLabel()))}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got, ok := s.Labels[k]; !ok || got != v {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				s.Value = m.GetCounter().GetValue()
			case m.Gauge != nil:
				s.Value = m.GetGauge().GetValue()
			case m.Histogram != nil:
				s.Count, s.Sum = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				s.Value = float64(s.Count)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// Sum adds up the values of series.
func Sum(series []Series) float64 {
	var sum float64
	for _, s := range series {
		sum += s.Value
	}
	return sum
}
