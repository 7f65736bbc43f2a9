package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/leaninformer/leaninformer/internal/benchdoc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCommittedDocsAreGenerated fails when a figure in the README's or
// docs/benchmarks.md's generated blocks, or the committed chart, is not
// what the committed results file makes: every figure names its run.
func TestCommittedDocsAreGenerated(t *testing.T) {
	var stderr bytes.Buffer
	if rc := run([]string{"--root", "../..", "--check"}, &stderr); rc != 0 {
		t.Fatalf("docgen --check = %d: %s", rc, stderr.String())
	}
}

func TestCheckFindsAStaleBlockAndWriteFixesIt(t *testing.T) {
	root := t.TempDir()
	files, err := benchdoc.Generate("../..", benchdoc.DefaultLayout)
	if err != nil {
		t.Fatal(err)
	}
	l := benchdoc.DefaultLayout
	stale, err := benchdoc.ReplaceBlock(string(files[l.Readme]), benchdoc.HeadlineBlock, "a figure typed by hand")
	if err != nil {
		t.Fatal(err)
	}
	results, err := os.ReadFile(filepath.Join("../..", l.Results))
	if err != nil {
		t.Fatal(err)
	}
	// No chart at all, a stale README block, and docs/benchmarks.md as
	// generated.
	for path, b := range map[string][]byte{l.Results: results, l.Readme: []byte(stale), l.Benchmarks: files[l.Benchmarks]} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stderr bytes.Buffer
	if rc := run([]string{"--root", root, "--check"}, &stderr); rc != 1 || !strings.Contains(stderr.String(), "[README.md docs/benchmarks/memory.svg]") {
		t.Fatalf("docgen --check on an edited README and no chart = %d: %s", rc, stderr.String())
	}
	stderr.Reset()
	if rc := run([]string{"--root", root}, &stderr); rc != 0 {
		t.Fatalf("docgen = %d: %s", rc, stderr.String())
	}
	if rc := run([]string{"--root", root, "--check"}, &stderr); rc != 0 {
		t.Fatalf("docgen --check after docgen = %d: %s", rc, stderr.String())
	}
}
