package intern

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"
)

// copyOf returns a string equal to s in an allocation of its own.
func copyOf(s string) string { return strings.Clone(s) }

func sameBytes(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// intern interns copies of v until the table holds an entry for it, and
// returns the canonical instance.
func intern(tab *Table, v string) string {
	for range admitAt - 1 {
		tab.String(copyOf(v))
	}
	return tab.String(copyOf(v))
}

func TestStringSharesFromTheThirdOccurrence(t *testing.T) {
	tab := NewTable()
	const v = "rbac.authorization.k8s.io"
	occurrences := []string{copyOf(v), copyOf(v), copyOf(v), copyOf(v)}

	for i, s := range occurrences[:admitAt-1] {
		if got := tab.String(s); !sameBytes(got, s) {
			t.Errorf("occurrence %d of a value was replaced; it should stay as it is (counted, no entry)", i+1)
		}
	}
	if tab.Len() != 0 {
		t.Errorf("table holds %d entries after %d occurrences, want 0", tab.Len(), admitAt-1)
	}
	c3 := tab.String(occurrences[2])
	c4 := tab.String(occurrences[3])
	if c3 != v || c4 != v {
		t.Fatalf("interned values %q, %q; want %q", c3, c4, v)
	}
	if !sameBytes(c3, c4) {
		t.Error("the third and fourth occurrences do not share their bytes")
	}
	if sameBytes(c3, occurrences[2]) || sameBytes(c3, occurrences[3]) {
		t.Error("the canonical instance is one of the caller's strings; the table must keep its own copy")
	}
	if tab.Len() != 1 {
		t.Errorf("table holds %d entries, want 1", tab.Len())
	}
	if got := tab.String(c3); !sameBytes(got, c3) {
		t.Error("interning the canonical instance returned another one")
	}
	if got := tab.String(""); got != "" {
		t.Errorf("String(\"\") = %q", got)
	}
}

// TestStringSurvivesHashCollisions plants an entry for another value under
// the hash of v: String must return v itself, never the other value.
func TestStringSurvivesHashCollisions(t *testing.T) {
	tab := NewTable()
	const v, other = "app.kubernetes.io/name", "app.kubernetes.io/part-of"
	h := maphash.String(tab.seed, v)
	sh := &tab.shards[h%shards]
	canonical := copyOf(other)
	sh.entries[h] = entry{data: weakBytes(canonical), len: len(canonical)}
	for range admitAt + 1 {
		if got := tab.String(copyOf(v)); got != v {
			t.Fatalf("String(%q) = %q under a hash collision", v, got)
		}
	}
	runtime.KeepAlive(canonical)
}

func TestTableForgetsValuesNoOneUses(t *testing.T) {
	tab := NewTable()
	keep := make([]string, 0, 100)
	for i := range 20000 {
		v := fmt.Sprintf("value-nobody-keeps-%08d", i) // 27 bytes: no tiny allocation
		c := intern(tab, v)                            // gets an entry
		if i%200 == 0 {
			keep = append(keep, c)
		}
	}
	if n := tab.Len(); n < 100 {
		t.Fatalf("table holds %d entries before GC, want at least the 100 kept", n)
	}
	runtime.GC()
	tab.Sweep()
	if n := tab.Len(); n != len(keep) {
		t.Errorf("after GC and Sweep the table holds %d entries, want the %d still used", n, len(keep))
	}
	for _, c := range keep {
		if got := tab.String(copyOf(c)); !sameBytes(got, c) {
			t.Fatalf("value %q in use lost its canonical instance across a GC", c)
		}
	}
	runtime.KeepAlive(keep)
}

// TestTableStaysBoundedAsValuesChurn interns ever new values, as objects
// that come and go do, with garbage collections in between, and never
// calls Sweep: the table must sweep by itself.
func TestTableStaysBoundedAsValuesChurn(t *testing.T) {
	tab := NewTable()
	const total, perGC = 200000, 5000
	largest := 0
	for i := range total {
		intern(tab, fmt.Sprintf("churned-value-%010d", i))
		if i%perGC == perGC-1 {
			runtime.GC()
			largest = max(largest, tab.Len())
		}
	}
	// Between two GCs up to perGC values are alive (not yet collected); a
	// shard sweeps when it doubles, and holds minSweep entries at least.
	if bound := 4*perGC + shards*minSweep; largest > bound {
		t.Errorf("table grew to %d entries while %d distinct values churned, want at most %d", largest, total, bound)
	}
}

func TestStringConcurrently(t *testing.T) {
	tab := NewTable()
	values := []string{"default", "kube-system", "Update", "FieldsV1", "apps/v1", "ReplicaSet"}
	results := make([][]string, 8)
	var wg sync.WaitGroup
	for g := range results {
		wg.Go(func() {
			for i := range 3000 {
				v := values[(i+g)%len(values)]
				results[g] = append(results[g], tab.String(copyOf(v)))
			}
		})
	}
	wg.Wait()
	canonical := map[string]string{}
	for _, v := range values {
		canonical[v] = tab.String(copyOf(v))
	}
	// Only the first occurrences of each value, in whichever goroutines,
	// may have been returned as they were given.
	unshared := 0
	for _, rs := range results {
		for _, r := range rs {
			if want := canonical[r]; r != want {
				t.Fatalf("String returned %q, a value it was not given", r)
			} else if !sameBytes(r, want) {
				unshared++
			}
		}
	}
	if unshared > (admitAt-1)*len(values) {
		t.Errorf("%d results do not share the canonical instance, want at most %d (first occurrences)", unshared, (admitAt-1)*len(values))
	}
}

// TestTableForgetsShortValues is TestTableForgetsValuesNoOneUses for values
// under 16 bytes, each canonical copy made beside a small allocation that
// stays alive, as a decoded object's short strings would. Without the race
// detector, which turns the runtime's tiny allocator off (make test runs this
// test without it too), such copies shared a block with the live ones and
// were never forgotten.
func TestTableForgetsShortValues(t *testing.T) {
	tab := NewTable()
	const n = 2000
	alive := make([]*[4]byte, 0, n)
	for i := range n {
		intern(tab, fmt.Sprintf("ns-%05d", i)) // 8 bytes
		alive = append(alive, new([4]byte))
	}
	if got := tab.Len(); got != n {
		t.Fatalf("table holds %d entries, want %d", got, n)
	}
	runtime.GC()
	tab.Sweep()
	if got := tab.Len(); got != 0 {
		t.Errorf("after GC and Sweep the table holds %d of %d short values no object uses", got, n)
	}
	runtime.KeepAlive(alive)
}

// TestStringOfCountsAnObjectOnce: StringOf counts the strings of one UID
// as one object, however often they come; an empty UID counts each call.
func TestStringOfCountsAnObjectOnce(t *testing.T) {
	tab := NewTable()
	const v = "value-of-one-object"
	for range 5 {
		if got := tab.StringOf(copyOf(v), "uid-a"); got != v {
			t.Fatalf("StringOf = %q", got)
		}
	}
	if n := tab.Len(); n != 0 {
		t.Errorf("a value of one object, interned 5 times, got an entry (%d)", n)
	}
	tab.StringOf(copyOf(v), "uid-b")
	c := tab.StringOf(copyOf(v), "uid-c")
	if n := tab.Len(); n != 1 || !sameBytes(c, tab.StringOf(copyOf(v), "")) {
		t.Errorf("after a third object the table holds %d entries, want 1 shared", n)
	}
	const w = "value-of-no-object"
	for range admitAt {
		tab.StringOf(copyOf(w), "")
	}
	if n := tab.Len(); n != 2 {
		t.Errorf("an empty UID did not count each call: %d entries, want 2", n)
	}
}

// TestTableForgetsValuesSeenInFewObjects: values seen in fewer objects than
// admitAt get no entry, and the counts of them a shard keeps are forgotten
// once it has as many as it holds entries (minSweep at least), however many
// such values pass through.
func TestTableForgetsValuesSeenInFewObjects(t *testing.T) {
	tab := NewTable()
	const total = 200000
	largest := 0
	for i := range total {
		tab.StringOf(fmt.Sprintf("once-%010d", i), types.UID(fmt.Sprint("uid-", i)))
		if i%5000 == 4999 {
			counted := 0
			for s := range tab.shards {
				sh := &tab.shards[s]
				sh.mu.Lock()
				counted += len(sh.seen)
				sh.mu.Unlock()
			}
			largest = max(largest, counted)
		}
	}
	if n := tab.Len(); n != 0 {
		t.Fatalf("the table holds %d entries for values each seen in one object, want 0", n)
	}
	if bound := shards * minSweep; largest > bound {
		t.Errorf("the table counted %d values at once while %d passed through, want at most %d", largest, total, bound)
	}
}
