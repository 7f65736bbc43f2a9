package informer

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/internal/errorcapture"
	"github.com/leaninformer/leaninformer/internal/testobjects"
	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
)

// FuzzStoreWriterAgainstModel feeds random event sequences straight into the
// informer's store writer (the listerwatcher.Consumer the watcher drives) and
// checks after every event that the store holds what a plain-map model says
// it must, and at the end that every handler rebuilt the store from its
// notifications. Sequences cover pages, restarts cut short by a new
// RestartStart, duplicate keys within a restart, deletes of unknown keys,
// bookmarks, out-of-order and empty resourceVersions, relist reuse on and off,
// a transform that fails or returns nil, handlers joining mid-stream, and
// events a watcher never sends (pages or RestartDone outside a restart).
//
// Run it with: go test -run '^$' -fuzz FuzzStoreWriterAgainstModel ./pkg/informer/
func FuzzStoreWriterAgainstModel(f *testing.F) {
	for _, seed := range writerSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		newWriterFuzz(t, data).run()
	})
}

// The op codes of a fuzz input. An input is a header byte (bit 0: relist
// reuse off; bits 1-2: transform mode; bit 3: encoded store) followed by
// ops with their operands;
// the harness opens the initial restart before the first op.
const (
	opStart         = iota // reason byte
	opPage                 // count byte, then one byte per object
	opDone                 // resourceVersion byte
	opAdded                // object byte
	opModified             // object byte
	opDeleted              // object byte
	opBookmark             // resourceVersion byte
	opLateHandler          // no operand
	opDuplicatePage        // object byte: a page holding two versions of one key
	numOps
)

// Transform modes (header bits 1-2).
const (
	_ = iota // no transform
	// annotating marks every object; it fails on cm-6 and returns nil for cm-7.
	annotating
)

// An object byte: bits 0-2 the name (cm-0..cm-7), bit 3 the UID incarnation,
// bits 4-5 the resourceVersion kind, bits 6-7 an old resourceVersion.
const (
	rvLive  = iota // the live object's UID and resourceVersion: a reuse candidate
	rvFresh        // a new, higher resourceVersion
	rvOld          // a low one, out of order
	rvEmpty        // none at all
)

var writerSeeds = [][]byte{
	// initial list in two pages, a live add, modify and delete, a bookmark
	{0, opStart, 0, opPage, 2, 0x10, 0x11, opPage, 1, 0x12, opDone, 5,
		opAdded, 0x13, opModified, 0x10, opDeleted, 0x11, opBookmark, 9},
	// a restart cut short by a new RestartStart, then a relist reusing
	// unchanged objects, deleting one and re-creating another under a new UID
	{0, opStart, 0, opPage, 3, 0x10, 0x11, 0x12, opDone, 4,
		opStart, 1, opPage, 2, 0x10, 0x13, opStart, 2, opPage, 2, 0x00, 0x19, opDone, 8},
	// duplicate keys in a restart; deletes of unknown keys; out-of-order and
	// empty resourceVersions on live events
	{1, opStart, 0, opDuplicatePage, 0x14, opPage, 2, 0x15, 0x15, opDone, 3,
		opDeleted, 0x17, opModified, 0x64, opAdded, 0x36, opBookmark, 2, opDeleted, 0x36},
	// a transform that fails on cm-6 and returns nil for cm-7, in pages and
	// live events, with a handler joining after the first list
	{2, opStart, 0, opPage, 3, 0x16, 0x17, 0x10, opDone, 2, opLateHandler,
		opAdded, 0x16, opModified, 0x17, opModified, 0x10, opDeleted, 0x16, opStart, 3, opPage, 2, 0x00, 0x17, opDone, 6},
	// events a watcher never sends: a page and a RestartDone without a restart
	{0, opDone, 1, opPage, 2, 0x10, 0x11, opDone, 1, opAdded, 0x12, opStart, 0, opDone, 2, opDone, 3},
}

func init() {
	// Every seed again with the encoded store (header bit 3).
	for _, seed := range writerSeeds[:len(writerSeeds):len(writerSeeds)] {
		encoded := append([]byte{seed[0] | 8}, seed[1:]...)
		writerSeeds = append(writerSeeds, encoded)
	}
}

// maxWriterOps bounds one input's length, so that an input runs in
// milliseconds.
const maxWriterOps = 300

// modelObject is what the model knows of a stored object: the identity the
// fuzz input gave it and whether the transform ran on it.
type modelObject struct {
	uid         types.UID
	rv          string
	serial      string
	transformed bool
	// obj is the object handed to the store writer (transformed in place),
	// whose contents the store must hold; not part of the comparison of
	// modelObjects (see identity).
	obj *corev1.ConfigMap
}

// identity is o without its object.
func (o modelObject) identity() modelObject {
	o.obj = nil
	return o
}

func (o modelObject) String() string {
	return fmt.Sprintf("{uid %s rv %q serial %s transformed %v}", o.uid, o.rv, o.serial, o.transformed)
}

// writerModel is what the store must hold, as plain maps.
type writerModel struct {
	live       map[string]modelObject
	buffer     map[string]modelObject // nil when no restart is open
	dropped    int                    // objects the open restart dropped
	lastRV     string
	synced     bool
	reuse      bool
	transform  int
	encoded    bool
	logsWanted map[string]int // HandleError messages the input must cause
}

type writerFuzz struct {
	t     *testing.T
	data  []byte
	ctx   context.Context
	inf   *SharedIndexInformer
	w     *storeWriter
	model writerModel

	rv, serial int // the last resourceVersion and object serial handed out
	mirrors    []*mirror
	// random fills the objects' contents, seeded by the input.
	random *testobjects.Random

	logMu sync.Mutex
	logs  map[string]int
}

func newWriterFuzz(t *testing.T, data []byte) *writerFuzz {
	seed := fnv.New64a()
	seed.Write(data)
	z := &writerFuzz{t: t, data: data, logs: map[string]int{}, random: testobjects.NewRandom(int64(seed.Sum64()))}
	header := z.next()
	z.model = writerModel{
		live:       map[string]modelObject{},
		reuse:      header&1 == 0,
		transform:  int(header>>1) & 3,
		encoded:    header&8 != 0,
		logsWanted: map[string]int{},
	}
	return z
}

func (z *writerFuzz) next() byte {
	if len(z.data) == 0 {
		return 0
	}
	b := z.data[0]
	z.data = z.data[1:]
	return b
}

func (z *writerFuzz) freshRV() string {
	z.rv++
	return strconv.Itoa(z.rv + 10) // above every "old" resourceVersion
}

// run builds an informer whose store writer is driven by hand, as Run's watcher
// would drive it, applies the input and checks the result.
func (z *writerFuzz) run() {
	t := z.t
	defer errorcapture.Install(func(_ error, msg string) {
		z.logMu.Lock()
		z.logs[msg]++
		z.logMu.Unlock()
	})()

	z.ctx = klog.NewContext(context.Background(), logr.Discard())
	opts := []Option{WithRelistReuse(z.model.reuse)}
	if z.model.encoded {
		opts = append(opts, WithEncodedStore())
	}
	z.inf = NewSharedIndexInformerWithOptions(&toolscache.ListWatch{}, &corev1.ConfigMap{},
		toolscache.SharedIndexInformerOptions{}, opts...)
	if z.model.transform == annotating {
		if err := z.inf.SetTransform(annotate); err != nil {
			t.Fatal(err)
		}
	}
	z.addMirror()
	// What RunWithContext does before it hands the store writer to the
	// watcher.
	transform, err := z.inf.start()
	if err != nil {
		t.Fatal(err)
	}
	z.inf.processor.start()
	defer z.inf.processor.stop()
	z.w = z.inf.newStoreWriter(logr.Discard(), transform)

	// A watcher's first event is always the initial RestartStart; the input
	// decides the rest.
	z.mustHandle(-1, listerwatcher.Event{Type: listerwatcher.RestartStart, Reason: listerwatcher.Initial})
	z.model.buffer, z.model.dropped = map[string]modelObject{}, 0
	for i := 0; i < maxWriterOps && len(z.data) > 0; i++ {
		z.step(i)
		z.checkStore(i)
	}
	z.checkMirrors()
	z.checkLogs()
}

func annotate(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, fmt.Errorf("annotate: got %T", obj)
	}
	switch cm.Name {
	case "cm-6":
		return nil, errors.New("annotate refuses cm-6")
	case "cm-7":
		return nil, nil
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations["transformed"] = "yes"
	return cm, nil
}

// transformFails reports whether the transform drops an object of this name.
func (m *writerModel) transformFails(name string) bool {
	return m.transform == annotating && (name == "cm-6" || name == "cm-7")
}

func (z *writerFuzz) handle(ev listerwatcher.Event) error {
	return z.w.Handle(z.ctx, ev)
}

// step decodes and applies one op to the store writer and the model.
func (z *writerFuzz) step(i int) {
	t, m := z.t, &z.model
	switch op := z.next() % numOps; op {
	case opStart:
		reasons := []listerwatcher.RestartReason{listerwatcher.Initial, listerwatcher.Expired,
			listerwatcher.ExpiredContinue, listerwatcher.Error, listerwatcher.StreamingFallback, listerwatcher.ConsumerError}
		reason := reasons[int(z.next())%len(reasons)]
		z.mustHandle(i, listerwatcher.Event{Type: listerwatcher.RestartStart, Reason: reason})
		m.buffer, m.dropped = map[string]modelObject{}, 0
	case opPage, opDuplicatePage:
		var objs []runtime.Object
		if op == opPage {
			for range int(z.next()) % 5 {
				objs = append(objs, z.object())
			}
		} else {
			first := z.object()
			second := first.DeepCopy()
			second.ResourceVersion = z.freshRV()
			second.Data["serial"] = z.nextSerial()
			objs = append(objs, first, second)
		}
		for _, obj := range objs {
			m.addToRestart(obj.(*corev1.ConfigMap))
		}
		z.mustHandle(i, listerwatcher.Event{Type: listerwatcher.RestartPage, Objects: objs})
	case opDone:
		rv := z.resourceVersion()
		err := z.handle(listerwatcher.Event{Type: listerwatcher.RestartDone, ResourceVersion: rv})
		if m.buffer == nil {
			if !errors.Is(err, cache.ErrNoReplace) {
				t.Fatalf("op %d: RestartDone without a restart returned %v, want ErrNoReplace", i, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("op %d: RestartDone: %v", i, err)
		}
		m.live, m.buffer, m.synced = m.buffer, nil, true
		m.setRV(rv)
		if m.dropped > 0 {
			// The DroppedObjectsError, through client-go's default watch
			// error handler.
			m.logsWanted["Failed to watch"]++
		}
	case opAdded, opModified:
		obj := z.object()
		typ := listerwatcher.Added
		if op == opModified {
			typ = listerwatcher.Modified
		}
		z.mustHandle(i, listerwatcher.Event{Type: typ, Object: obj, ResourceVersion: obj.ResourceVersion})
		if m.transformFails(obj.Name) {
			m.logsWanted["Dropping watch event"]++
		} else {
			m.live[objKey(obj)] = m.stored(obj)
		}
		m.setRV(obj.ResourceVersion)
	case opDeleted:
		obj := z.object()
		z.mustHandle(i, listerwatcher.Event{Type: listerwatcher.Deleted, Object: obj, ResourceVersion: obj.ResourceVersion})
		if _, stored := m.live[objKey(obj)]; m.transformFails(obj.Name) && stored {
			m.logsWanted["Transform failed on a delete event: deleting the stored object, handlers get it as DeletedFinalStateUnknown"]++
		} else if m.transformFails(obj.Name) {
			m.logsWanted["Transform failed on a delete event of an object not stored: dropping the event"]++
		}
		delete(m.live, objKey(obj))
		m.setRV(obj.ResourceVersion)
	case opBookmark:
		rv := z.resourceVersion()
		z.mustHandle(i, listerwatcher.Event{Type: listerwatcher.Bookmark, ResourceVersion: rv})
		m.setRV(rv)
	case opLateHandler:
		if len(z.mirrors) < 3 {
			z.addMirror()
		}
	}
}

func (z *writerFuzz) mustHandle(i int, ev listerwatcher.Event) {
	if err := z.handle(ev); err != nil {
		z.t.Fatalf("op %d: Handle(%v): %v", i, ev.Type, err)
	}
}

func (m *writerModel) setRV(rv string) {
	if rv != "" {
		m.lastRV = rv
	}
}

// addToRestart is the model of buffering one listed object.
func (m *writerModel) addToRestart(cm *corev1.ConfigMap) {
	if m.buffer == nil {
		m.logsWanted["Dropping listed object"]++
		return
	}
	key := objKey(cm)
	if live, ok := m.live[key]; ok && m.reuse && cm.ResourceVersion != "" && live.uid == cm.UID && live.rv == cm.ResourceVersion {
		m.buffer[key] = live // the live object is kept; no transform
		return
	}
	if m.transformFails(cm.Name) {
		m.logsWanted["Dropping listed object"]++
		m.dropped++
		return
	}
	m.buffer[key] = m.stored(cm)
}

func (m *writerModel) stored(cm *corev1.ConfigMap) modelObject {
	return modelObject{uid: cm.UID, rv: cm.ResourceVersion, serial: cm.Data["serial"], transformed: m.transform == annotating, obj: cm}
}

func (z *writerFuzz) nextSerial() string {
	z.serial++
	return strconv.Itoa(z.serial)
}

// resourceVersion decodes the resourceVersion of a RestartDone or Bookmark:
// mostly fresh, sometimes old or empty.
func (z *writerFuzz) resourceVersion() string {
	switch b := z.next(); b % 4 {
	case 0:
		return ""
	case 1:
		return strconv.Itoa(int(b>>2)%10 + 1)
	default:
		return z.freshRV()
	}
}

// object decodes an object byte (see rvLive and friends). Every decoded
// object has its own serial, so the model can tell which one was stored,
// and random contents (testobjects.Random: pointer times, times with
// nanoseconds and zones, empty and nil maps).
func (z *writerFuzz) object() *corev1.ConfigMap {
	b := z.next()
	name := fmt.Sprintf("cm-%d", b&7)
	uid := types.UID(fmt.Sprintf("uid-%s-%d", name, (b>>3)&1))
	var rv string
	switch (b >> 4) & 3 {
	case rvLive:
		if live, ok := z.model.live[key(name)]; ok && live.rv != "" {
			uid, rv = live.uid, live.rv
		} else {
			rv = z.freshRV()
		}
	case rvFresh:
		rv = z.freshRV()
	case rvOld:
		rv = strconv.Itoa(int(b>>6) + 1)
	case rvEmpty:
	}
	cm := &corev1.ConfigMap{}
	z.random.Fill(cm)
	cm.Namespace, cm.Name, cm.UID, cm.ResourceVersion = testNamespace, name, uid, rv
	delete(cm.Annotations, "transformed")
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["serial"] = z.nextSerial()
	return cm
}

// checkStore compares the store and the informer's state with the model.
func (z *writerFuzz) checkStore(i int) {
	t, m := z.t, &z.model
	got, want := map[string]modelObject{}, map[string]modelObject{}
	for _, obj := range z.inf.GetStore().List() {
		cm := obj.(*corev1.ConfigMap)
		got[objKey(cm)] = modelObject{uid: cm.UID, rv: cm.ResourceVersion, serial: cm.Data["serial"], transformed: cm.Annotations["transformed"] == "yes", obj: cm}
	}
	for k, o := range m.live {
		want[k] = o.identity()
	}
	if !maps.EqualFunc(got, want, func(g, w modelObject) bool { return g.identity() == w }) {
		t.Fatalf("op %d: store\n%v\nwant\n%v", i, got, want)
	}
	// The contents too: the very object handed over in a plain store, its
	// protobuf form in an encoded one (docs/compatibility.md).
	for k, o := range got {
		given := m.live[k].obj
		if !m.encoded {
			if o.obj != given {
				t.Fatalf("op %d: the store holds another object for %s than the one handed to it", i, k)
			}
			continue
		}
		form := given.DeepCopy()
		testobjects.ProtobufForm(reflect.ValueOf(form))
		if !reflect.DeepEqual(o.obj, form) {
			t.Fatalf("op %d: the encoded store returns for %s another object than the one handed to it:\n%s", i, k, objectDiff(form, o.obj))
		}
	}
	if rv := z.inf.LastSyncResourceVersion(); rv != m.lastRV {
		t.Fatalf("op %d: LastSyncResourceVersion %q, want %q", i, rv, m.lastRV)
	}
	if synced := z.inf.HasSynced(); synced != m.synced {
		t.Fatalf("op %d: HasSynced %v, want %v", i, synced, m.synced)
	}
	if restarting := z.inf.indexer.Replacing(); restarting != (m.buffer != nil) {
		t.Fatalf("op %d: store restarting %v, want %v", i, restarting, m.buffer != nil)
	}
}

func (z *writerFuzz) addMirror() {
	mr := &mirror{objs: map[string]any{}, same: sameObject(z.model.encoded)}
	reg, err := z.inf.AddEventHandler(mr)
	if err != nil {
		z.t.Fatal(err)
	}
	mr.reg = reg
	z.mirrors = append(z.mirrors, mr)
}

// checkMirrors waits for every handler to have applied its notifications and
// compares what it rebuilt with the store, object for object.
func (z *writerFuzz) checkMirrors() {
	t := z.t
	want := map[string]any{}
	for _, obj := range z.inf.GetStore().List() {
		want[objKey(obj)] = obj
	}
	for n, mr := range z.mirrors {
		// Handlers run in their own goroutines: wait for them, with a bound
		// against hangs (never part of an assertion).
		deadline := time.Now().Add(10 * time.Second)
		for !maps.EqualFunc(mr.snapshot(), want, mr.same) || (z.model.synced && !mr.reg.HasSynced()) {
			if time.Now().After(deadline) {
				t.Fatalf("handler %d rebuilt keys %v (synced %v); the store holds %v (synced %v)", n,
					slices.Sorted(maps.Keys(mr.snapshot())), mr.reg.HasSynced(), slices.Sorted(maps.Keys(want)), z.model.synced)
			}
			time.Sleep(50 * time.Microsecond)
		}
		if v := mr.violation(); v != "" {
			t.Fatalf("handler %d: %s", n, v)
		}
	}
}

// checkLogs compares the dropped objects the store writer reported with the
// drops the model expects.
func (z *writerFuzz) checkLogs() {
	z.logMu.Lock()
	defer z.logMu.Unlock()
	if !maps.Equal(z.logs, z.model.logsWanted) {
		z.t.Fatalf("errors handled %v, want %v", z.logs, z.model.logsWanted)
	}
}

// mirror is a handler that keeps the objects it is notified of, by key, and
// checks that every notification fits what it holds: an add for a key it
// lacks, an update whose old object is the one it holds.
type mirror struct {
	reg toolscache.ResourceEventHandlerRegistration
	// same tells whether two objects are the same: the same pointer for a
	// plain store, equal values for an encoded one, whose every object is a
	// fresh decode.
	same func(a, b any) bool

	mu     sync.Mutex
	objs   map[string]any
	broken string
}

func (mr *mirror) OnAdd(obj any, _ bool) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	k := objKey(obj)
	if _, ok := mr.objs[k]; ok && mr.broken == "" {
		mr.broken = "OnAdd of " + k + ", which it already holds"
	}
	mr.objs[k] = obj
}

func (mr *mirror) OnUpdate(oldObj, newObj any) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	k := objKey(newObj)
	if held, ok := mr.objs[k]; (!ok || !mr.same(held, oldObj)) && mr.broken == "" {
		mr.broken = "OnUpdate of " + k + " from an object it does not hold"
	}
	mr.objs[k] = newObj
}

func (mr *mirror) OnDelete(obj any) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	k := objKey(obj)
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok && !mr.same(mr.objs[k], tomb.Obj) && mr.broken == "" {
		mr.broken = "OnDelete tombstone of " + k + " carries an object it does not hold"
	}
	delete(mr.objs, k)
}

// sameObject returns the identity of objects for a store: pointers for a
// plain one, values for an encoded one.
func sameObject(encoded bool) func(a, b any) bool {
	if encoded {
		return reflect.DeepEqual
	}
	return func(a, b any) bool { return a == b }
}

func (mr *mirror) snapshot() map[string]any {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	return maps.Clone(mr.objs)
}

func (mr *mirror) violation() string {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	return mr.broken
}
