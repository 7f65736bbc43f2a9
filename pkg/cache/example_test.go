package cache_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8stypes "k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/codec"
)

func pod(name, uid, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: name, UID: k8stypes.UID(uid), ResourceVersion: rv,
	}}
}

// A relist: the replace buffer fills page by page while readers keep the
// live generation, then FinishReplace swaps it in and says what changed.
func ExampleIndexer_FinishReplace() {
	store := cache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
	})
	_ = store.Add(pod("a", "uid-a", "10"))
	_ = store.Add(pod("b", "uid-b", "11"))

	store.StartReplace()
	// The LIST returns a fresh copy of "a" (unchanged), a newer "c", and no "b".
	for _, p := range []*corev1.Pod{pod("a", "uid-a", "10"), pod("c", "uid-c", "12")} {
		if _, reused, err := store.AddToReplace(p, nil); err == nil && reused {
			fmt.Println("reused the live", p.Name)
		}
	}
	fmt.Println("still live during the paged replace:", len(store.List()))

	diff, err := store.FinishReplace("12")
	if err != nil {
		panic(err)
	}
	for _, c := range diff.Changes {
		switch c.Old {
		case nil:
			fmt.Println("added", c.Key)
		case c.New: // relist reuse kept the live object
			fmt.Println("unchanged", c.Key)
		default:
			fmt.Println("updated", c.Key)
		}
	}
	for _, d := range diff.Deleted {
		fmt.Println("deleted", d.Key)
	}
	fmt.Println("resourceVersion:", store.LastStoreSyncResourceVersion())
	// Output:
	// reused the live a
	// still live during the paged replace: 2
	// unchanged default/a
	// added default/c
	// deleted default/b
	// resourceVersion: 12
}

// An encoded store keeps each object as bytes and decodes a fresh copy on
// every read: what a caller does with it never reaches the store.
func ExampleWithCodec() {
	store := cache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
	}, cache.WithCodec(codec.New()))
	_ = store.Add(pod("a", "0d4b8a4e-5b7c-4d1e-9f3a-2c6b8e0a1f24", "10"))

	read, _, _ := store.GetByKey("default/a")
	read.(*corev1.Pod).Labels = map[string]string{"changed": "by the caller"}
	again, _, _ := store.GetByKey("default/a")
	fmt.Println("labels in the store:", again.(*corev1.Pod).Labels)

	// Updates use the index values and identity kept beside the bytes; the
	// old object is handed out encoded, for the caller to decode if it needs it.
	old, _, _ := store.Upsert(pod("a", "0d4b8a4e-5b7c-4d1e-9f3a-2c6b8e0a1f24", "11"))
	oldPod, _ := store.Decode(old)
	fmt.Println("replaced resourceVersion:", oldPod.(*corev1.Pod).ResourceVersion)

	stats := store.CodecStats()
	fmt.Println("encoded:", stats.Encoded, "kept decoded:", stats.Unencoded)
	// Output:
	// labels in the store: map[]
	// replaced resourceVersion: 10
	// encoded: 1 kept decoded: 0
}

// ListByLabels lists what a label selector matches; with package codec's
// Codec, it reads the labels of the others from their encodings and
// decodes only the matches.
func ExampleIndexer_ListByLabels() {
	store := cache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
	}, cache.WithCodec(codec.New()))
	for i, app := range []string{"web", "db", "web"} {
		p := pod(fmt.Sprint("p", i), fmt.Sprint("uid-", i), "1")
		p.Labels = map[string]string{"app": app}
		_ = store.Add(p)
	}
	web, err := store.ListByLabels(cache.LabelQuery{
		Selector:  labels.SelectorFromSet(labels.Set{"app": "web"}),
		IndexName: toolscache.NamespaceIndex, IndexedValue: "default", // optional: one namespace
		Limit: 1, // optional
	})
	fmt.Println(len(web), web[0].(*corev1.Pod).Labels["app"], err)
	// Output:
	// 1 web <nil>
}
