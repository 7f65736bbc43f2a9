package informer

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/intern"
)

// unshared counts the stored ConfigMaps whose value under key (in data, or
// in annotations with annotation) does not share the bytes of the
// canonical instance of want.
func unshared(t *testing.T, store toolscache.Store, want, key string, annotation bool) (unshared, total int) {
	t.Helper()
	canonical := intern.Default().String(strings.Clone(want))
	for _, obj := range store.List() {
		cm := obj.(*corev1.ConfigMap)
		v, ok := cm.Data[key]
		if annotation {
			v, ok = cm.Annotations[key]
		}
		if !ok {
			continue
		}
		if v != want {
			t.Fatalf("%s: %s = %q, want %q", cm.Name, key, v, want)
		}
		total++
		if unsafe.StringData(v) != unsafe.StringData(canonical) {
			unshared++
		}
	}
	return unshared, total
}

func TestWithInterningSharesStoredStrings(t *testing.T) {
	for _, strategy := range strategies {
		t.Run(strategy.String(), func(t *testing.T) {
			// Values of their own: the table is process-wide.
			value, note := "data-of-"+t.Name(), "note-of-"+t.Name()
			s := newServer(t, 0)
			for i := range 10 {
				mustCreate(t, s, configMap(fmt.Sprintf("cm-%04d", i), "k", strings.Clone(value)))
			}
			inf := newInformer(s, 0, WithStrategy(strategy), WithInterning())
			// The user's transform runs first: what it adds is interned too.
			err := inf.SetTransform(func(obj any) (any, error) {
				cm := obj.(*corev1.ConfigMap)
				if cm.Name == "refused" {
					return nil, errors.New("refusing")
				}
				cm.Annotations = map[string]string{"note": strings.Clone(note)}
				return cm, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			run(t, inf)
			waitSynced(t, inf)
			// The first two occurrences of a value keep their own copies.
			if n, total := unshared(t, inf.GetStore(), value, "k", false); total != 10 || n > 2 {
				t.Errorf("after the list, %d of %d stored values are not shared, want at most 2", n, total)
			}
			if n, total := unshared(t, inf.GetStore(), note, "note", true); total != 10 || n > 2 {
				t.Errorf("%d of %d values the transform added are not shared, want at most 2", n, total)
			}

			mustCreate(t, s, configMap("refused", "k", strings.Clone(value)))
			mustCreate(t, s, configMap("live", "k", strings.Clone(value)))
			eventually(t, "the live object", func() bool {
				_, ok, _ := inf.GetStore().GetByKey(key("live"))
				return ok
			})
			if _, ok, _ := inf.GetStore().GetByKey(key("refused")); ok {
				t.Error("an object the user's transform refused was stored")
			}
			forceRelist(t, s, func() {
				mustUpdate(t, s, configMap("cm-0003", "k", strings.Clone(value), "changed", "yes"))
			})
			eventually(t, "the relisted change", func() bool {
				obj, _, _ := inf.GetStore().GetByKey(key("cm-0003"))
				return obj.(*corev1.ConfigMap).Data["changed"] == "yes"
			})
			if n, total := unshared(t, inf.GetStore(), value, "k", false); total != 11 || n > 2 {
				t.Errorf("after a live event and a relist, %d of %d stored values are not shared, want at most 2", n, total)
			}
		})
	}
}

func TestWithoutInterningStoredStringsStayApart(t *testing.T) {
	value := "data-of-" + t.Name()
	s := newServer(t, 0)
	for i := range 5 {
		mustCreate(t, s, configMap(fmt.Sprintf("cm-%04d", i), "k", strings.Clone(value)))
	}
	inf := newInformer(s, 0)
	run(t, inf)
	waitSynced(t, inf)
	if n, total := unshared(t, inf.GetStore(), value, "k", false); n != total || total != 5 {
		t.Errorf("without interning %d of %d stored values are unshared, want all 5", n, total)
	}
}

// ExampleWithInterning shows a controller-runtime manager whose informers
// intern what they store.
func ExampleWithInterning() {
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:6443"}, ctrl.Options{
		NewCache: NewCacheWith(WithInterning()),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = mgr // register controllers, then mgr.Start(ctx)
}

// withTable makes the informer intern with tab instead of the process-wide
// table, so that a test can count what it interned.
func withTable(tab *intern.Table) Option { return func(c *config) { c.interner = tab } }

// TestWithInterningAndEncodedStoreInternsOnlyWhatStaysDecoded: an encoded
// store keeps its objects as bytes, and every read decodes a fresh copy, so
// interning the objects it encodes is CPU spent for nothing (their strings
// die with the decoded object). Objects the codec refuses (typed custom
// resources) stay decoded: those are worth interning, as a plain store's.
func TestWithInterningAndEncodedStoreInternsOnlyWhatStaysDecoded(t *testing.T) {
	value := "data-of-" + t.Name()
	t.Run("encoded", func(t *testing.T) {
		tab := intern.NewTable()
		s := newServer(t, 0)
		for i := range 10 {
			mustCreate(t, s, configMap(fmt.Sprintf("cm-%04d", i), "k", strings.Clone(value)))
		}
		inf := newInformer(s, 0, WithEncodedStore(), WithInterning(), withTable(tab))
		run(t, inf)
		waitSynced(t, inf)
		mustCreate(t, s, configMap("live", "k", strings.Clone(value)))
		eventually(t, "the live object", func() bool {
			_, ok, _ := inf.GetStore().GetByKey(key("live"))
			return ok
		})
		if stats := inf.indexer.CodecStats(); stats.Unencoded != 0 {
			t.Fatalf("CodecStats %+v: ConfigMaps were kept decoded", stats)
		}
		if n := tab.Len(); n != 0 {
			t.Errorf("the table got %d entries from 11 ConfigMaps the store keeps encoded: they were interned for nothing", n)
		}
	})
	t.Run("refused", func(t *testing.T) {
		tab := intern.NewTable()
		c, err := newConfig([]Option{WithEncodedStore(), WithInterning(), withTable(tab)})
		if err != nil {
			t.Fatal(err)
		}
		store := cache.NewIndexer(toolscache.MetaNamespaceKeyFunc, nil, c.indexerOptions()...)
		transform := c.storeTransform(nil)
		for i := range 4 {
			w := &widget{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: fmt.Sprint("w", i), UID: types.UID(fmt.Sprint("uid-", i)), Labels: map[string]string{"k": strings.Clone(value)}}}
			obj := w
			if transform != nil {
				out, err := transform(w)
				if err != nil {
					t.Fatal(err)
				}
				obj = out.(*widget)
			}
			// Upsert, as the informer writes: Add leaves a caller's object
			// as it is (TestDirectWritesLeaveTheCallersRefusedObjectAlone).
			if _, _, err := store.Upsert(obj); err != nil {
				t.Fatal(err)
			}
		}
		if stats := store.CodecStats(); stats.Unencoded != 4 {
			t.Fatalf("CodecStats %+v: the widgets were not refused, the test tests nothing", stats)
		}
		a, _, _ := store.GetByKey("n/w2")
		b, _, _ := store.GetByKey("n/w3")
		if va, vb := a.(*widget).Labels["k"], b.(*widget).Labels["k"]; unsafe.StringData(va) != unsafe.StringData(vb) {
			t.Error("the third and fourth widgets, kept decoded, do not share their label value")
		}
	})
}
