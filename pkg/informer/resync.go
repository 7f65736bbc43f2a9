package informer

import (
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// resyncWindow tells the resync loop when resyncs may run: as in client-go,
// whose reflector resyncs only while it watches after a list, from a full
// period after each complete list until the watcher gives the watch up for a
// relist. A relist that keeps failing therefore resyncs no stale store, and
// the first resync after a (re)list comes a whole period after it.
type resyncWindow struct {
	// mu guards open and lists.
	mu sync.Mutex
	// open: a complete list is stored and no restart is pending.
	open bool
	// lists counts the complete lists swapped in, so that the loop tells a
	// new list (its timer starts over) from one it has seen.
	lists uint64
	// changed wakes the loop after a change (capacity 1: one wake-up
	// stands for any number of changes, the loop reads the state).
	changed chan struct{}
}

func newResyncWindow() *resyncWindow {
	return &resyncWindow{changed: make(chan struct{}, 1)}
}

// listed: a complete list was swapped in; resyncs may run a period from now.
func (w *resyncWindow) listed() {
	w.mu.Lock()
	w.open = true
	w.lists++
	w.mu.Unlock()
	w.wake()
}

// pending: the watcher gave the watch up for a relist; no resync until it
// completes.
func (w *resyncWindow) pending() {
	w.mu.Lock()
	w.open = false
	w.mu.Unlock()
	w.wake()
}

func (w *resyncWindow) wake() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *resyncWindow) state() (open bool, lists uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.open, w.lists
}

// resyncLoop checks, a period after each complete list and then a period
// after each check, whether handlers are due for a resync, and sends those
// that are OnUpdate(obj, obj) for every stored object. It checks nothing
// while the window is shut: before the first list and during relists.
func (s *SharedIndexInformer) resyncLoop(logger klog.Logger, period time.Duration, stop <-chan struct{}) {
	var timer clock.Timer
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
			timer = nil
		}
	}
	defer stopTimer()
	var seen uint64 // the list the timer runs for
	for {
		var fire <-chan time.Time
		if timer != nil {
			fire = timer.C()
		}
		select {
		case <-stop:
			return
		case <-s.resyncs.changed:
			switch open, lists := s.resyncs.state(); {
			case !open:
				stopTimer()
			case lists != seen || timer == nil:
				seen = lists
				stopTimer()
				timer = s.cfg.clock.NewTimer(period)
			}
			continue
		case <-fire:
		}
		timer = s.cfg.clock.NewTimer(period) // the next check, a period after this one
		if open, lists := s.resyncs.state(); !open || lists != seen {
			continue // the change's wake-up is pending and resets the timer
		}
		if !s.processor.shouldResync() {
			continue
		}
		logger.V(4).Info("Forcing resync", "type", s.objectDescription)
		s.changeMu.Lock()
		keys, objs := s.indexer.ListStored() // decoded as they are delivered
		s.processor.distribute(notification{kind: notifyObjects, keys: keys, objects: objs}, true)
		s.changeMu.Unlock()
	}
}
