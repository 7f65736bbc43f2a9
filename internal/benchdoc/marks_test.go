package benchdoc

import (
	"strings"
	"testing"

	"github.com/leaninformer/leaninformer/internal/benchresults"
)

func TestClientGoRelist(t *testing.T) {
	for ours, want := range map[string]string{
		"ours-stream relist":             "client-go relist",
		"ours-listwatch relist":          "client-go-list relist",
		"ours-stream-churn10 relist":     "client-go-churn10 relist",
		"ours-listwatch-churn100 relist": "client-go-list-churn100 relist",
		// The options are compared with client-go's default informer.
		"ours-stream-encoded-s2 relist":  "client-go relist",
		"ours-listwatch-prefetch relist": "client-go-list relist",
		"ours-listwatch-intern relist":   "client-go-list relist",
		// Not relists of our informer.
		"ours-stream":                    "",
		"client-go relist":               "",
		"ours-streamer relist":           "",
		"ours-pipeline-listwatch relist": "",
	} {
		got, ok := clientGoRelist(ours)
		if got != want || ok != (want != "") {
			t.Errorf("clientGoRelist(%q) = %q, %v; want %q", ours, got, ok, want)
		}
	}
}

// The table derives what was reachable when a relist's peak mark began
// from gctrace's three figures and the baseline, with the range their
// truncation to whole MiB leaves.
func TestMarks(t *testing.T) {
	r := results()
	if got := Marks(r); !strings.Contains(got, "recorded no peak marks") {
		t.Errorf("Marks of a run without peak marks:\n%s", got)
	}
	mark := func(row string, marked, start, end int64) {
		for i := range r.Rows {
			if r.Rows[i].Name == row {
				r.Rows[i].Median.BaselineHeap = 2 << 20
				r.Rows[i].Median.PeakMark = &benchresults.GCMark{StartMiB: start, EndMiB: end, MarkedMiB: marked}
				return
			}
		}
		t.Fatalf("no row %q", row)
	}
	mark("ours-stream relist", 29, 43, 46)
	mark("client-go relist", 52, 65, 68)
	got := Marks(r)
	for _, want := range []string{
		// 29 - 3 - 2 = 24, truly between 23 and 26; steady store 18 MiB;
		// client-go's 52 - 3 - 2 = 47, between 46 and 49.
		"| ours-stream relist | 30.0 | 29 / 3 | 24.5 (23-26) | 18.0 | 1.67 | 1.36 (1.28-1.44) | 0.52 (0.47-0.57) |",
		"| client-go relist | 60.0 | 52 / 3 | 47.5 (46-49) | 20.0 | 3.00 | 2.38 (2.30-2.45) | – |",
		"0123456789ab",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Marks lacks %q:\n%s", want, got)
		}
	}
	r.Rows[len(r.Rows)-1].Median.PeakMark = nil
	if got := Marks(r); strings.Contains(got, "ours-stream relist") || !strings.Contains(got, "| client-go relist |") {
		t.Errorf("Marks shows a row without a peak mark, or drops one with:\n%s", got)
	}
}
