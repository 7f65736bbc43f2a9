package informer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// Issue 15, item 6: a handler that panics on an object of the initial list,
// with crashing turned off. client-go's registration never reports
// HasSynced (the panic skips its count of the initial list), though the
// handler goes on with every later notification. Ours reports HasSynced
// once every object of the initial list was handed to the handler, panic or
// not: the panic is logged and counted like a panic on any later event.
func TestDifferentialHandlerPanicsOnInitialList(t *testing.T) {
	defer func(old bool) { utilruntime.ReallyCrash = old }(utilruntime.ReallyCrash)
	utilruntime.ReallyCrash = false

	s := newServer(t, 3)
	ours := newInformer(s, 0)
	theirs := newClientGoInformer(s)
	panicky := func() *recorder {
		rec := newRecorder()
		rec.onCall = func(c call) {
			if c.key == key("cm-0001") {
				panic("handler bug")
			}
		}
		return rec
	}
	ourRec, theirRec := panicky(), panicky()
	ourReg, err := ours.AddEventHandler(ourRec)
	if err != nil {
		t.Fatal(err)
	}
	theirReg, err := theirs.AddEventHandler(theirRec)
	if err != nil {
		t.Fatal(err)
	}
	run(t, ours)
	run(t, theirs)
	waitSynced(t, ours, theirs, ourReg)

	// Both handlers go on after the panic: once client-go's has the live
	// object, its registration has seen the whole initial list and would
	// have synced by now if it ever did.
	mustCreate(t, s, configMap("after"))
	for name, rec := range map[string]*recorder{"ours": ourRec, "client-go": theirRec} {
		eventually(t, name+" handler to get the live object", func() bool {
			_, ok := rec.stateCopy()[key("after")]
			return ok
		})
		if n := rec.len(); n != 3 {
			t.Fatalf("%s handler recorded %d calls, want 3 (the one on cm-0001 panicked)", name, n)
		}
	}
	if theirReg.HasSynced() {
		t.Fatal("client-go's registration reports HasSynced after a panic in its initial list; the documented difference is gone")
	}
	if !ourReg.HasSynced() {
		t.Fatal("our registration no longer reports HasSynced")
	}
}

// A handler that panics, with utilruntime.ReallyCrash as it is by default:
// the panic is logged (utilruntime.HandleCrash) and ends the process, with
// either informer, whether the handler was added before Run (its initial
// list) or after (a live event). Each informer runs in a child process of
// this test binary.
func TestDifferentialHandlerPanicCrashesByDefault(t *testing.T) {
	if which := os.Getenv("LEANINFORMER_PANICKING_HANDLER_CHILD"); which != "" {
		if !utilruntime.ReallyCrash {
			t.Fatal("utilruntime.ReallyCrash is off: this test needs the default")
		}
		kind, late := strings.CutSuffix(which, "-late")
		s := newServer(t, 3)
		var inf toolscache.SharedIndexInformer = newInformer(s, 0)
		if kind == "client-go" {
			inf = newClientGoInformer(s)
		}
		rec := newRecorder()
		rec.onCall = func(c call) {
			if c.key == key("cm-0001") || c.key == key("boom") {
				panic("handler bug")
			}
		}
		if !late {
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
		}
		run(t, inf)
		waitSynced(t, inf)
		if late {
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, s, configMap("boom"))
		}
		time.Sleep(20 * time.Second) // the panic ends the process first
		t.Fatal("no crash")
	}
	for _, which := range []string{"ours", "client-go", "ours-late", "client-go-late"} {
		t.Run(which, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestDifferentialHandlerPanicCrashesByDefault$", "-test.count=1")
			cmd.Env = append(os.Environ(), "LEANINFORMER_PANICKING_HANDLER_CHILD="+which)
			out, err := cmd.CombinedOutput()
			if err == nil || strings.Contains(string(out), "no crash") ||
				!strings.Contains(string(out), "Observed a panic") || !strings.Contains(string(out), "panic: handler bug") {
				t.Fatalf("the child running %s's informer exited with %v, want a crash on the handler's panic, logged; output:\n%s", which, err, out)
			}
		})
	}
}

// What a caller sees of an informer's life, before Run, after a Run whose
// context had already ended, and of its registrations: the same with both
// informers, error texts included, and the handler's Logger gets the
// warnings about its resync period.
func TestDifferentialLifecycle(t *testing.T) {
	s := newServer(t, 2)
	transcript := func(inf toolscache.SharedIndexInformer) []string {
		var out []string
		note := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
		buf := &logBuffer{}
		logger := buf.logger()
		reg, err := inf.AddEventHandlerWithOptions(toolscache.ResourceEventHandlerFuncs{}, toolscache.HandlerOptions{Logger: &logger, ResyncPeriod: ptr.To(10 * time.Millisecond)})
		note("add before Run: %v", err)
		note("before Run: rv=%q synced=%v registration synced=%v stopped=%v", inf.LastSyncResourceVersion(), inf.HasSynced(), reg.HasSynced(), inf.IsStopped())
		for _, msg := range []string{"resync period is too small", "doesn't support resyncing"} {
			note("handler's logger has %q: %v", msg, buf.contains(msg))
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		inf.RunWithContext(ctx)
		note("after Run: rv=%q synced=%v registration synced=%v stopped=%v", inf.LastSyncResourceVersion(), inf.HasSynced(), reg.HasSynced(), inf.IsStopped())
		note("remove after stop: %v", inf.RemoveEventHandler(reg))
		select {
		case <-reg.(interface{ ShutdownChan() <-chan struct{} }).ShutdownChan():
			note("shutdown channel closed")
		case <-time.After(5 * time.Second):
			note("shutdown channel open")
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
		note("add after stop: %v", err)
		note("AddIndexers after stop: %v", inf.AddIndexers(toolscache.Indexers{"x": toolscache.MetaNamespaceIndexFunc}))
		note("SetTransform after stop: %v", inf.SetTransform(nil))
		note("SetWatchErrorHandler after stop: %v", inf.SetWatchErrorHandler(nil))
		note("SetWatchErrorHandlerWithContext after stop: %v", inf.SetWatchErrorHandlerWithContext(nil))
		return out
	}
	ours, theirs := transcript(newInformer(s, 0)), transcript(newClientGoInformer(s))
	if strings.Join(ours, "\n") != strings.Join(theirs, "\n") {
		t.Fatalf("ours:\n%s\n\nclient-go's:\n%s", strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
	}
}
