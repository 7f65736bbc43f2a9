package shard_test

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/leaninformer/leaninformer/pkg/shard"
)

// Assign is deterministic: every replica that sees the same members
// computes the same split, and a member that leaves frees about its own
// share only.
func ExampleAssign() {
	three := shard.Assign([]string{"ctl-a", "ctl-b", "ctl-c"}, shard.DefaultBuckets)
	two := shard.Assign([]string{"ctl-a", "ctl-b"}, shard.DefaultBuckets)
	for _, m := range []string{"ctl-a", "ctl-b", "ctl-c"} {
		fmt.Printf("%s: %.3f of the space\n", m, three[m].Fraction())
	}
	kept := three["ctl-a"].Intersect(two["ctl-a"]).Union(three["ctl-b"].Intersect(two["ctl-b"]))
	fmt.Printf("ctl-c leaves: %.3f of the space changes owner\n", 1-kept.Fraction())
	// Output:
	// ctl-a: 0.332 of the space
	// ctl-b: 0.336 of the space
	// ctl-c: 0.332 of the space
	// ctl-c leaves: 0.344 of the space changes owner
}

// A member serves its share of the hash space while it runs; work on an
// object is bracketed with Begin so that the object is not handed over
// before the work ends. Here one member runs alone on a fake clientset; in
// a program the Lease client is a clientset's CoordinationV1().
func ExampleMember() {
	m, err := shard.New(fake.NewClientset().CoordinationV1(), "default", "my-controller",
		shard.WithIdentity("replica-0"), shard.WithLogger(logr.Discard()))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- m.Start(ctx) }()

	for served, changed := m.Watch(); !served.Equal(shard.FullRange()); served, changed = m.Watch() {
		<-changed
	}
	fmt.Println("alone, the member serves everything:", m.Serving().Fraction())

	uid := "5c7a1e9e-0a4b-4c1e-9b3e-3f2a1d0c9b8a"
	if workCtx, done, ok := m.Begin(ctx, shard.Hash(uid)); ok {
		_ = workCtx // reconcile the object with workCtx
		done()
	}

	cancel() // a clean stop: serve nothing, publish that, delete the Lease
	fmt.Println("stopped:", <-stopped)
	// Output:
	// alone, the member serves everything: 1
	// stopped: <nil>
}
