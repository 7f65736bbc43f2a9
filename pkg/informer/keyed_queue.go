package informer

// changeKind is what a pending change will call on its handler.
type changeKind uint8

const (
	changeAdd changeKind = iota + 1
	changeUpdate
	changeDelete
)

// pendingChange is what a coalescing handler has yet to hear of one key: the
// handler is told OnAdd(obj), OnUpdate(old, obj) or OnDelete(obj).
type pendingChange struct {
	key  string
	kind changeKind
	// old is, for an update, the object the handler last heard of (the old
	// object of the first update folded in).
	old any
	// obj is the newest object: for a delete, the object's last state (or
	// the tombstone of a relist).
	obj             any
	isInInitialList bool
	// syncs counts the initial-list notifications folded into this change:
	// the handler's HasSynced waits for that many deliveries.
	syncs int

	prev, next *pendingChange // the queue's order
	// earlier is the key's pending delete this change waits behind; later
	// the change waiting behind this delete.
	earlier, later *pendingChange
}

// keyedQueue is a handler's queue that holds at most two pending changes
// per key, so that a handler that falls behind holds the objects it has not
// heard of yet, not every change of them. A change for a key that has one
// pending folds into it, keeping its place in the queue:
//
//   - an update after an add or an update replaces the pending object: the
//     handler then hears OnAdd(newest), or OnUpdate(oldest old, newest);
//   - a delete after an update ends the entry: OnDelete(last state);
//   - a delete after an add cancels the add: the handler never heard of the
//     object and never will;
//   - after a pending delete, an add starts a second entry behind it, so
//     that the handler hears of the old object's end before the new one
//     (add-delete-add is OnDelete(old), OnAdd(new), never an update across
//     two objects).
//
// It is not safe for concurrent use.
type keyedQueue struct {
	newest      map[string]*pendingChange // each key's last pending change
	first, last *pendingChange
	len         int
	// peak is the most keys newest has held since it was made: a Go map
	// keeps the room of its largest size, so the queue drops one that
	// grew past shrinkAbove once it is empty (after an initial list or a
	// relist, every stored key was in it), as the plain listener's ring
	// shrinks once drained.
	peak int
}

// shrinkAbove is the size past which an emptied queue makes a new map.
const shrinkAbove = 256

func newKeyedQueue() *keyedQueue {
	return &keyedQueue{newest: map[string]*pendingChange{}}
}

// fold adds a change of key and reports how many changes it folded into
// pending ones (0 or 1) and how many initial-list notifications it
// cancelled along with an add (their HasSynced waits end now). syncs is 1
// for a notification that counts towards the handler's HasSynced.
func (q *keyedQueue) fold(key string, kind changeKind, old, obj any, isInInitialList bool, syncs int) (folded, cancelledSyncs int) {
	p := q.newest[key]
	switch {
	case p == nil || p.kind == changeDelete && kind != changeDelete:
		// Nothing pending, or the key's end is: a new entry.
		if kind == changeUpdate && p != nil {
			// An update behind a pending delete (a relist that found the
			// key again before the delete was delivered): the handler will
			// have heard the object end, so it hears this one begin.
			kind, old = changeAdd, nil
		}
		c := &pendingChange{key: key, kind: kind, old: old, obj: obj, isInInitialList: isInInitialList, syncs: syncs, earlier: p}
		if p != nil {
			p.later = c
		}
		q.push(c)
		return 0, 0
	case kind == changeDelete && p.kind == changeAdd:
		q.remove(p)
		return 1, p.syncs + syncs
	case kind == changeDelete:
		// After an update the handler knows the object: it must hear of
		// its end. After a delete, the newest last state wins.
		p.kind, p.old, p.obj = changeDelete, nil, obj
	default:
		// An add or update after an add or update: the newest object.
		p.obj = obj
	}
	p.syncs += syncs
	return 1, 0
}

func (q *keyedQueue) push(c *pendingChange) {
	q.newest[c.key] = c
	q.peak = max(q.peak, len(q.newest))
	c.prev = q.last
	if q.last != nil {
		q.last.next = c
	} else {
		q.first = c
	}
	q.last = c
	q.len++
}

func (q *keyedQueue) remove(c *pendingChange) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.first = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.last = c.prev
	}
	c.prev, c.next = nil, nil
	switch {
	case c.later != nil: // a delete delivered: the change behind it is the key's only one
		c.later.earlier, c.later = nil, nil
	case c.earlier != nil: // a cancelled add behind a delete: the delete is the newest again
		q.newest[c.key] = c.earlier
		c.earlier.later, c.earlier = nil, nil
	default:
		delete(q.newest, c.key)
	}
	q.len--
	if q.len == 0 && q.peak > shrinkAbove {
		q.newest, q.peak = map[string]*pendingChange{}, 0
	}
}

// pop removes and returns the oldest pending change.
func (q *keyedQueue) pop() (*pendingChange, bool) {
	c := q.first
	if c == nil {
		return nil, false
	}
	q.remove(c)
	return c, true
}
