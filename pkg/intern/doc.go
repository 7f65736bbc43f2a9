// Package intern makes a store of API objects smaller by sharing their
// repeated strings.
//
// Thousands of objects in an informer's store repeat the same strings:
// namespaces, label and annotation keys and values, owner references,
// managedFields' managers, operations and API versions, RBAC subjects' kinds
// and API groups, container images, condition types, ... Each decoded object
// holds its own copy of every one of them. A Table replaces each such string
// by one canonical instance, in place, as objects enter the store; decoders
// grow slices by appending, so Object also drops their spare capacity.
//
// The objects stay ordinary API objects: strings are immutable, so sharing
// their bytes is invisible to DeepCopy, equality, encoding and handlers.
// Byte slices are not shared (see Table.Object): to share managedFields'
// FieldsV1 as well, build with apimachinery's fieldsv1string build tag,
// which stores FieldsV1 as an immutable interned string.
//
// The table holds its strings weakly and forgets them once no object uses
// them, so it stays bounded as objects churn. A value is shared from the
// third object that has it on: values that only one or two objects have
// (names, UIDs, IPs) cost no entry. Objects are told apart by UID, so the
// versions of one object (a list, then its updates and relists) and a
// value it holds several times (a pod's IP) count once.
//
// informer.WithInterning turns it on for this project's informer; for
// client-go's, set the table's Transform as the informer's transform.
package intern
