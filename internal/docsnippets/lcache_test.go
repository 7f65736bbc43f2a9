package docsnippets

// Snippets in which "cache" is leaninformer's pkg/cache (see
// crcache_test.go), and those of pkg/codec and pkg/listerwatcher.

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/cache"
	"github.com/leaninformer/leaninformer/pkg/codec"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
)

var _ = []any{cacheReplace, codecRoundTrip, codecLabels, listerwatcherRun}

//nolint:ineffassign,staticcheck // the documents leave error handling out
func cacheReplace(indexers toolscache.Indexers, obj runtime.Object, transform toolscache.TransformFunc, listRV string) {
	// BEGIN pkg/cache/README.md
	store := cache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers) // relist reuse on
	store.StartReplace()                                                 // a new paged replace (discards one in progress)
	stored, reused, err := store.AddToReplace(obj, transform)            // once per object of each page
	diff, err := store.FinishReplace(listRV)                             // write or swap; diff.Deleted, diff.Changes (list order)
	old, existed, err := store.Upsert(obj)                               // live writes that return the replaced object
	kept, old, existed, err := store.UpsertStored(obj)                   // and what the store now holds for obj
	old, existed, err = store.Remove(obj)
	// END
	_, _, _, _, _, _, _ = stored, reused, diff.Deleted, diff.Changes, kept, old, existed
	_ = err
}

//nolint:ineffassign,staticcheck // the documents leave error handling out
func codecRoundTrip(obj any) {
	// BEGIN pkg/codec/README.md
	c := codec.New()           // or codec.New(codec.WithCompression())
	data, err := c.Encode(obj) // errors.Is(err, codec.ErrUnsupported): keep obj as it is
	obj, err = c.Decode(data)  // a new object, owned by the caller
	// END
	_ = err
}

//nolint:ineffassign,staticcheck // the documents leave error handling out
func codecLabels(c *codec.Codec, data []byte, selector labels.Selector) {
	// BEGIN pkg/codec/README.md
	l, err := c.Labels(data)         // a labels.Labels: l.Has("app"), l.Get("app")
	match := c.MatchLabels(selector) // one per goroutine; reuse it for many objects
	ok, decoded, err := match(data)  // decoded: non-nil only if it had to decode anyway
	// END
	var _ labels.Labels = l
	_, _, _ = ok, decoded, err
}

//nolint:ineffassign,staticcheck // the documents leave error handling out
func listerwatcherRun(ctx context.Context, lw toolscache.ListerWatcher) {
	// BEGIN pkg/listerwatcher/README.md
	w, err := listerwatcher.New(lw, listerwatcher.WithExpectedType(&corev1.ConfigMap{}))
	err = w.Run(ctx, listerwatcher.ConsumerFunc(func(ctx context.Context, ev listerwatcher.Event) error { return nil }))
	// END
	_ = err
}
