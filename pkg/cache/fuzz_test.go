package cache

import (
	"math"
	"strconv"
	"testing"

	toolscache "k8s.io/client-go/tools/cache"
)

// FuzzIndexerAgainstClientGo decodes random bytes into operation sequences,
// applies them to our Indexer and to client-go's (a restart becomes the
// equivalent Replace), and compares every read after each operation. The
// harness also checks each paged replace's reuse decisions and Diff.
//
// Run it with: go test -run '^$' -fuzz FuzzIndexerAgainstClientGo ./pkg/cache/
func FuzzIndexerAgainstClientGo(f *testing.F) {
	f.Add([]byte{0})
	// add, add, start, buffer copies of live (reuse), buffer fresh, finish
	f.Add([]byte{0, 0, 4, 0x21, 0, 7, 0x22, 7, 8, 4, 1, 8, 5, 0, 9})
	// the same, every paged replace written in place, then built beside
	f.Add([]byte{4, 0, 4, 0x21, 0, 7, 0x22, 7, 8, 4, 1, 8, 5, 0, 9})
	f.Add([]byte{2, 0, 4, 0x21, 0, 7, 0x22, 7, 8, 4, 1, 8, 5, 0, 9})
	// add indexers while replacing, tombstone delete, bookmark, replace
	f.Add([]byte{1, 0, 1, 0x25, 7, 11, 7, 8, 1, 0, 3, 1, 12, 6, 3, 2, 0x26, 5, 0x27, 9, 11, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &opReader{data: data}
		setup := r.next()
		h := newHarness(t, setup%2 == 0)
		h.setInPlaceLimit(inPlaceLimits[int(setup/2)%len(inPlaceLimits)])
		h.check()
		for i := 0; i < maxFuzzOps && r.more(); i++ {
			r.apply(h)
			h.check()
		}
	})
}

const maxFuzzOps = 200

// inPlaceLimits are the bounds on a paged replace's writes in place the
// fuzzer chooses from: the Indexer's own, none (every replace is built
// beside the live generation) and unbounded (every replace with reuse is
// written in place, even into tiny stores).
var inPlaceLimits = []func(size int) int{
	nil,
	func(int) int { return 0 },
	func(int) int { return math.MaxInt },
}

// opReader turns bytes into operations; reading past the end yields zeros.
type opReader struct {
	data []byte
	rv   int // the last resourceVersion handed out
}

func (r *opReader) more() bool { return len(r.data) > 0 }

func (r *opReader) next() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *opReader) nextRV() string {
	r.rv++
	return strconv.Itoa(r.rv)
}

// object decodes an object from two bytes: its key, then its labels, UID
// incarnation and whether it has a resourceVersion.
func (r *opReader) object() *pom {
	k, l := r.next(), r.next()
	ns, name := []string{"", "a", "b"}[k%3], strconv.Itoa(int(k/3)%8)
	lbl := map[string]string{}
	if c := l & 3; c > 0 {
		lbl["color"] = []string{"", "red", "blue", "green"}[c]
	}
	if tg := (l >> 2) & 3; tg > 0 {
		lbl["tags"] = []string{"", "x", "x,y", "y,y"}[tg]
	}
	uid := "u-" + key(ns, name) + "-" + strconv.Itoa(int(l>>4)&1)
	rv := ""
	if (l>>5)&3 != 0 {
		rv = r.nextRV()
	}
	return obj(ns, name, uid, rv, lbl)
}

// replaceObject decodes an object for a replace page: a fresh one, or a
// decoded copy of the live object under its key, the same version (a reuse
// candidate), with another UID, or with another resourceVersion.
func (r *opReader) replaceObject(h *harness) *pom {
	mode := r.next()
	o := r.object()
	live, ok := h.current(o)
	if !ok || mode&3 == 0 {
		return o
	}
	c := live.(*pom).DeepCopy()
	switch mode & 3 {
	case 2:
		c.UID += "-other"
	case 3:
		c.ResourceVersion = r.nextRV()
	}
	return c
}

func (r *opReader) transform() toolscache.TransformFunc {
	switch r.next() % 4 {
	case 2:
		return annotate
	case 3:
		return failTransform
	}
	return nil
}

func (r *opReader) list() []any {
	n := int(r.next() % 6)
	l := make([]any, n)
	for i := range l {
		l[i] = r.object()
	}
	return l
}

// apply decodes and applies one operation.
func (r *opReader) apply(h *harness) {
	switch r.next() % 16 {
	case 0:
		h.add(r.object())
	case 1:
		h.update(r.object())
	case 2:
		h.delete(r.object())
	case 3:
		o := r.object()
		k, _ := toolscache.DeletionHandlingMetaNamespaceKeyFunc(o)
		last, _ := h.current(o)
		h.delete(toolscache.DeletedFinalStateUnknown{Key: k, Obj: last})
	case 4:
		h.upsert(r.object())
	case 5:
		h.remove(r.object())
	case 6:
		h.replace(r.list(), r.nextRV())
	case 7:
		h.startReplace()
	case 8, 14, 15:
		o := r.replaceObject(h)
		h.addToReplace(o, r.transform())
	case 9:
		h.finishReplace(r.nextRV())
	case 10:
		h.abortReplace()
	case 11:
		bits := r.next()
		idx := toolscache.Indexers{}
		for i, e := range extraIndexers {
			if bits&(1<<i) != 0 {
				idx[e.name] = e.fn
			}
		}
		h.addIndexers(idx)
	case 12:
		h.bookmark(r.nextRV())
	case 13:
		// Objects without a key, alone or in a list.
		bad := "not an object"
		switch r.next() % 5 {
		case 0:
			h.add(bad)
		case 1:
			h.update(bad)
		case 2:
			h.delete(bad)
		case 3:
			h.addToReplace(bad, nil)
		case 4:
			l := r.list()
			h.replace(append(l, bad), r.nextRV())
		}
	}
}
