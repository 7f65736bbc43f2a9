package listerwatcher

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// list sends p's LIST request and hands the page on: the next phase lists
// the next page, or watches from the list's resourceVersion after the last.
func (m *machine) list(ctx context.Context, p listing) phase {
	if m.relistRequested() {
		return m.requested(p)
	}
	list, err := m.request(ctx, p.opts)
	switch {
	case ctx.Err() != nil:
		return p
	case m.relistRequested():
		return m.requested(p) // the page answers the options before the call
	case err != nil:
		return m.fail(ctx, p, OpList, err)
	}

	// list is dead past this call: while the consumer handles the page,
	// only the items copied out of it are reachable.
	items, rv, next, err := extract(list)
	if err != nil {
		return m.fail(ctx, p, OpList, unreadable{fmt.Errorf("cannot read the LIST response: %w", err)})
	}
	if !p.announced {
		p.announced = true
		if err := m.deliver(ctx, Event{Type: RestartStart, Strategy: ListWatch, Reason: p.reason}); err != nil {
			return m.undelivered(ctx, p, err)
		}
	}
	if len(items) > 0 {
		if err := m.deliver(ctx, Event{Type: RestartPage, Objects: items, Strategy: ListWatch}); err != nil {
			return m.undelivered(ctx, p, err)
		}
	}
	if next != "" {
		// The API server rejects resourceVersion(Match) with continue.
		p.opts = metav1.ListOptions{Limit: m.pageSize, Continue: next}
		return p
	}
	if rv == "" {
		// Nothing is lost: a watch from "" starts with ADDED events of the
		// whole collection, as client-go's reflector relies on.
		m.logger.Info("Warning: the LIST returned no resourceVersion; watching from the newest state, whose initial events replay the collection")
	}
	if err := m.deliver(ctx, Event{Type: RestartDone, ResourceVersion: rv, Strategy: ListWatch}); err != nil {
		return m.undelivered(ctx, p, err)
	}
	return watching{rv: rv}
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
// a kept item does not pin the page, with its resourceVersion and continue.
func extract(list runtime.Object) (items []runtime.Object, rv, next string, err error) {
	if list == nil {
		return nil, "", "", errors.New("the ListerWatcher returned no list and no error")
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, "", "", err
	}
	items, err = meta.ExtractListWithAlloc(list)
	if err != nil {
		return nil, "", "", err
	}
	return items, lm.GetResourceVersion(), lm.GetContinue(), nil
}
