// Command shardbench measures sharded controllers (pkg/shard with
// informer.WithShard) on a real API server: per-replica steady store, sync
// time and reconcile throughput for 1, 2 and 4 replicas, with server-side
// filtering (the API server's ShardedListAndWatch gate on) and client-side
// filtering (gate off), next to one unsharded replica on controller-runtime's
// default cache and on leaninformer's, in the same run; then the hand-over
// time after a replica is killed. `make shard-bench` runs it; see
// pkg/shard/README.md.
//
// It starts kube-apiserver and etcd through envtest, populates --objects
// ConfigMaps, and runs every replica as a child process (the program
// re-executed with --replica), so that each replica's heap is its own.
// Between the two filtering modes it restarts the API server with the other
// feature gate; etcd keeps the objects.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		os.Exit(childMain(os.Args[2:]))
	}
	if err := parentMain(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "shardbench: %v\n", err)
		os.Exit(1)
	}
}
