package informer

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"
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
