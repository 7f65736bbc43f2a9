package benchresults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// committed is the results file make bench published: the schema's
// compatibility test.
const committed = "../../docs/benchmarks/results.json"

// TestCommittedFileRoundTrips fails when the schema no longer has a field
// the committed file has (Decode rejects it), or has one the file lacks or
// spells differently (the encoded file is a different JSON value).
func TestCommittedFileRoundTrips(t *testing.T) {
	want, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadFile(committed)
	if err != nil {
		t.Fatalf("the committed results do not decode with the schema: %v", err)
	}
	if len(r.Rows) == 0 || len(r.AllRuns) == 0 || r.Provenance.Commit == "" {
		t.Fatalf("the committed results decode to no rows, runs or commit: %d rows, %d runs, commit %q", len(r.Rows), len(r.AllRuns), r.Provenance.Commit)
	}
	got, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if path, diff := firstDifference(t, want, got); diff != "" {
		t.Errorf("the committed results encode to a different JSON value: at %s: %s", path, diff)
	} else if !bytes.Equal(got, want) {
		t.Error("the committed results encode to the same JSON value but not to the same bytes: Encode no longer writes the committed file's layout")
	}
}

func TestDecodeRejectsWhatTheSchemaLacks(t *testing.T) {
	file, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	rename := func(old, replacement string) func() []byte {
		return func() []byte {
			if !bytes.Contains(file, []byte(old)) {
				t.Fatalf("the committed results have no %s", old)
			}
			return bytes.Replace(file, []byte(old), []byte(replacement), 1)
		}
	}
	for name, tc := range map[string]struct {
		bad  func() []byte
		want string
	}{
		"renamed top-level field": {rename(`"totalObjects":`, `"objectsInCluster":`), `unknown field "objectsInCluster"`},
		"renamed phase field":     {rename(`"peakLiveBytes":`, `"peakLiveHeapBytes":`), `unknown field "peakLiveHeapBytes"`},
		"renamed timeline field":  {rename(`"heapKiB":`, `"heapKB":`), `unknown field "heapKB"`},
		"renamed request count":   {rename(`"StreamingWatches":`, `"WatchLists":`), `unknown field "WatchLists"`},
		"data after the value":    {func() []byte { return append(slices.Clone(file), "{}\n"...) }, "data after"},
	} {
		if _, err := Decode(bytes.NewReader(tc.bad())); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Decode = %v, want an error with %q", name, err, tc.want)
		}
	}
}

func TestEncodeKeepsNumberArraysOnOneLine(t *testing.T) {
	r := &Results{AllRuns: []Phase{{Row: "x", Timeline: &Timeline{Ms: []int64{0, 20}, HeapKiB: []int64{-3, 1e6}, LiveKiB: []int64{1, 2}, Marks: []Mark{{Name: MarkSynced, Ms: 20}}}}}}
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"heapKiB": [-3,1000000]`)) || !bytes.Contains(b, []byte("\n  \"allRuns\"")) || !bytes.HasSuffix(b, []byte("}\n")) {
		t.Errorf("results.json:\n%s", b)
	}
	back, err := Decode(bytes.NewReader(b))
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Errorf("the encoded results do not decode to what was encoded: %v\n%+v", err, back)
	}
}

func TestRowAndMemLimits(t *testing.T) {
	r := &Results{MemLimit: 64 << 20, Rows: []Row{{Name: "a", Runs: 1}, {Name: "a", MemLimit: 64 << 20, Runs: 2}}}
	if row, ok := r.Row("a", 64<<20); !ok || row.Runs != 2 {
		t.Errorf("Row(a, limit) = %+v, %v; want the limited row", row, ok)
	}
	if _, ok := r.Row("b", 0); ok {
		t.Error("Row found a row the results lack")
	}
	if got := r.MemLimits(); !slices.Equal(got, []int64{0, 64 << 20}) {
		t.Errorf("MemLimits = %v", got)
	}
	if got := (&Results{}).MemLimits(); !slices.Equal(got, []int64{0}) {
		t.Errorf("MemLimits without a limit = %v", got)
	}
}

// firstDifference decodes a and b as generic JSON values, numbers kept as
// written, and returns the path of the first place they differ and how,
// or "" for none.
func firstDifference(t *testing.T, a, b []byte) (path, diff string) {
	t.Helper()
	generic := func(data []byte) any {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	return compare("$", generic(a), generic(b))
}

func compare(path string, a, b any) (string, string) {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return path, fmt.Sprintf("an object became %T", b)
		}
		keys := make([]string, 0, len(a)+len(bm))
		for k := range a {
			keys = append(keys, k)
		}
		for k := range bm {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			av, inA := a[k]
			bv, inB := bm[k]
			switch {
			case !inB:
				return path + "." + k, "field dropped"
			case !inA:
				return path + "." + k, "field added"
			}
			if p, d := compare(path+"."+k, av, bv); d != "" {
				return p, d
			}
		}
		return "", ""
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return path, fmt.Sprintf("an array of %d became %v", len(a), b)
		}
		for i := range a {
			if p, d := compare(fmt.Sprintf("%s[%d]", path, i), a[i], bs[i]); d != "" {
				return p, d
			}
		}
		return "", ""
	}
	if !reflect.DeepEqual(a, b) {
		return path, fmt.Sprintf("%v became %v", a, b)
	}
	return "", ""
}
