package informer

import (
	"errors"
	"strings"
	"sync"
	"testing"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/internal/errorcapture"
)

// A handler call skipped because its object cannot be decoded (only a
// broken codec does that) is reported with the object's key, for the
// initial list and resyncs as for a relist's changes.
func TestSkippedCallsNameTheKey(t *testing.T) {
	var mu sync.Mutex
	var reported []string
	t.Cleanup(errorcapture.Install(func(err error, _ string) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err.Error())
	}))

	s := newServer(t, 1)
	inf := newInformer(s, 0, WithEncodedStore())
	broken := decoder(func(any) (any, error) { return nil, errors.New("broken") })
	l := newListener(klog.Background(), inf.cfg.clock, toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) {}, UpdateFunc: func(any, any) {}}, false, inf.HasSyncedChecker(), inf.metrics, broken)
	l.add(notification{kind: notifyObjects, keys: []string{"n/a"}, objects: []any{"a stored value"}, isInInitialList: true, countsForSync: true})
	l.add(notification{kind: notifyObjects, keys: []string{"n/b"}, objects: []any{"a stored value"}})
	go l.watchSynced()
	go l.run()
	eventually(t, "both calls to be reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reported) == 2
	})
	l.stop()
	<-l.ShutdownChan()
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(reported[0], "OnAdd of n/a") || !strings.Contains(reported[1], "OnUpdate of n/b") {
		t.Errorf("reported %q, want the calls named: OnAdd of n/a, OnUpdate of n/b", reported)
	}
}
