package informer

import (
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
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
