package codec

import (
	"fmt"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxKinds is the number of distinct kinds (Go type and TypeMeta) a Codec
// numbers; objects of further kinds are refused. A store holds one or a few
// kinds; the bound keeps objects with arbitrary TypeMeta from growing the
// table without end.
const MaxKinds = 1024

// kind is what an encoding's kind number stands for: the Go type to decode
// into and the TypeMeta to restore, or the unstructured encoding.
type kind struct {
	unstructured bool
	typ          reflect.Type // the struct type a pointer of which was encoded
	typeMeta     metav1.TypeMeta
	compression  *kindCompression // nil without compression
}

type kindKey struct {
	typ      reflect.Type
	typeMeta metav1.TypeMeta
}

// kindTable numbers kinds. Lookups read an immutable snapshot without
// locking; a new kind copies it (at most MaxKinds times).
type kindTable struct {
	compress bool       // kinds get compression state
	mu       sync.Mutex // serialises additions
	snapshot atomic.Pointer[kindSnapshot]
}

type kindSnapshot struct {
	ids   map[kindKey]uint64
	kinds []*kind // by number
}

// id returns the number of k and its entry, numbering it if it is new.
func (t *kindTable) id(k kind) (uint64, *kind, error) {
	key := kindKey{typ: k.typ, typeMeta: k.typeMeta}
	if s := t.snapshot.Load(); s != nil {
		if id, ok := s.ids[key]; ok {
			return id, s.kinds[id], nil
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.snapshot.Load()
	if s == nil {
		s = &kindSnapshot{}
	}
	if id, ok := s.ids[key]; ok {
		return id, s.kinds[id], nil
	}
	if len(s.kinds) >= MaxKinds {
		return 0, nil, fmt.Errorf("%w: more than %d kinds (type %v, apiVersion %q, kind %q)",
			ErrUnsupported, MaxKinds, k.typ, k.typeMeta.APIVersion, k.typeMeta.Kind)
	}
	if t.compress {
		k.compression = &kindCompression{}
	}
	id := uint64(len(s.kinds))
	next := &kindSnapshot{ids: maps.Clone(s.ids), kinds: append(s.kinds[:len(s.kinds):len(s.kinds)], &k)}
	if next.ids == nil {
		next.ids = map[kindKey]uint64{}
	}
	next.ids[key] = id
	t.snapshot.Store(next)
	return id, &k, nil
}

// get returns the kind numbered id.
func (t *kindTable) get(id uint64) (*kind, error) {
	s := t.snapshot.Load()
	if s == nil || id >= uint64(len(s.kinds)) {
		return nil, fmt.Errorf("unknown kind number %d: not encoded by this codec", id)
	}
	return s.kinds[id], nil
}
