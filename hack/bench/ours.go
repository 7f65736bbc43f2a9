package main

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/codec"
	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
)

// newOursInformer builds our informer with the variant's strategy, the
// page size (when --page-size sets one) and relist reuse (the default,
// spelled out).
func (c *child) newOursInformer(opts toolscache.SharedIndexInformerOptions) (toolscache.SharedIndexInformer, error) {
	strategy := informer.ListWatch
	if c.v.mode == streaming {
		strategy = informer.StreamingList
	}
	options := []informer.Option{
		informer.WithStrategy(strategy),
		informer.WithRelistReuse(true),
	}
	if c.opts.pageSize >= 0 {
		options = append(options, informer.WithPageSize(c.opts.pageSize))
	}
	if c.v.intern {
		options = append(options, informer.WithInterning())
	}
	if c.v.encoded {
		var codecOpts []codec.Option
		if c.v.compress {
			codecOpts = append(codecOpts, codec.WithCompression())
		}
		options = append(options, informer.WithEncodedStore(codecOpts...))
	}
	lw := c.lw
	if c.v.prefetch {
		lw = newPrefetchLW(lw)
	}
	return informer.NewSharedIndexInformerWithOptions(lw, c.kind.example(), opts, options...), nil
}
func (v variant) pipelineStrategy() listerwatcher.Strategy {
	if v.mode == streaming {
		return listerwatcher.StreamingList
	}
	return listerwatcher.ListWatch
}

// startPipeline runs our listerwatcher pipeline into a consumer that counts
// and drops every page; synced is closed at the end of the first restart.
func (c *child) startPipeline(ctx context.Context) (seen func() (total, bench int), synced <-chan struct{}, err error) {
	opts := []listerwatcher.Option{listerwatcher.WithStrategy(c.v.pipelineStrategy())}
	if c.opts.pageSize >= 0 {
		opts = append(opts, listerwatcher.WithPageSize(c.opts.pageSize))
	}
	w, err := listerwatcher.New(c.lw, opts...)
	if err != nil {
		return nil, nil, err
	}
	var total, bench atomic.Int64
	done := make(chan struct{})
	finished := false // Handle calls come one at a time
	consumer := listerwatcher.ConsumerFunc(func(_ context.Context, ev listerwatcher.Event) error {
		switch {
		case finished:
		case ev.Type == listerwatcher.RestartStart:
			total.Store(0)
			bench.Store(0)
		case ev.Type == listerwatcher.RestartPage:
			countPage(ev.Objects, &total, &bench)
		case ev.Type == listerwatcher.RestartDone:
			finished = true
			close(done)
		}
		return nil
	})
	go func() {
		if err := w.Run(ctx, consumer); err != nil {
			klog.FromContext(ctx).Error(err, "pipeline stopped")
		}
	}()
	return func() (int, int) { return int(total.Load()), int(bench.Load()) }, done, nil
}

func countPage(objs []runtime.Object, total, bench *atomic.Int64) {
	total.Add(int64(len(objs)))
	for _, o := range objs {
		if isBench(o) {
			bench.Add(1)
		}
	}
}
