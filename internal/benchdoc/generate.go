package benchdoc

import (
	"fmt"
	"os"
	"path/filepath"
)

// Layout names the files of a repository the generator reads and writes,
// relative to its root.
type Layout struct {
	Results, Readme, Benchmarks, Chart string
}

// DefaultLayout is this repository's.
var DefaultLayout = Layout{
	Results:    "docs/benchmarks/results.json",
	Readme:     "README.md",
	Benchmarks: "docs/benchmarks.md",
	Chart:      "docs/benchmarks/memory.svg",
}

// Generate returns the contents every file of l under root should have,
// by path, as generated from the results file: the README and
// docs/benchmarks.md with their blocks replaced, and the chart.
func Generate(root string, l Layout) (map[string][]byte, error) {
	r, err := Load(filepath.Join(root, l.Results))
	if err != nil {
		return nil, err
	}
	chart, err := MemoryChart(r)
	if err != nil {
		return nil, err
	}
	chartFromReadme, err := filepath.Rel(filepath.Dir(l.Readme), l.Chart)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{l.Chart: chart}
	for path, blocks := range map[string]map[string]string{
		l.Readme:     {HeadlineBlock: Headline(r), ChartBlock: Chart(r, filepath.ToSlash(chartFromReadme))},
		l.Benchmarks: {RunBlock: Run(r), GoalsBlock: Goals(r), MarksBlock: Marks(r), TablesBlock: Tables(r), VariantsBlock: Variants(r)},
	} {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return nil, err
		}
		doc := string(b)
		for name, body := range blocks {
			if doc, err = ReplaceBlock(doc, name, body); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		out[path] = []byte(doc)
	}
	return out, nil
}
