// Package benchresults is the schema of hack/bench's results file
// (results.json): hack/bench writes it with Encode, and internal/benchdoc,
// which generates the documentation's figures from it, reads it with Decode
// or ReadFile. No other package declares these types, so the writer and the
// reader cannot drift apart.
//
// Decoding rejects fields the schema does not have, so that a field renamed
// on one side is an error rather than a figure silently read as zero. The
// committed docs/benchmarks/results.json is the compatibility test: it must
// decode with unknown fields disallowed and encode back to the same JSON
// value, so that a change of a field's name or meaning breaks a test before
// it breaks the published figures.
package benchresults
