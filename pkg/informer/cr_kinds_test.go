package informer

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readsOnly is a controller-runtime cache whose reads find nothing to do.
type readsOnly struct{ crcache.Cache }

func (readsOnly) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return nil
}

func (readsOnly) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

// Telling whether a type is registered under several kinds costs a read
// of another type nothing: Get and List ask on every call.
func TestKindedCacheReadsOfOtherTypesAllocateNothing(t *testing.T) {
	k := newKindedCache(readsOnly{}, scheme.Scheme, crcache.Options{})
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns", Name: "cm"}
	var cm corev1.ConfigMap
	var cms corev1.ConfigMapList
	_ = k.List(ctx, &cms) // the first asks the scheme
	if n := testing.AllocsPerRun(100, func() { _ = k.Get(ctx, key, &cm) }); n != 0 {
		t.Errorf("a Get of a ConfigMap allocates %v times in the wrapper, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = k.List(ctx, &cms) }); n != 0 {
		t.Errorf("a List of ConfigMaps allocates %v times in the wrapper, want 0", n)
	}
}
