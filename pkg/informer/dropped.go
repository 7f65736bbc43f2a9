package informer

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
)

// DroppedObjectsError says that a complete list was stored without some of
// its objects: the transform failed on them (or returned nil), or no key
// could be computed for them. The informer syncs without them and lists
// them again at its next relist; client-go's informer refuses such a list
// in LIST mode and never syncs. Once the list is stored, the error goes to
// the watch error handler and stays in SyncStatus until the next complete
// list; every dropped object is logged by name and counted in
// leaninformer_dropped_objects_total.
type DroppedObjectsError struct {
	// Type describes the objects, as the informer's logs do.
	Type string
	// ResourceVersion is the list's.
	ResourceVersion string
	// Count is the number of objects left out.
	Count int
	// First names the first of them (namespace/name) and Err says why it
	// was left out.
	First string
	Err   error
}

func (e *DroppedObjectsError) Error() string {
	more := ""
	if e.Count > 1 {
		more = fmt.Sprintf(" (and %d more)", e.Count-1)
	}
	return fmt.Sprintf("the list of %s at resourceVersion %q was stored without %d of its objects: %s: %v%s",
		e.Type, e.ResourceVersion, e.Count, e.First, e.Err, more)
}

// Unwrap returns the first dropped object's error.
func (e *DroppedObjectsError) Unwrap() error { return e.Err }

// reportDropped records, for SyncStatus, a list stored without some of its
// objects and hands it to the watch error handler: the user's transform or
// objects need attention even though the informer has synced.
func (s *SharedIndexInformer) reportDropped(ctx context.Context, err *DroppedObjectsError) {
	s.diag.droppedObjects(err)
	s.callWatchErrorHandler(ctx, err)
}

// objectName names obj for a log line: namespace/name, or what is wrong
// with its metadata.
func objectName(obj any) string {
	m, err := meta.Accessor(obj)
	switch {
	case err != nil:
		return fmt.Sprintf("(%T without metadata)", obj)
	case m.GetNamespace() == "":
		return m.GetName()
	default:
		return m.GetNamespace() + "/" + m.GetName()
	}
}
