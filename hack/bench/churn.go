package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/leaninformer/leaninformer/internal/benchkit"
	"github.com/leaninformer/leaninformer/internal/faultproxy"
)

// churnDeletedPercent is the share of the bench objects a churn deletes,
// and creates anew, besides those it modifies.
const churnDeletedPercent = 1

// churn is what changes while a child's watch is down before its relist:
// modified bench objects (a new revision annotation), deleted ones and new
// ones, by index.
type churn struct {
	modified, deleted, created []int
}

// planChurn modifies percent of n bench objects (those of the lowest
// indices), deletes 1% of them (the highest indices, never modified) and
// creates as many after them. percent 0 plans nothing.
func planChurn(n, percent int) churn {
	if percent == 0 {
		return churn{}
	}
	d := max(1, n*churnDeletedPercent/100)
	var c churn
	for i := range min(n*percent/100, n-d) {
		c.modified = append(c.modified, i)
	}
	for i := n - d; i < n; i++ {
		c.deleted = append(c.deleted, i)
		c.created = append(c.created, i+d)
	}
	return c
}

// apply makes the changes through cs, setting the revision annotation of
// the modified objects to rev.
func (c churn) apply(ctx context.Context, cs kubernetes.Interface, k objectKind, rev, workers int, prog *benchkit.Progress) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, revisionAnnotation, revision(rev))
	steps := []struct {
		what string
		idx  []int
		do   func(ctx context.Context, i int) error
	}{
		{"modify", c.modified, func(ctx context.Context, i int) error { return k.patch(ctx, cs, k.namespace(i), k.name(i), patch) }},
		{"delete", c.deleted, func(ctx context.Context, i int) error { return k.delete(ctx, cs, k.namespace(i), k.name(i)) }},
		{"create", c.created, func(ctx context.Context, i int) error {
			if err := k.create(ctx, cs, i); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			return nil
		}},
	}
	for _, s := range steps {
		err := benchkit.Parallel(ctx, workers, len(s.idx), func(ctx context.Context, j int) error { return s.do(ctx, s.idx[j]) },
			func(done int) { prog.Set(fmt.Sprintf("churn: %s %d/%d %s", s.what, done, len(s.idx), k.title)) })
		if err != nil {
			return fmt.Errorf("churn: %s %s: %w", s.what, k.title, err)
		}
	}
	return nil
}

// churnThenRelist makes the child relist after c: it holds the child's
// watches of resource (so that the child sees none of the changes), applies
// c, then answers the next watch with 410 Gone and cuts the held one.
func churnThenRelist(ctx context.Context, p *faultproxy.Proxy, resource string, apply func(context.Context) error) error {
	lift := p.BlackHole(faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: resource})
	defer lift()
	if err := apply(ctx); err != nil {
		return err
	}
	return forceRelist(p, resource)
}
