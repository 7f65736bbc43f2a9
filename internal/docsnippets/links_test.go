package docsnippets

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, seen from this package.
var root = filepath.Join("..", "..")

// readDocuments are the Markdown files users read, as globs from the root:
// every one of them has its relative links checked, and the test names it
// puts in backticks.
var readDocuments = []string{
	"README.md",
	"docs/*.md",
	"docs/*/*/*.md", // the recorded runs under docs/benchmarks/ and docs/load/
	"pkg/*/README.md",
	"examples/*/README.md",
	"hack/*/README.md",
	"internal/*/README.md",
}

var (
	// mdLink is the target of [text](target) or ![alt](target), with an
	// optional "title".
	mdLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// htmlLink is the target of an <a href> or <img src>.
	htmlLink = regexp.MustCompile(`\b(?:href|src)="([^"]+)"`)
	// testName is the name of a Go test, fuzz target, benchmark or example.
	testName = regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark|Example)[A-Z0-9_][A-Za-z0-9_]*\b`)
	// testFunc declares one in a _test.go file.
	testFunc = regexp.MustCompile(`(?m)^func (?:\([^)]*\) )?((?:Test|Fuzz|Benchmark|Example)[A-Za-z0-9_]*)\(`)
	// heading is an ATX heading; explicitID an HTML anchor.
	heading    = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)
	explicitID = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// TestEveryRelativeLinkResolves checks that every relative link of the
// documents names a file or folder of the repository and, with an anchor
// into a Markdown file, one of its headings, by GitHub's rule. External
// links are not followed.
func TestEveryRelativeLinkResolves(t *testing.T) {
	anchors := map[string]map[string]bool{} // by file, from the root
	checked := 0
	for _, doc := range documentPaths(t) {
		text := prose(t, doc)
		blank := []byte(text)
		for _, span := range codeSpans(text) {
			for i := span[0]; i < span[1]; i++ {
				if blank[i] != '\n' {
					blank[i] = ' '
				}
			}
		}
		var targets [][]int
		targets = append(targets, mdLink.FindAllSubmatchIndex(blank, -1)...)
		targets = append(targets, htmlLink.FindAllSubmatchIndex(blank, -1)...)
		for _, m := range targets {
			target := text[m[2]:m[3]]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			if msg := resolve(t, doc, target, anchors); msg != "" {
				t.Errorf("%s:%d: link %q: %s", doc, lineOf(text, m[2]), target, msg)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found in the documents")
	}
	t.Logf("%d relative links checked", checked)
}

// skipDirs hold no test of the repository: fuzz corpora, and the ignored
// envtest binaries, scratch and benchmark output.
var skipDirs = map[string]bool{"testdata": true, "bin": true, "tmp": true, "_output": true}

// TestEveryDocumentedTestNameExists checks that every test, fuzz target,
// benchmark or example a document names in backticks is declared in some
// _test.go file of the repository.
func TestEveryDocumentedTestNameExists(t *testing.T) {
	declared := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || skipDirs[d.Name()]) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(src, -1) {
			declared[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range documentPaths(t) {
		text := prose(t, doc)
		for _, span := range codeSpans(text) {
			for _, m := range testName.FindAllStringIndex(text[span[0]:span[1]], -1) {
				name := text[span[0]+m[0] : span[0]+m[1]]
				checked++
				if !declared[name] {
					t.Errorf("%s:%d: %s is declared in no _test.go file", doc, lineOf(text, span[0]+m[0]), name)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no test name found in the documents")
	}
	t.Logf("%d test names checked", checked)
}

// documentPaths expands readDocuments into paths from the root.
func documentPaths(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, g := range readDocuments {
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(g)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			rel, err := filepath.Rel(root, m)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, filepath.ToSlash(rel))
		}
	}
	if len(out) == 0 {
		t.Fatal("no document found")
	}
	return out
}

// prose returns the text of a document (a path from the root) with the
// lines of its fenced blocks left empty, so that offsets keep their lines.
func prose(t *testing.T, doc string) string {
	t.Helper()
	var b strings.Builder
	fence := "" // the opening run of backticks or tildes, while in a fenced block
	scan(t, filepath.Join(root, filepath.FromSlash(doc)), func(_ int, line string) {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
		case strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, trimmed[:1]))]
		default:
			b.WriteString(line)
		}
		b.WriteByte('\n')
	})
	return b.String()
}

// codeSpans returns the [start, end) offsets of text's inline code spans:
// a run of backticks up to the next run of the same length, within one
// paragraph (a run without its match is literal).
func codeSpans(text string) [][2]int {
	var out [][2]int
	run := func(i int) int { // length of the backtick run at i
		n := 0
		for i+n < len(text) && text[i+n] == '`' {
			n++
		}
		return n
	}
	for i := 0; i < len(text); {
		n := run(i)
		if n == 0 {
			i++
			continue
		}
		end := -1
		for j := i + n; j < len(text); {
			if strings.HasPrefix(text[j:], "\n\n") {
				break
			}
			if m := run(j); m > 0 {
				if m == n {
					end = j + m
					break
				}
				j += m
				continue
			}
			j++
		}
		if end < 0 {
			i += n
			continue
		}
		out = append(out, [2]int{i, end})
		i = end
	}
	return out
}

// lineOf returns the line of text holding offset.
func lineOf(text string, offset int) int { return 1 + strings.Count(text[:offset], "\n") }

// resolve returns what is wrong with a link of doc to target, or "".
func resolve(t *testing.T, doc, target string, anchors map[string]map[string]bool) string {
	t.Helper()
	path, anchor, _ := strings.Cut(target, "#")
	file := doc
	if path != "" {
		if strings.HasPrefix(path, "/") {
			return "absolute path: GitHub resolves it against github.com, not the repository"
		}
		file = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(doc), filepath.FromSlash(path))))
		if file == ".." || strings.HasPrefix(file, "../") {
			return "points outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
			return "no such file or folder " + file
		}
	}
	if anchor == "" || !strings.HasSuffix(file, ".md") {
		return ""
	}
	if anchors[file] == nil {
		anchors[file] = headingAnchors(prose(t, file))
	}
	if !anchors[file][anchor] {
		return "no heading of " + file + " has the anchor #" + anchor
	}
	return ""
}

// headingAnchors returns the anchors GitHub gives the headings of a
// document's prose (and its <a name> or <a id> anchors): the heading's text
// in lower case, without its punctuation but '-' and '_', with each space a
// '-', and -1, -2... after the second and later uses.
func headingAnchors(prose string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(prose, "\n") {
		for _, m := range explicitID.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := slugify(m[1])
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

var (
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// slugify turns a heading's Markdown into GitHub's anchor.
func slugify(md string) string {
	text := inlineLink.ReplaceAllString(md, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestHeadingAnchorsAreGitHubs pins the anchor rule on headings whose
// anchors GitHub shows.
func TestHeadingAnchorsAreGitHubs(t *testing.T) {
	got := headingAnchors(strings.Join([]string{
		"### A resource nobody wrote since the last compaction (`--touch=false`)",
		"## client-go's informer metrics",
		"## Sync diagnostics: `SyncStatus()`",
		"## Benchmarks",
		"### Benchmarks",
		"## Benchmarks ##",
		"## See [the design](design.md) — and `snake_case`",
		"    # indented four spaces: code, not a heading",
		`<a name="kept"></a>`,
	}, "\n"))
	want := []string{
		"a-resource-nobody-wrote-since-the-last-compaction---touchfalse",
		"client-gos-informer-metrics",
		"sync-diagnostics-syncstatus",
		"benchmarks", "benchmarks-1", "benchmarks-2",
		"see-the-design--and-snake_case",
		"kept",
	}
	for _, a := range want {
		if !got[a] {
			t.Errorf("no anchor %q among %v", a, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("anchors %v, want only %v", got, want)
	}
}
