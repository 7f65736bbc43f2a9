package informer

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// syncWatchdog logs, every interval until the informer has synced, why it
// has not (its SyncStatus), and once it has synced after such a warning,
// how long that took. interval 0 turns it off.
func (s *SharedIndexInformer) syncWatchdog(ctx context.Context, logger klog.Logger, interval time.Duration) {
	if interval <= 0 {
		return
	}
	t := s.cfg.clock.NewTicker(interval)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.synced:
			if warned {
				st := s.SyncStatus()
				logger.Info("Informer synced", "type", s.objectDescription, "after", st.At.Sub(st.Since).Round(time.Millisecond))
			}
			return
		case <-t.C():
			st := s.SyncStatus()
			if st.Synced {
				continue
			}
			warned = true
			logger.Info("Informer has not synced yet", "type", s.objectDescription, "status", st.String(),
				"reason", st.Reason, "failures", st.Failures, "lastError", st.LastError)
		}
	}
}
