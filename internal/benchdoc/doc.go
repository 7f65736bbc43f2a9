// Package benchdoc turns a results file of hack/bench (results.json) into
// the documentation that quotes it: the README's headline table and chart,
// docs/benchmarks.md's goals, full tables and relists' peak marks, and the
// memory-over-time chart. It reads only the file, whose schema is package
// benchresults, so that every generated figure names the command, commit
// and date it came from; hack/docgen is its command.
package benchdoc
