package cache

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/codec"
	"github.com/leaninformer/leaninformer/pkg/intern"
)

// TestEncodedIndexValuesOfOneObjectGetNoEntry: an encoded entry keeps its
// index values interned, so that many objects share a namespace or a node
// name. A value only one object has (an index by name) must get no entry
// in the table however often that object is updated: versions of one
// object are one object.
func TestEncodedIndexValuesOfOneObjectGetNoEntry(t *testing.T) {
	const n = 300
	byName := toolscache.Indexers{"name": func(obj any) ([]string, error) {
		return []string{"name-index-" + obj.(*corev1.ConfigMap).Name}, nil
	}}
	store := NewIndexer(toolscache.MetaNamespaceKeyFunc, byName, WithCodec(codec.New()))
	runtime.GC()
	intern.Default().Sweep()
	before := intern.Default().Len()
	for version := range 3 {
		for i := range n {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: "n", Name: fmt.Sprintf("cm-%04d", i), UID: types.UID(fmt.Sprint("uid-", i)), ResourceVersion: fmt.Sprint(version*n + i + 1),
			}}
			if _, _, err := store.Upsert(cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	if grown := intern.Default().Len() - before; grown >= n {
		t.Errorf("the interning table grew by %d entries for the name index values of %d objects, each stored in 3 versions: versions of one object counted as more objects", grown, n)
	}
	runtime.KeepAlive(store)
}
