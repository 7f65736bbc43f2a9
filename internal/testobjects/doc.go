// Package testobjects holds the API objects this repository's tests and
// package benchmarks share: the k8s.io/api round-trip fixtures (one object
// of every kind, every field set), objects a kube-apiserver returned for the
// benchmark's RoleBindings, ConfigMaps and Pods, populations of distinct
// objects made from those, and helpers that write or normalise objects.
package testobjects
