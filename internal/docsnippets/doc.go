// Package docsnippets has no code of its own. Its tests hold a copy of every
// fenced Go snippet of the README, docs/ and the package READMEs, compiled
// against the current API, and check that the documents still show what the
// copies hold (see snippets_test.go).
package docsnippets
