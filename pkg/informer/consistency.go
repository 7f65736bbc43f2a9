package informer

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/consistencydetector"
)

// consistencyCheck is client-go's watch-list data consistency detector
// (on when KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=true, meant for CI) for
// this informer's streamed lists: once a streamed list is stored, and
// before anything else hears of it, the collection is listed at the same
// resourceVersion and compared with the store; a difference panics, as in
// client-go's reflector. Paginated lists are not checked, as in client-go.
type consistencyCheck struct {
	name      string // the informer's (its reflector's) name, for the logs
	list      consistencydetector.ListFunc[runtime.Object]
	transform toolscache.TransformFunc // applied to the listed objects, as to the stored ones
}

// readAs returns transform followed by setReadKind (nil: transform itself):
// the objects the check lists must look as the store's reads do, and under
// NewCacheWith an encoded store's reads carry the read kind.
func readAs(transform toolscache.TransformFunc, setReadKind func(any)) toolscache.TransformFunc {
	if setReadKind == nil {
		return transform
	}
	return func(obj any) (any, error) {
		if transform != nil {
			var err error
			if obj, err = transform(obj); err != nil {
				return nil, err
			}
		}
		setReadKind(obj)
		return obj, nil
	}
}

// streamed checks a streamed list stored at rv: stored lists the store,
// which holds the list and nothing else while this runs.
func (c consistencyCheck) streamed(ctx context.Context, rv string, stored func() []any) {
	if !consistencydetector.IsDataConsistencyDetectionForWatchListEnabled() {
		return
	}
	consistencydetector.CheckDataConsistency(ctx, c.name, rv, c.list, consistencydetector.TransformFunc(c.transform), metav1.ListOptions{}, stored)
}
