package informer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/consistencydetector"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// exactLists counts the LISTs a server got at an exact resourceVersion:
// the consistency detector's.
func exactLists(s *fake.Server) int {
	n := 0
	for _, req := range s.Requests() {
		if req.Verb == "list" && req.Options.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
			n++
		}
	}
	return n
}

// With client-go's watch-list consistency detector on, both informers check
// a streamed list with one LIST at its resourceVersion before using it, and
// sync when the data agree; paginated lists are not checked.
func TestDifferentialConsistencyDetector(t *testing.T) {
	defer consistencydetector.SetDataConsistencyDetectionForWatchListEnabledForTest(true)()
	for _, strategy := range strategies {
		t.Run(strategy.String(), func(t *testing.T) {
			ourServer, theirServer := newServer(t, 3), newServer(t, 3)
			ours := newInformer(ourServer, 0, WithStrategy(strategy))
			lw := theirServer.ListerWatcher()
			lw.WatchListUnsupported = strategy == ListWatch
			theirs := toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil)
			for _, inf := range []toolscache.SharedIndexInformer{ours, theirs} {
				if err := inf.SetTransform(poisonTransform); err != nil {
					t.Fatal(err)
				}
			}
			run(t, ours)
			run(t, theirs)
			waitSynced(t, ours, theirs)
			want := 0
			if strategy == StreamingList {
				want = 1
			}
			if o, c := exactLists(ourServer), exactLists(theirServer); o != want || c != want {
				t.Fatalf("exact-resourceVersion LISTs: ours %d, client-go's %d, want %d each", o, c, want)
			}
		})
	}
}

// inconsistentLW answers the consistency detector's LIST (at an exact
// resourceVersion) with one object changed.
type inconsistentLW struct{ *fake.ListerWatcher }

func (lw inconsistentLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw inconsistentLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := lw.ListerWatcher.ListWithContext(ctx, opts)
	if err == nil && opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
		obj.(*corev1.ConfigMapList).Items[0].Data["changed"] = "behind the stream's back"
	}
	return obj, err
}

// The detector is for CI: on a difference, both informers panic, which
// ends the process. Each runs in a child process of this test binary, with
// KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=true as CI sets it.
func TestDifferentialConsistencyDetectorPanics(t *testing.T) {
	if which := os.Getenv("LEANINFORMER_INCONSISTENT_CHILD"); which != "" {
		s := newServer(t, 3)
		var inf toolscache.SharedIndexInformer
		if which == "client-go" {
			inf = toolscache.NewSharedIndexInformer(inconsistentLW{s.ListerWatcher()}, &corev1.ConfigMap{}, 0, nil)
		} else {
			inf = NewSharedIndexInformerWithOptions(inconsistentLW{s.ListerWatcher()}, &corev1.ConfigMap{},
				toolscache.SharedIndexInformerOptions{}, WithBackoff(fastBackoff), WithStrategy(StreamingList))
		}
		run(t, inf)
		time.Sleep(20 * time.Second) // the panic ends the process first
		t.Fatal("no panic")
	}
	for _, which := range []string{"ours", "client-go"} {
		t.Run(which, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestDifferentialConsistencyDetectorPanics$", "-test.count=1")
			cmd.Env = append(os.Environ(), "LEANINFORMER_INCONSISTENT_CHILD="+which, "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=true")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "data inconsistency detected") {
				t.Fatalf("the child running %s's informer exited with %v, want a panic naming the inconsistency; output:\n%s", which, err, out)
			}
		})
	}
}

// An encoded store holds the streamed list as encoded bytes; what it
// decodes must still agree with the check's LIST, with NewCacheWith's read
// kind too (its reads carry TypeMeta, the LIST's typed items do not: before
// the check set it on them, this panicked, "data inconsistency detected"). (Creation times are whole
// seconds, as an API server sends them: the fake's own carry nanoseconds,
// which protobuf does not keep.)
func TestConsistencyDetectorWithEncodedStore(t *testing.T) {
	defer consistencydetector.SetDataConsistencyDetectionForWatchListEnabledForTest(true)()
	s := fake.NewServer(&corev1.ConfigMapList{})
	t.Cleanup(s.Close)
	for i := range 3 {
		cm := configMap(fmt.Sprintf("cm-%d", i), "i", fmt.Sprint(i))
		cm.CreationTimestamp = metav1.NewTime(time.Unix(1_700_000_000+int64(i), 0))
		mustCreate(t, s, cm)
	}
	for _, readKind := range []bool{false, true} {
		s.ResetRequests()
		opts := []Option{WithStrategy(StreamingList), WithEncodedStore()}
		if readKind {
			opts = append(opts, withReadKind(corev1.SchemeGroupVersion.WithKind("ConfigMap")))
		}
		inf := newInformer(s, 0, opts...)
		if err := inf.SetTransform(poisonTransform); err != nil {
			t.Fatal(err)
		}
		stop := run(t, inf)
		waitSynced(t, inf)
		if n := exactLists(s); n != 1 {
			t.Fatalf("read kind %v: %d exact-resourceVersion LISTs, want the check's one", readKind, n)
		}
		stop()
	}
}
