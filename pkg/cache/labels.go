package cache

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	klabels "k8s.io/apimachinery/pkg/labels" // package cache's tests have a func labels
)

// LabelReader is an optional interface of a Codec that tells whether an
// encoded object's labels match a selector without decoding the object
// (package codec's Codec implements it). ListByLabels uses it; with a codec
// that does not implement it, ListByLabels decodes every candidate.
type LabelReader interface {
	// MatchLabels returns a function that reports whether the labels of
	// the object an encoding stands for match sel. For a match, it may
	// return the object too, decoded as Decode would (else nil), which the
	// caller then owns. The function is called by one goroutine at a time.
	MatchLabels(sel klabels.Selector) func(data []byte) (matches bool, decoded any, err error)
}

// LabelQuery selects the objects ListByLabels returns.
type LabelQuery struct {
	// Selector is what the objects' labels must match; nil matches
	// everything.
	Selector klabels.Selector
	// IndexName and IndexedValue, if IndexName is set, restrict the
	// candidates to the objects ByIndex(IndexName, IndexedValue) returns
	// (for example cache.NamespaceIndex and a namespace); else every object
	// of the store is a candidate.
	IndexName, IndexedValue string
	// Limit, if positive, is the most objects returned.
	Limit int
}

// ListByLabels returns the candidates of q (see LabelQuery) whose labels
// match q.Selector, at most q.Limit of them if it is positive, in no
// particular order: the objects List (or ByIndex) would return, filtered.
// With a codec, it decodes only the objects it returns: it reads the labels
// of the others from their encodings where the codec is a LabelReader, and
// matches objects kept decoded (mixed stores) as they are. Like List, it
// leaves out and reports an object that cannot be decoded. An unknown index
// is an error, as for ByIndex; so is an object without metadata, whose
// labels nothing can tell.
func (c *Indexer) ListByLabels(q LabelQuery) ([]any, error) {
	var candidates []any
	if q.IndexName == "" {
		c.mu.RLock()
		candidates = make([]any, 0, len(c.live.items))
		for _, obj := range c.live.items {
			candidates = append(candidates, obj)
		}
		c.mu.RUnlock()
	} else {
		c.mu.RLock()
		i, err := c.indexNamed(q.IndexName)
		if err != nil {
			c.mu.RUnlock()
			return nil, err
		}
		candidates = c.objectsLocked(c.live.indices[i][q.IndexedValue])
		c.mu.RUnlock()
	}
	sel := q.Selector
	if sel == nil {
		sel = klabels.Everything()
	}
	m := c.labelMatcher(sel)
	defer func() { c.reportUndecodable(m.failed) }()
	n := 0
	for _, stored := range candidates {
		if q.Limit > 0 && n >= q.Limit {
			break
		}
		obj, ok, err := m.match(stored)
		if err != nil {
			return nil, err
		}
		if ok {
			candidates[n] = obj
			n++
		}
	}
	clear(candidates[n:])
	return candidates[:n], nil
}

// labelMatcher matches what the store holds against a selector, and
// collects the objects it could not decode for the caller to report.
type labelMatcher struct {
	c         *Indexer
	sel       klabels.Selector
	fromBytes func(data []byte) (bool, any, error) // nil: the codec is no LabelReader
	failed    []undecodable
}

func (c *Indexer) labelMatcher(sel klabels.Selector) *labelMatcher {
	m := &labelMatcher{c: c, sel: sel}
	if lr, ok := c.codec.(LabelReader); ok {
		m.fromBytes = lr.MatchLabels(sel)
	}
	return m
}

// match reports whether stored matches and returns what a read hands out
// for it (see readable). ok is false, and the error nil, for an object
// that cannot be decoded, which is collected in m.failed.
func (m *labelMatcher) match(stored any) (obj any, ok bool, err error) {
	if e, isEncoded := stored.(*encoded); isEncoded && m.fromBytes != nil {
		matches, decoded, err := m.fromBytes(e.data)
		if err != nil {
			m.c.counters.decodeFailures.Add(1)
			m.failed = append(m.failed, undecodable{e: e, err: fmt.Errorf("reading its labels: %w", err)})
			return nil, false, nil
		}
		if !matches {
			return nil, false, nil
		}
		if decoded != nil {
			return decoded, true, nil
		}
		return m.readable(stored)
	}
	if IsEncoded(stored) {
		// No LabelReader: decode, then match the object.
		obj, ok, err := m.readable(stored)
		if !ok || err != nil {
			return nil, false, err
		}
		matches, err := m.matchObject(obj)
		return obj, matches && err == nil, err
	}
	matches, err := m.matchObject(stored)
	if err != nil || !matches {
		return nil, false, err
	}
	return m.readable(stored)
}

// readable is Indexer.readable, with an object that cannot be decoded
// collected and left out.
func (m *labelMatcher) readable(stored any) (any, bool, error) {
	obj, failed := m.c.readable(stored)
	if failed != nil {
		m.failed = append(m.failed, *failed)
		return nil, false, nil
	}
	return obj, true, nil
}

func (m *labelMatcher) matchObject(obj any) (bool, error) {
	a, err := meta.Accessor(obj)
	if err != nil {
		return false, fmt.Errorf("matching labels: %T has no metadata: %w", obj, err)
	}
	return m.sel.Matches(klabels.Set(a.GetLabels())), nil
}
