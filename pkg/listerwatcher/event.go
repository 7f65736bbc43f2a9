package listerwatcher

import (
	"context"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
)

// EventType says what an Event carries.
type EventType uint8

const (
	// RestartStart means a (re)list begins: the consumer drops any
	// restart buffer it has open and opens an empty one.
	RestartStart EventType = iota + 1
	// RestartPage carries in Objects one LIST page, or one batch of
	// streamed initial events, of the restart in progress.
	RestartPage
	// RestartDone means the restart is complete at ResourceVersion: the
	// objects of its pages are the whole collection at that version.
	RestartDone
	// Added means Object was created (a live watch event).
	Added
	// Modified means Object was updated (a live watch event).
	Modified
	// Deleted means Object was deleted; it is the object's last state.
	Deleted
	// Bookmark means the collection is unchanged up to ResourceVersion.
	Bookmark
)

var eventTypeNames = [...]string{
	RestartStart: "RestartStart",
	RestartPage:  "RestartPage",
	RestartDone:  "RestartDone",
	Added:        "Added",
	Modified:     "Modified",
	Deleted:      "Deleted",
	Bookmark:     "Bookmark",
}

func (t EventType) String() string {
	if int(t) < len(eventTypeNames) && eventTypeNames[t] != "" {
		return eventTypeNames[t]
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// Strategy is how a Watcher gets the whole collection on a restart.
type Strategy uint8

const (
	// Auto streams (StreamingList) and falls back to ListWatch for the
	// fallback TTL (WithFallbackTTL) when opening the stream fails with any
	// error but a 429, a refused connection or an unavailable resourceVersion
	// (a transient 500 or 503 too), or when the stream does not end; for good
	// when the ListerWatcher cannot stream. With client-go's WatchListClient
	// feature gate off (KUBE_FEATURE_WatchListClient=false), Auto means
	// ListWatch.
	Auto Strategy = iota
	// ListWatch lists page by page, then watches from the list's
	// resourceVersion.
	ListWatch
	// StreamingList opens one watch with sendInitialEvents=true: the
	// collection arrives as ADDED events ended by a bookmark, and the same
	// stream goes on as the live watch. It streams whatever the feature gate
	// says and retries the stream after errors; only a ListerWatcher that
	// cannot stream (IsWatchListSemanticsUnSupported) makes it list.
	StreamingList
)

func (s Strategy) String() string {
	switch s {
	case Auto:
		return "Auto"
	case ListWatch:
		return "ListWatch"
	case StreamingList:
		return "StreamingList"
	}
	return "Strategy(" + strconv.Itoa(int(s)) + ")"
}

// RestartReason says why a restart happens.
type RestartReason string

const (
	// Initial is the first restart of Run.
	Initial RestartReason = "Initial"
	// Expired means the watch's resourceVersion is gone (410 Gone /
	// Expired).
	Expired RestartReason = "Expired"
	// ExpiredContinue means the continue token of a paged LIST expired;
	// the list starts over.
	ExpiredContinue RestartReason = "ExpiredContinue"
	// Error means a request failed with an error that needs a relist.
	Error RestartReason = "Error"
	// StreamingFallback means Auto could not stream and lists instead.
	StreamingFallback RestartReason = "StreamingFallback"
	// ConsumerError means the Consumer returned an error; the watcher
	// relists so that the consumer gets a clean state.
	ConsumerError RestartReason = "ConsumerError"
	// Requested means Watcher.Relist asked for it.
	Requested RestartReason = "Requested"
)

// Event is one step of the pipeline. Which fields are set depends on Type.
type Event struct {
	Type EventType
	// Objects is the page of a RestartPage. The consumer may keep the
	// objects but not the slice: the watcher reuses it after Handle returns.
	// The consumer may set entries it is done with to nil, so that objects
	// it does not keep can be collected before the page ends.
	Objects []runtime.Object
	// Object is the object of an Added, Modified or Deleted event.
	Object runtime.Object
	// ResourceVersion is the version a RestartDone or Bookmark is at, and
	// the object's resourceVersion for Added, Modified and Deleted; empty
	// for the Added events that begin a watch from "" (after a LIST
	// without resourceVersion), which replay the collection in no
	// resourceVersion order: until another event comes, the collection's
	// version is unknown.
	ResourceVersion string
	// Strategy is the strategy the restart uses (restart events only).
	Strategy Strategy
	// Reason is why the restart happens (RestartStart only).
	Reason RestartReason
}

// Consumer receives the events of a Watcher, one at a time: the watcher reads
// the next page or watch event only after Handle has returned, which is the
// pipeline's backpressure. An error makes the watcher report it, back off and
// restart (reason ConsumerError).
type Consumer interface {
	Handle(ctx context.Context, ev Event) error
}

// StoredVersions is what a Consumer that keeps a store can also tell the
// watcher: whether rv, the resourceVersion of a change of obj, is older
// than the object it holds under obj's key, and that object's
// resourceVersion if so (only decimal resourceVersions compare). With it, a
// live change is stale when it is older than that object, instead of older
// than the collection: the API server's
// resourceVersions are one order, but fakes need not be (client-go's fake
// clientset keeps the resourceVersion each object was created with, through
// its updates), and only the per-object comparison accepts them, as
// client-go's informer, which compares nothing, does. It is called on the
// watcher's goroutine, between Handle calls.
type StoredVersions interface {
	OlderThanStored(obj runtime.Object, rv string) (stored string, older bool)
}

// RestartNotifier is what a Consumer can also be told: that the watch of a
// listed collection ended and the watcher is getting the whole collection
// again (a relist, after any backoff). RestartStart comes only with the
// restart's first answer, and not at all while its requests fail;
// RestartPending comes when the watcher decides to restart, before its
// first request. A consumer that does something only while it watches a
// complete list (an informer's resyncs, as client-go's reflector runs them)
// stops at RestartPending and starts again at RestartDone. A watch that
// ends and is opened again from the same resourceVersion is no restart. It
// is called on the watcher's goroutine, between Handle calls.
type RestartNotifier interface {
	RestartPending()
}

// ConsumerFunc is a function that is a Consumer.
type ConsumerFunc func(ctx context.Context, ev Event) error

// Handle calls f.
func (f ConsumerFunc) Handle(ctx context.Context, ev Event) error { return f(ctx, ev) }
