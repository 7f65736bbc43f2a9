package informer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
)

// tableLW is a ListerWatcher of unstructured ConfigMaps whose LIST answers
// what list holds (or a Table, as a dynamic client asking for as=Table
// decodes it: an UnstructuredList of kind Table, without items), and whose
// watches are handed to the test on watches.
type tableLW struct {
	mu      sync.Mutex
	table   bool
	items   []unstructured.Unstructured
	rv      string
	watches chan *watch.RaceFreeFakeWatcher
}

func newTableLW(table bool) *tableLW {
	return &tableLW{table: table, rv: "5", watches: make(chan *watch.RaceFreeFakeWatcher, 16)}
}

func (l *tableLW) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.table {
		return tableObject(l.rv).ToList()
	}
	return &unstructured.UnstructuredList{
		Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList", "metadata": map[string]any{"resourceVersion": l.rv}},
		Items:  slices.Clone(l.items),
	}, nil
}

func (l *tableLW) WatchWithContext(context.Context, metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewRaceFreeFake()
	l.watches <- w
	return w, nil
}

func (l *tableLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *tableLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (*tableLW) IsWatchListSemanticsUnSupported() bool { return true }

// tableObject is one row of ConfigMap ns/x as a Table, as an API server
// answers a request with as=Table and a dynamic client decodes it.
func tableObject(rv string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion":        "meta.k8s.io/v1",
		"kind":              "Table",
		"metadata":          map[string]any{"resourceVersion": rv},
		"columnDefinitions": []any{map[string]any{"name": "Name", "type": "string"}},
		"rows": []any{map[string]any{"cells": []any{"x"}, "object": map[string]any{
			"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
			"metadata": map[string]any{"name": "x", "namespace": "ns", "resourceVersion": rv},
		}}},
	}}
}

func unstructuredConfigMap(name, rv string) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": rv},
	}}
}

type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (e *errorLog) handler(_ context.Context, _ *toolscache.Reflector, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
}

func (e *errorLog) any(match func(error) bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.ContainsFunc(e.errs, match)
}

// Responses in Table form (a ListerWatcher asking for as=Table) are not
// objects an informer of unstructured objects can hold. client-go's
// reflector refuses a LIST answered by a Table (its watch error handler
// hears of it, the informer does not sync) and drops a Table on a watch;
// ours refuses the LIST alike and takes a Table on a watch for an object of
// another kind (the watch ends, the handler hears of it, and it relists).
// Neither stores a Table (it has no name: its key would be "").
func TestDifferentialTableResponses(t *testing.T) {
	mentions := func(s string) func(error) bool {
		return func(err error) bool { return strings.Contains(err.Error(), s) }
	}
	t.Run("a LIST answered by a Table", func(t *testing.T) {
		ourLW, theirLW := newTableLW(true), newTableLW(true)
		ours := NewSharedIndexInformerWithOptions(ourLW, &unstructured.Unstructured{}, toolscache.SharedIndexInformerOptions{},
			WithStrategy(ListWatch), WithBackoff(fastBackoff))
		theirs := toolscache.NewSharedIndexInformer(theirLW, &unstructured.Unstructured{}, 0, toolscache.Indexers{})
		ourErrs, theirErrs := &errorLog{}, &errorLog{}
		must(t, ours.SetWatchErrorHandlerWithContext(ourErrs.handler))
		must(t, theirs.SetWatchErrorHandlerWithContext(theirErrs.handler))
		run(t, ours)
		run(t, theirs)
		eventually(t, "client-go's handler to hear of the Table", func() bool { return theirErrs.any(mentions("Kind=Table")) })
		eventually(t, "our handler to hear of the Table", func() bool { return ourErrs.any(mentions("Kind=Table")) })
		for name, inf := range map[string]toolscache.SharedIndexInformer{"ours": ours, "client-go": theirs} {
			if inf.HasSynced() {
				t.Errorf("%s: synced on a LIST answered by a Table", name)
			}
			if keys := inf.GetStore().ListKeys(); len(keys) != 0 {
				t.Errorf("%s: stores %q", name, keys)
			}
		}
	})
	t.Run("a watch sending a Table", func(t *testing.T) {
		ourLW, theirLW := newTableLW(false), newTableLW(false)
		ours := NewSharedIndexInformerWithOptions(ourLW, &unstructured.Unstructured{}, toolscache.SharedIndexInformerOptions{},
			WithStrategy(ListWatch), WithBackoff(fastBackoff))
		theirs := toolscache.NewSharedIndexInformer(theirLW, &unstructured.Unstructured{}, 0, toolscache.Indexers{})
		ourErrs := &errorLog{}
		must(t, ours.SetWatchErrorHandlerWithContext(ourErrs.handler))
		run(t, ours)
		run(t, theirs)
		waitSynced(t, ours, theirs)
		for _, lw := range []*tableLW{ourLW, theirLW} {
			w := <-lw.watches
			lw.mu.Lock()
			y := unstructuredConfigMap("y", "7")
			lw.items, lw.rv = append(lw.items, y), "7"
			lw.mu.Unlock()
			w.Add(tableObject("6"))
			w.Add(y.DeepCopy())
		}
		for name, inf := range map[string]toolscache.SharedIndexInformer{"ours": ours, "client-go": theirs} {
			eventually(t, name+" to store ns/y", func() bool { _, ok, _ := inf.GetStore().GetByKey("ns/y"); return ok })
			if keys := inf.GetStore().ListKeys(); !slices.Equal(keys, []string{"ns/y"}) {
				t.Errorf("%s: stores %q, want [ns/y]", name, keys)
			}
		}
		if !ourErrs.any(func(err error) bool {
			return errors.Is(err, listerwatcher.ErrUnexpectedObject) && strings.Contains(err.Error(), "Kind=Table")
		}) {
			t.Errorf("our watch error handler was not told of the Table: %v", ourErrs.errs)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
