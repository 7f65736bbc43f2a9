package benchdoc

import (
	"fmt"
	"strings"
)

// The markers around a generated block; name is the block's name.
func beginMarker(name string) string { return "<!-- BEGIN GENERATED: " + name + " -->" }
func endMarker(name string) string   { return "<!-- END GENERATED: " + name + " -->" }

// ReplaceBlock returns doc with the text between the markers of block name
// replaced by body; it fails unless doc has each marker exactly once, in
// order, so that a document without the block is never silently left
// stale.
func ReplaceBlock(doc, name, body string) (string, error) {
	begin, end := beginMarker(name), endMarker(name)
	if n, m := strings.Count(doc, begin), strings.Count(doc, end); n != 1 || m != 1 {
		return "", fmt.Errorf("want one %q and one %q, found %d and %d", begin, end, n, m)
	}
	i := strings.Index(doc, begin) + len(begin)
	j := strings.Index(doc, end)
	if j < i {
		return "", fmt.Errorf("%q comes before %q", end, begin)
	}
	return doc[:i] + "\n" + strings.TrimSpace(body) + "\n" + doc[j:], nil
}

// Block returns the text between the markers of block name, as
// ReplaceBlock writes it.
func Block(doc, name string) (string, error) {
	begin, end := beginMarker(name), endMarker(name)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no block %q", name)
	}
	return doc[i+len(begin) : j], nil
}
