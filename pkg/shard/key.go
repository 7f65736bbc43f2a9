package shard

import (
	"fmt"
	"hash/fnv"

	"k8s.io/apimachinery/pkg/api/meta"
)

// Key names the object field whose hash places an object in the hash space.
// Its values are the field paths KEP-5866's shard selector accepts.
type Key string

const (
	// KeyUID spreads objects by metadata.uid: every object of every type,
	// cluster-scoped or namespaced, lands independently. It is the default.
	KeyUID Key = "object.metadata.uid"
	// KeyNamespace keeps every object of a namespace on one replica, for
	// controllers that read several objects of a namespace together.
	// Cluster-scoped objects all have the empty namespace and so all land on
	// the one replica that serves the hash of "".
	KeyNamespace Key = "object.metadata.namespace"
)

// validate reports whether k is a key the API server accepts.
func (k Key) validate() error {
	switch k {
	case KeyUID, KeyNamespace:
		return nil
	default:
		return fmt.Errorf("unsupported key %q: the shard selector supports %q and %q", string(k), string(KeyUID), string(KeyNamespace))
	}
}

// ValueOf returns the field of obj that k hashes.
func (k Key) ValueOf(obj any) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("hashing %T for sharding: %w", obj, err)
	}
	switch k {
	case KeyUID:
		return string(m.GetUID()), nil
	case KeyNamespace:
		return m.GetNamespace(), nil
	default:
		return "", k.validate()
	}
}

// HashOf returns obj's place in the hash space: Hash of the field k names.
func (k Key) HashOf(obj any) (uint64, error) {
	v, err := k.ValueOf(obj)
	if err != nil {
		return 0, err
	}
	return Hash(v), nil
}

// Hash is the 64-bit FNV-1a hash of value, the hash the API server's shard
// selector uses (k8s.io/apimachinery/pkg/sharding.HashField), so that a
// client-side filter and the server agree on every object.
func Hash(value string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(value)) // a hash.Hash never fails to write
	return h.Sum64()
}
