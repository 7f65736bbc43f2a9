package listerwatcher

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// list sends p's LIST request and hands the page on. It returns the
// listing of the next page, or, with after set, the next phase: a watch from
// the list's resourceVersion after the last page, or what a failure leads to.
func (m *machine) list(ctx context.Context, p listing) (next listing, after phase) {
	if m.relistRequested() {
		return p, m.requested(p)
	}
	list, err := m.request(ctx, p.opts)
	switch {
	case ctx.Err() != nil:
		return p, p
	case m.relistRequested():
		return p, m.requested(p) // the page answers the options before the call
	case err != nil:
		return p, m.fail(ctx, p, OpList, err)
	}

	// list is dead past this call: while the consumer handles the page,
	// only the items copied out of it are reachable.
	items, rv, cont, remaining, err := extract(list)
	if err != nil {
		return p, m.fail(ctx, p, OpList, unreadable{fmt.Errorf("cannot read the LIST response: %w", err)})
	}
	p.pages = m.sizer.observe(p.pages, items, remaining, cont != "")
	if !p.announced {
		p.announced = true
		if err := m.deliver(ctx, Event{Type: RestartStart, Strategy: ListWatch, Reason: p.reason}); err != nil {
			return p, m.undelivered(ctx, p, err)
		}
	}
	if len(items) > 0 {
		if err := m.deliver(ctx, Event{Type: RestartPage, Objects: items, Strategy: ListWatch}); err != nil {
			return p, m.undelivered(ctx, p, err)
		}
	}
	if cont != "" {
		// The API server rejects resourceVersion(Match) with continue.
		p.opts = metav1.ListOptions{Limit: p.pages.limit, Continue: cont}
		return p, nil
	}
	if rv == "" {
		// Nothing is lost: a watch from "" starts with ADDED events of the
		// whole collection, as client-go's reflector relies on.
		m.logger.Info("Warning: the LIST returned no resourceVersion; watching from the newest state, whose initial events replay the collection")
	}
	if err := m.deliver(ctx, Event{Type: RestartDone, ResourceVersion: rv, Strategy: ListWatch}); err != nil {
		return p, m.undelivered(ctx, p, err)
	}
	m.sizer.done(p.pages)
	return p, watching{rv: rv}
}

func (m *machine) request(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	start := m.clock.Now()
	list, err := m.lw.ListWithContext(ctx, opts)
	items := 0
	if err == nil && list != nil {
		items = meta.LenList(list)
	}
	m.observer.ListRequest(opts, items, m.clock.Since(start), err)
	return list, err
}

// extract returns a LIST response's items, each in its own allocation so that
// a kept item does not pin the page, with its resourceVersion, continue and
// remainingItemCount.
func extract(list runtime.Object) (items []runtime.Object, rv, next string, remaining *int64, err error) {
	if list == nil {
		return nil, "", "", nil, errors.New("the ListerWatcher returned no list and no error")
	}
	if gvk, ok := asTable(list); ok {
		return nil, "", "", nil, fmt.Errorf("%w: %v (does the ListerWatcher ask for as=Table?)", ErrUnexpectedObject, gvk)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, "", "", nil, err
	}
	items, err = meta.ExtractListWithAlloc(list)
	if err != nil {
		return nil, "", "", nil, err
	}
	return items, lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount(), nil
}

// asTable reports an answer in Table form (a request with as=Table), as a
// dynamic client decodes it: an unstructured object, or a list without
// items, of kind Table in meta.k8s.io/v1 or v1beta1. client-go's reflector
// refuses a LIST answered so and drops such a watch event.
func asTable(obj runtime.Object) (schema.GroupVersionKind, bool) {
	var kind string
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		kind = o.GetKind()
	case *unstructured.UnstructuredList:
		kind = o.GetKind()
	}
	if kind != "Table" { // every watch event comes here: parse no apiVersion for others
		return schema.GroupVersionKind{}, false
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	return gvk, gvk.Group == metav1.GroupName && gvk.Kind == "Table" && (gvk.Version == "v1" || gvk.Version == "v1beta1")
}
