// Package shard splits a controller's objects among its replicas: each
// replica (a Member) holds and renews its own coordination.k8s.io/v1 Lease,
// finds the others by listing and watching the Leases labelled with the
// controller's name, and serves the Range of the 64-bit FNV-1a hash space
// that Assign gives it over the live members. Informers restrict
// themselves to that range (see informer.WithShard) with the API server's
// shard selector, and Reconciler keeps a replica from reconciling what it
// does not serve.
//
// # Exclusive ownership
//
// A Member publishes in its Lease (annotation AnnotationRange) the range it
// serves or is about to serve. It shrinks at once when the assignment says
// so, keeping published only what work in flight (begun with Begin) still
// touches, until that work has ended. It grows only into hashes no other
// live member publishes: it writes the claim, reads the group again with a
// consistent LIST, and serves what no other live Lease publishes in that
// read, so of two racing claimants the later writer always sees the
// earlier. A Lease is live, to each observer, until its duration has passed
// on the observer's own clock since the observer first saw its current
// version (resourceVersion and renewTime): no two clocks are compared. A
// member that cannot renew stops serving, and cancels its work's contexts,
// a renew deadline after it sent its last acknowledged renewal, before
// anyone can see its Lease expire. A clean stop publishes an empty range,
// then deletes the Lease; a finalizer keeps anyone else from deleting the
// Lease of a live member.
//
// The guarantee holds for work that ends within the lease duration minus
// the renew deadline after its context is cancelled. A process that is
// paused as a whole (SIGSTOP, a frozen VM) with work in flight can break
// it, as it breaks leader election.
//
// # The server side (KEP-5866)
//
// What Kubernetes v1.37's API server (k8s.io/apiserver/pkg/sharding and
// pkg/storage) does with ListOptions.ShardSelector, read from its source:
//
//   - The selector is only read when the ShardedListAndWatch feature gate
//     (alpha since v1.36, off by default) is on. A server without the gate
//     ignores the field: it lists and watches everything, without error.
//   - Terms are shardRange(FIELD, 'START', 'END') joined by ||, nothing
//     else; FIELD is object.metadata.uid or object.metadata.namespace, the
//     same in every term. Bounds are 0x-prefixed 16-digit lowercase hex
//     (the API reference's '0x0' is rejected), START inclusive, END
//     exclusive, up to 0x10000000000000000. The server compares them as
//     strings of equal length, so a shorter or upper-case bound would be
//     misread: the parser rejects both. There is no limit on the number of
//     terms but cel-go's 100,000-character expression limit; matching an
//     object tries the terms in order.
//   - The hash is FNV-1a 64 of the field's value (Hash here). A UID never
//     changes and neither does a namespace, so an object never moves
//     between ranges while it exists.
//   - Lists from etcd and from the watch cache are filtered, and echo the
//     selector in ListMeta.ShardInfo; metadata-only lists
//     (PartialObjectMetadataList) are filtered but drop ShardInfo. Watches
//     are filtered too, from the watch cache (the initial events of a
//     streaming list included) and from etcd; a watch echoes nothing.
//
// Everything between replicas is in their Leases: the protocol needs
// get, list, watch, create, update, patch and delete on Leases in one
// namespace, and nothing else.
package shard
