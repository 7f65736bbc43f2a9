package informer

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"

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
