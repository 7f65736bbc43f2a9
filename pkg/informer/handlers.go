package informer

import (
	"fmt"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// minimumResyncPeriod is the shortest per-handler resync period, as in client-go.
const minimumResyncPeriod = time.Second

// AddEventHandler adds a handler with the informer's default resync period.
func (s *SharedIndexInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds a handler with its own resync period.
func (s *SharedIndexInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resyncPeriod time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions adds a handler. Added after Run, it first gets
// OnAdd(obj, true) for every stored object, and its registration's HasSynced
// turns true once those are delivered.
func (s *SharedIndexInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	if s.stopped {
		return nil, fmt.Errorf("handler %v was not added to shared informer because it has stopped already", handler)
	}

	logger := ptr.Deref(options.Logger, klog.Background())
	resyncPeriod := ptr.Deref(options.ResyncPeriod, s.defaultEventHandlerResyncPeriod)
	if resyncPeriod > 0 {
		if resyncPeriod < minimumResyncPeriod {
			logger.Info("Warning: resync period is too small. Changing it to the minimum allowed value", "resyncPeriod", resyncPeriod, "minimumResyncPeriod", minimumResyncPeriod)
			resyncPeriod = minimumResyncPeriod
		}
		if resyncPeriod < s.resyncCheckPeriod {
			if s.started {
				logger.Info("Warning: resync period is smaller than resync check period and the informer has already started. Changing it to the resync check period", "resyncPeriod", resyncPeriod, "resyncCheckPeriod", s.resyncCheckPeriod)
				resyncPeriod = s.resyncCheckPeriod
			} else {
				s.resyncCheckPeriod = resyncPeriod
				s.processor.resyncCheckPeriodChanged(logger, resyncPeriod)
			}
		}
	}

	handler, coalesce := s.cfg.coalescedHandler(handler)
	l := newListener(logger, s.cfg.clock, handler, coalesce, s.HasSyncedChecker(), s.metrics, s.indexer.Decode)
	period := effectiveResyncPeriod(logger, resyncPeriod, s.resyncCheckPeriod)
	if !s.started {
		s.processor.addListener(l, resyncPeriod, period)
		return l, nil
	}

	// Joining a running informer: no store change may slip between the
	// snapshot below and the listener's first live notification.
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	started := s.processor.addListener(l, resyncPeriod, period)
	// Stored values: an encoded store's are decoded as they are delivered.
	if keys, objs := s.indexer.ListStored(); len(objs) > 0 {
		l.add(notification{kind: notifyObjects, keys: keys, objects: objs, isInInitialList: true, countsForSync: true})
	}
	if started {
		s.processor.startWatchSynced(l)
	}
	return l, nil
}

// RemoveEventHandler stops delivering to a handler; notifications not yet
// delivered are dropped. It is idempotent. Use cache.ShutDownEventHandler to
// also wait for the handler's last call to return.
func (s *SharedIndexInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	return s.processor.removeListener(handle)
}

// effectiveResyncPeriod is the period a handler gets given the informer's
// resync check period: none if the informer does not resync, never shorter
// than the check period.
func effectiveResyncPeriod(logger klog.Logger, desired, check time.Duration) time.Duration {
	switch {
	case desired == 0:
		return 0
	case check == 0:
		logger.Info("Warning: the specified resyncPeriod is invalid because this shared informer doesn't support resyncing", "desired", desired)
		return 0
	case desired < check:
		logger.Info("Warning: the specified resyncPeriod is being increased to the minimum resyncCheckPeriod", "desired", desired, "resyncCheckPeriod", check)
		return check
	default:
		return desired
	}
}

// resyncCheck is the period at which Run checks for handlers due for a
// resync, fixed once Run has started.
func (s *SharedIndexInformer) resyncCheck() time.Duration {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	return s.resyncCheckPeriod
}
