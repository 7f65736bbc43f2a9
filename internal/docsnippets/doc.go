// Package docsnippets has no code of its own. Its tests hold a copy of every
// fenced Go snippet of the README, docs/ and the package READMEs, compiled
// against the current API, and check that the documents still show what the
// copies hold (see snippets_test.go). Its other tests check that the
// documents' relative links and anchors lead somewhere and that every test,
// fuzz target, benchmark or example they name in backticks is declared
// (links_test.go).
package docsnippets
