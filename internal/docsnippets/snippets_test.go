package docsnippets

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// documents are the files whose fenced Go blocks users copy.
var documents = []string{
	"README.md",
	"docs/usage.md",
	"docs/sharding.md",
	"docs/observability.md",
	"docs/compact-store.md",
	"pkg/cache/README.md",
	"pkg/codec/README.md",
	"pkg/informer/README.md",
	"pkg/listerwatcher/README.md",
	"pkg/shard/README.md",
	"examples/operator/README.md",
}

// mirrors are this package's files holding the compiled copies.
var mirrors = []string{"crcache_test.go", "toolscache_test.go", "lcache_test.go"}

type snippet struct {
	where string   // file:line
	doc   string   // the document it is in, or is a copy of
	lines []string // normalized
}

// normalize trims a line and collapses its runs of blanks, so that gofmt's
// indentation and comment alignment do not count.
func normalize(line string) string {
	return strings.Join(strings.Fields(line), " ")
}

// TestEveryDocumentedSnippetCompiles checks that every fenced Go block of
// the documents is, line for line, one of the BEGIN/END regions of this
// package's files, which the compiler checks against the current API. An
// ellipsis (… or ...) in a document's line stands for anything on that
// line; import lines are left out (the files import what the snippets use).
func TestEveryDocumentedSnippetCompiles(t *testing.T) {
	var docs, copies []snippet
	for _, doc := range documents {
		docs = append(docs, blocks(t, filepath.Join("..", "..", doc), doc)...)
	}
	for _, m := range mirrors {
		copies = append(copies, regions(t, m)...)
	}
	if len(docs) == 0 {
		t.Fatal("no fenced Go block found in the documents")
	}
	used := make([]bool, len(copies))
	for _, d := range docs {
		found := false
		for i, c := range copies {
			if !used[i] && c.doc == d.doc && matches(d.lines, c.lines) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("%s: this Go snippet has no copy in internal/docsnippets: copy it between // BEGIN %s and // END, and make it compile:\n%s",
				d.where, d.doc, strings.Join(d.lines, "\n"))
		}
	}
	for i, c := range copies {
		if !used[i] {
			t.Errorf("%s: no fenced Go block of %s reads like this copy any more: update or delete it:\n%s",
				c.where, c.doc, strings.Join(c.lines, "\n"))
		}
	}
}

// matches says whether a document's lines are those of a copy.
func matches(doc, copied []string) bool {
	if len(doc) != len(copied) {
		return false
	}
	for i, line := range doc {
		parts := strings.FieldsFunc(strings.ReplaceAll(line, "...", "…"), func(r rune) bool { return r == '…' })
		for j, p := range parts {
			parts[j] = regexp.QuoteMeta(p)
		}
		pattern := strings.Join(parts, ".*")
		if strings.HasPrefix(line, "…") || strings.HasPrefix(line, "...") {
			pattern = ".*" + pattern
		}
		if strings.HasSuffix(line, "…") || strings.HasSuffix(line, "...") {
			pattern += ".*"
		}
		if !regexp.MustCompile("^" + pattern + "$").MatchString(copied[i]) {
			return false
		}
	}
	return true
}

func blocks(t *testing.T, path, doc string) []snippet {
	t.Helper()
	var out []snippet
	var cur *snippet
	scan(t, path, func(n int, line string) {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```go":
			cur = &snippet{where: doc + ":" + itoa(n), doc: doc}
		case cur != nil && strings.HasPrefix(trimmed, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil && trimmed != "" && !strings.HasPrefix(trimmed, "import "):
			cur.lines = append(cur.lines, normalize(line))
		}
	})
	if cur != nil {
		t.Fatalf("%s: unterminated Go block", cur.where)
	}
	return out
}

func regions(t *testing.T, path string) []snippet {
	t.Helper()
	var out []snippet
	var cur *snippet
	scan(t, path, func(n int, line string) {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "// BEGIN "):
			cur = &snippet{where: path + ":" + itoa(n), doc: strings.TrimPrefix(trimmed, "// BEGIN ")}
		case trimmed == "// END" && cur != nil:
			out = append(out, *cur)
			cur = nil
		case cur != nil && trimmed != "":
			cur.lines = append(cur.lines, normalize(line))
		}
	})
	if cur != nil {
		t.Fatalf("%s: BEGIN without END", cur.where)
	}
	return out
}

func scan(t *testing.T, path string, line func(n int, text string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line(n, s.Text())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
