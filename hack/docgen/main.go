// Command docgen writes what the documentation quotes of a benchmark run
// from the committed results file of `make bench`
// (docs/benchmarks/results.json): the README's headline table and chart
// blocks, docs/benchmarks.md's full tables and docs/benchmarks/memory.svg.
// `make bench` runs it after the benchmark; run it alone with
// `go run ./hack/docgen` from the repository's root. With --check it
// writes nothing and fails if any of those files differs from what it would
// write.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/leaninformer/leaninformer/internal/benchdoc"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("docgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", ".", "the repository's root")
	check := fs.Bool("check", false, "write nothing; fail if a generated file or block is not what the results file makes")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	files, err := benchdoc.Generate(*root, benchdoc.DefaultLayout)
	if err != nil {
		fmt.Fprintf(stderr, "docgen: %v\n", err)
		return 1
	}
	stale, err := write(*root, files, *check)
	if err != nil {
		fmt.Fprintf(stderr, "docgen: %v\n", err)
		return 1
	}
	if *check && len(stale) > 0 {
		fmt.Fprintf(stderr, "docgen: %v differ from what %s makes; run go run ./hack/docgen\n", stale, benchdoc.DefaultLayout.Results)
		return 1
	}
	return 0
}

// write writes the files that differ (unless check) and returns their
// paths, sorted.
func write(root string, files map[string][]byte, check bool) ([]string, error) {
	var stale []string
	for path, want := range files {
		full := filepath.Join(root, path)
		if have, err := os.ReadFile(full); err == nil && bytes.Equal(have, want) {
			continue
		}
		stale = append(stale, path)
		if !check {
			if err := os.WriteFile(full, want, 0o644); err != nil {
				return nil, err
			}
		}
	}
	slices.Sort(stale)
	return stale, nil
}
