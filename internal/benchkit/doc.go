// Package benchkit holds what the benchmark programs under hack/ share: the
// process's CPU time and peak RSS, a description of the machine, a progress
// line, medians and a bounded worker pool. Heap figures come from package
// memstat.
package benchkit
