package informer

import (
	"context"
	"errors"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// reflectorReport is what a watch error handler read from the *Reflector it
// was given, at the time of the call.
type reflectorReport struct {
	rv, typeDescription string
	err                 error
}

type reflectorReports struct {
	mu      sync.Mutex
	reports []reflectorReport
}

func (r *reflectorReports) handler(_ context.Context, refl *toolscache.Reflector, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, reflectorReport{rv: refl.LastSyncResourceVersion(), typeDescription: refl.TypeDescription(), err: err})
}

func (r *reflectorReports) forbidden() []reflectorReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []reflectorReport
	for _, rep := range r.reports {
		if apierrors.IsForbidden(rep.err) {
			out = append(out, rep)
		}
	}
	return out
}

// Issue 15, item 7: the *Reflector a watch error handler receives reports
// the informer's last synced resourceVersion, as client-go's does. Both
// informers sync and follow a change; then their watch ends with a 410 and
// the relist (client-go's informer streams its lists) is forbidden.
func TestDifferentialWatchErrorHandlerReflector(t *testing.T) {
	s := newServer(t, 3)
	ours := newInformer(s, 0, WithStrategy(ListWatch))
	theirs := newClientGoInformer(s)
	ourReports, theirReports := &reflectorReports{}, &reflectorReports{}
	if err := ours.SetWatchErrorHandlerWithContext(ourReports.handler); err != nil {
		t.Fatal(err)
	}
	if err := theirs.SetWatchErrorHandlerWithContext(theirReports.handler); err != nil {
		t.Fatal(err)
	}
	run(t, ours)
	run(t, theirs)
	waitSynced(t, ours, theirs)
	mustCreate(t, s, configMap("x"))
	want := s.ResourceVersion()
	for name, inf := range map[string]toolscache.SharedIndexInformer{"ours": ours, "client-go": theirs} {
		eventually(t, name+" to reach the server's resourceVersion", func() bool { return inf.LastSyncResourceVersion() == want })
	}

	s.SetFault(func(_ context.Context, req fake.Request) error {
		if req.Verb == "list" || req.Verb == "watch" {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC says no"))
		}
		return nil
	})
	s.SendWatchError(gone())
	eventually(t, "both handlers to hear of the forbidden relist", func() bool {
		return len(ourReports.forbidden()) > 0 && len(theirReports.forbidden()) > 0
	})
	for name, reports := range map[string][]reflectorReport{"ours": ourReports.forbidden(), "client-go": theirReports.forbidden()} {
		for _, rep := range reports {
			if rep.rv != want {
				t.Errorf("%s: the handler's reflector says LastSyncResourceVersion %q, want the informer's %q", name, rep.rv, want)
			}
			if rep.typeDescription != "*v1.ConfigMap" {
				t.Errorf("%s: the handler's reflector describes %q, want *v1.ConfigMap", name, rep.typeDescription)
			}
		}
	}
	s.SetFault(nil)
}
