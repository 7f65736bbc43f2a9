package informer

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
)

// Users' unit tests run informers on client-go's fake clientset, whose
// objects keep the resourceVersion they were created with through every
// update, while its LIST counts writes: its versions are not one order.
// Our informer must deliver every update there as client-go's does. Before
// the watcher judged changes against the stored object, the second update
// below was taken as older than the collection: the informer relisted, and
// relist reuse, seeing the same resourceVersion, kept the old object.
func TestFakeClientsetWithFixtureResourceVersions(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "5"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", ResourceVersion: "1"}},
	)
	lw := toolscache.ToListWatcherWithWatchListSemantics(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().ConfigMaps("ns").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().ConfigMaps("ns").Watch(ctx, o)
		},
	}, cs)
	ours := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil)
	theirs := toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil)
	ourRec, theirRec := newRecorder(), newRecorder()
	for inf, rec := range map[toolscache.SharedIndexInformer]*recorder{ours: ourRec, theirs: theirRec} {
		if _, err := inf.AddEventHandler(rec); err != nil {
			t.Fatal(err)
		}
		run(t, inf)
	}
	waitSynced(t, ours, theirs)

	ctx := context.Background()
	for i, name := range []string{"a", "b", "a", "b"} {
		cm, err := cs.CoreV1().ConfigMaps("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{"update": fmt.Sprint(i)}
		if _, err := cs.CoreV1().ConfigMaps("ns").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := cm.Data["update"]
		for who, inf := range map[string]toolscache.SharedIndexInformer{"client-go": theirs, "ours": ours} {
			eventually(t, fmt.Sprintf("%s's store to hold update %d of %s", who, i, name), func() bool {
				got, exists, err := inf.GetStore().GetByKey("ns/" + name)
				return err == nil && exists && got.(*corev1.ConfigMap).Data["update"] == want
			})
		}
	}
	if err := ours.(*SharedIndexInformer).SyncStatus().LastError; err != nil {
		t.Errorf("SyncStatus reports %v; client-go's informer saw nothing wrong", err)
	}
	if o, c := len(ourRec.stateCopy()), len(theirRec.stateCopy()); o != c {
		t.Errorf("our handler holds %d objects, client-go's %d", o, c)
	}
}
