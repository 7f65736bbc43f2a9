package informer

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

const testNamespace = "ns"

// fastBackoff keeps retries in tests short.
var fastBackoff = Backoff{Initial: 5 * time.Millisecond, Factor: 2, Cap: 50 * time.Millisecond, Jitter: 0.5, ResetAfter: time.Minute}

func configMap(name string, data ...string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name}, Data: map[string]string{}}
	for i := 0; i+1 < len(data); i += 2 {
		cm.Data[data[i]] = data[i+1]
	}
	return cm
}

func key(name string) string { return testNamespace + "/" + name }

// newServer returns a fake API server holding n ConfigMaps cm-0000...
func newServer(t testing.TB, n int) *fake.Server {
	t.Helper()
	s := fake.NewServer(&corev1.ConfigMapList{})
	t.Cleanup(s.Close)
	if err := s.CreateN(n, func(i int) kruntime.Object { return configMap(fmt.Sprintf("cm-%04d", i), "i", fmt.Sprint(i)) }); err != nil {
		t.Fatal(err)
	}
	return s
}

func mustCreate(t testing.TB, s *fake.Server, obj kruntime.Object) kruntime.Object {
	t.Helper()
	out, err := s.Create(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustUpdate(t testing.TB, s *fake.Server, obj kruntime.Object) kruntime.Object {
	t.Helper()
	out, err := s.Update(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustDelete(t testing.TB, s *fake.Server, name string) {
	t.Helper()
	if _, err := s.Delete(testNamespace, name); err != nil {
		t.Fatal(err)
	}
}

// run starts inf and stops it (waiting for Run to return) when the test ends.
func run(t testing.TB, inf toolscache.SharedIndexInformer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("informer did not stop within 30s")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls cond until it holds or 20 seconds pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (goroutines: %s)", what, dumpGoroutines())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// dumpGoroutines writes every goroutine's stack to a file that outlives the
// test, for a timeout to be debuggable, and returns its path.
func dumpGoroutines() string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	f, err := os.CreateTemp("", "leaninformer-goroutines-*.txt")
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if _, err := f.Write(buf); err != nil {
		return err.Error()
	}
	return f.Name()
}

func waitSynced(t testing.TB, checkers ...interface{ HasSynced() bool }) {
	t.Helper()
	for _, c := range checkers {
		eventually(t, "sync", c.HasSynced)
	}
}

// call is one handler invocation as a recorder saw it.
type call struct {
	op        string // add, update, delete
	key       string
	rv        string // new object's (for delete: the deleted object's)
	oldRV     string
	initial   bool
	tombstone bool
	obj, old  any
}

// recorder is a ResourceEventHandler that records every call and rebuilds
// the store from them, as a controller keeping its own state would.
type recorder struct {
	mu    sync.Mutex
	calls []call
	state map[string]string // key -> resourceVersion
	// onCall, if set, runs inside the handler call (before recording).
	onCall func(c call)
}

func newRecorder() *recorder { return &recorder{state: map[string]string{}} }

func objKey(obj any) string {
	k, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		panic(err)
	}
	return k
}

func rvOf(obj any) string {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

func (r *recorder) record(c call) {
	if r.onCall != nil {
		r.onCall(c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	switch c.op {
	case "add", "update":
		r.state[c.key] = c.rv
	case "delete":
		delete(r.state, c.key)
	}
}

func (r *recorder) OnAdd(obj any, isInInitialList bool) {
	r.record(call{op: "add", key: objKey(obj), rv: rvOf(obj), initial: isInInitialList, obj: obj})
}

func (r *recorder) OnUpdate(oldObj, newObj any) {
	r.record(call{op: "update", key: objKey(newObj), rv: rvOf(newObj), oldRV: rvOf(oldObj), obj: newObj, old: oldObj})
}

func (r *recorder) OnDelete(obj any) {
	_, tomb := obj.(toolscache.DeletedFinalStateUnknown)
	r.record(call{op: "delete", key: objKey(obj), rv: rvOf(obj), tombstone: tomb, obj: obj})
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}

func (r *recorder) stateCopy() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.state))
	for k, v := range r.state {
		out[k] = v
	}
	return out
}

// storeState maps keys to resourceVersions.
func storeState(s toolscache.Store) map[string]string {
	out := map[string]string{}
	for _, obj := range s.List() {
		out[objKey(obj)] = rvOf(obj)
	}
	return out
}

// serverState is what a fresh LIST of the fake server returns.
func serverState(t testing.TB, s *fake.Server) map[string]string {
	t.Helper()
	list, err := s.ListerWatcher().List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, obj := range items {
		out[objKey(obj)] = rvOf(obj)
	}
	return out
}

func equalStates(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func diffStates(want, got map[string]string) string {
	var out string
	for k, v := range want {
		if w, ok := got[k]; !ok {
			out += fmt.Sprintf("missing %s@%s; ", k, v)
		} else if w != v {
			out += fmt.Sprintf("%s at %s, want %s; ", k, w, v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			out += fmt.Sprintf("extra %s@%s; ", k, v)
		}
	}
	return out
}

// gone is the Status an API server sends when a watch's resourceVersion has
// been compacted away.
func gone() *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}
}
