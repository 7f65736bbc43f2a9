package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// handlerLog records what a watch error handler is called with.
type handlerLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *handlerLog) handle(_ context.Context, _ *toolscache.Reflector, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err.Error())
}

func (l *handlerLog) calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errs...)
}

// injected counts the one-shot faults of a case, so that the case can check
// that each was hit.
type injected struct{ armed, fired atomic.Int32 }

// once returns a fault that fails the first request match picks with err.
func (in *injected) once(match func(fake.Request) bool, err error) fake.Fault {
	in.armed.Add(1)
	var done atomic.Bool
	return func(_ context.Context, req fake.Request) error {
		if match(req) && done.CompareAndSwap(false, true) {
			in.fired.Add(1)
			return err
		}
		return nil
	}
}

func isWatch(req fake.Request) bool { return req.Verb == "watch" }
func isList(req fake.Request) bool  { return req.Verb == "list" }

// fromLastRV picks a LIST, or a streaming watch, that reads at a
// resourceVersion: the relist after the watch, not the first list.
func fromLastRV(req fake.Request) bool {
	rv := req.Options.ResourceVersion
	return rv != "" && rv != "0" && (req.Verb == "list" || req.Options.SendInitialEvents != nil)
}

// Issue 15, item 2: the watch error handler hears of what client-go's
// reflector hands its handler, nothing more: failed LISTs and failed watch
// opens it does not retry, with the same text. Each case runs client-go's
// informer and ours on a fake server each, with the same fault, until both
// have an object created after it.
func TestDifferentialWatchErrorHandlerCalls(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC says no"))
	expired := apierrors.NewResourceExpired("too old resource version")
	for _, tc := range []struct {
		name string
		// streams: both informers stream their lists; otherwise their
		// ListerWatcher says it cannot, and both list.
		streams bool
		// before is the fault in place when the informers start; after is
		// injected once they synced.
		before, after func(s *fake.Server, in *injected)
		want          []string // the handler's calls, for both
	}{
		{name: "watch open refused", after: func(s *fake.Server, in *injected) {
			s.SetFault(in.once(isWatch, fake.ConnectionRefused()))
			s.CloseWatches()
		}},
		{name: "watch open 429", after: func(s *fake.Server, in *injected) {
			s.SetFault(in.once(isWatch, apierrors.NewTooManyRequests("slow down", 0)))
			s.CloseWatches()
		}},
		{name: "watch open 403", after: func(s *fake.Server, in *injected) {
			s.SetFault(in.once(isWatch, forbidden))
			s.CloseWatches()
		}, want: []string{forbidden.Error()}},
		{name: "watch open 410", after: func(s *fake.Server, in *injected) {
			s.SetFault(in.once(isWatch, expired))
			s.CloseWatches()
		}, want: []string{expired.Error()}},
		{name: "watch sends 500", after: func(s *fake.Server, in *injected) {
			s.SendWatchError(&apierrors.NewInternalError(errors.New("etcd hiccup")).ErrStatus)
		}},
		{name: "watch sends 410, the relist from the last rv answers 410", after: func(s *fake.Server, in *injected) {
			s.SetFault(in.once(fromLastRV, expired))
			s.SendWatchError(&expired.ErrStatus)
		}},
		{name: "watch sends 410, the relist from the last rv answers too large", after: func(s *fake.Server, in *injected) {
			s.SetFault(in.once(fromLastRV, fake.TooLargeResourceVersion(1000, 10)))
			s.SendWatchError(&expired.ErrStatus)
		}},
		{name: "first LIST 403", before: func(s *fake.Server, in *injected) { s.SetFault(in.once(isList, forbidden)) },
			want: []string{"failed to list *v1.ConfigMap: " + forbidden.Error()}},
		{name: "first LIST 429", before: func(s *fake.Server, in *injected) {
			s.SetFault(in.once(isList, apierrors.NewTooManyRequests("slow down", 0)))
		}, want: []string{"failed to list *v1.ConfigMap: slow down"}},

		{name: "stream open refused", streams: true, before: func(s *fake.Server, in *injected) {
			s.SetFault(in.once(isWatch, fake.ConnectionRefused()))
		}},
		{name: "stream open 403", streams: true, before: func(s *fake.Server, in *injected) { s.SetFault(in.once(isWatch, forbidden)) }},
		{name: "stream relist from the last rv answers 410", streams: true, after: func(s *fake.Server, in *injected) {
			s.SetFault(in.once(fromLastRV, expired))
			s.SendWatchError(&expired.ErrStatus)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs [2]handlerLog
			var faults [2]injected
			var servers [2]*fake.Server
			var informers [2]toolscache.SharedIndexInformer
			for i := range informers {
				s := newServer(t, 3)
				servers[i] = s
				lw := &fake.ListerWatcher{Server: s, WatchListUnsupported: !tc.streams}
				if i == 0 {
					informers[i] = NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{}, WithBackoff(fastBackoff))
				} else {
					informers[i] = toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
				}
				if err := informers[i].SetWatchErrorHandlerWithContext(logs[i].handle); err != nil {
					t.Fatal(err)
				}
				if tc.before != nil {
					tc.before(s, &faults[i])
				}
				run(t, informers[i])
			}
			waitSynced(t, informers[0], informers[1])
			for i, s := range servers {
				if tc.after != nil {
					// The fake sends ERROR events to open watches only.
					eventually(t, fmt.Sprintf("informer %d to watch", i), func() bool { return s.OpenWatches() > 0 })
					tc.after(s, &faults[i])
					// Wait for the fault before the create: a client-go
					// reflector whose watch closed within a second relists,
					// and that LIST could return the new object before the
					// watch the fault waits for is opened.
					eventually(t, fmt.Sprintf("informer %d to hit its faults", i), func() bool {
						return faults[i].fired.Load() == faults[i].armed.Load()
					})
				}
				mustCreate(t, s, configMap("after"))
				eventually(t, fmt.Sprintf("informer %d to get the object created after the fault", i), func() bool {
					_, ok, _ := informers[i].GetStore().GetByKey(key("after"))
					return ok
				})
			}
			for i := range faults {
				if armed, fired := faults[i].armed.Load(), faults[i].fired.Load(); armed != fired {
					t.Errorf("informer %d hit %d of its %d faults", i, fired, armed)
				}
			}
			ours, theirs := logs[0].calls(), logs[1].calls()
			if strings.Join(ours, "\n") != strings.Join(theirs, "\n") {
				t.Errorf("watch error handler calls differ:\nours:      %q\nclient-go: %q", ours, theirs)
			}
			if strings.Join(ours, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("watch error handler calls %q, want %q", ours, tc.want)
			}
		})
	}
}
