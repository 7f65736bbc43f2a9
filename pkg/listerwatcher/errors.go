package listerwatcher

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Errors the watcher reports to its error handler besides the server's own.
var (
	// ErrVeryShortWatch means a watch closed within a second without any
	// event, which usually means something between us and the API server
	// drops it. It is retried after a backoff, as client-go's reflector does.
	// The stream of a streaming restart counts from its end bookmark, as
	// client-go's does: one that closes right after it is very short.
	ErrVeryShortWatch = errors.New("very short watch: the watch closed within a second without any event")
	// ErrNoEndBookmark means a streaming restart waited the idle timeout
	// for the next initial event or the end bookmark. A ListerWatcher that
	// turns bookmarks off causes it: the API server then never ends the
	// initial events.
	ErrNoEndBookmark = errors.New("no initial-events-end bookmark: the server sent no initial event or end bookmark within the streaming idle timeout")
	// ErrNotStreaming means a MODIFIED or DELETED event arrived before the
	// end bookmark, so the server does not stream initial events.
	ErrNotStreaming = errors.New("the server sent a change before the initial-events-end bookmark: it does not stream lists")
	// ErrStreamEnded means the stream closed before its end bookmark.
	ErrStreamEnded = errors.New("the stream of initial events ended before its end bookmark")
	// ErrUnexpectedObject means a watch event carried an object of another
	// type or kind than WithExpectedType or WithExpectedGVK, or a Table (the
	// ListerWatcher asks for as=Table), whatever they say. Dropping it would
	// lose the change it stood for, so the watcher relists instead. A LIST
	// answered by a Table fails with it too, as client-go's reflector
	// refuses one.
	ErrUnexpectedObject = errors.New("the watch sent an object of an unexpected type or kind")
	// ErrBookmarkWithoutResourceVersion means a BOOKMARK event had no
	// resourceVersion: it says nothing, and taking it would make the next
	// watch start from "" and replay the whole collection.
	ErrBookmarkWithoutResourceVersion = errors.New("the watch sent a bookmark without a resourceVersion")
	// ErrStaleEvent means a watch sent a change older than the object the
	// consumer stores under its key (or, from a consumer that does not tell
	// its stored versions, a change not newer than the collection's
	// resourceVersion), or a bookmark older than the collection's: the
	// stream went back in time, and applying it would undo newer state.
	ErrStaleEvent = errors.New("the watch sent an event older than what the consumer has")
)

// Op names the step of the pipeline that failed.
type Op string

// The steps a Failure can come from.
const (
	// OpList: a LIST request failed or its response could not be read.
	OpList Op = "list"
	// OpWatch: a watch (a streaming list's included) could not be opened.
	OpWatch Op = "watch"
	// OpStream: an open watch or stream ended with an error.
	OpStream Op = "stream"
	// OpConsume: the Consumer's Handle returned an error.
	OpConsume Op = "consume"
	// OpPanic: a step panicked (the ListerWatcher, or the Consumer and what
	// it calls: a transform, an index function) while utilruntime.ReallyCrash
	// was off; the Failure's Err is a *PanicError. With ReallyCrash on, the
	// default, the panic crashes the process, as client-go's reflector's does.
	OpPanic Op = "panic"
)

// PanicError is a panic the watcher recovered from: Value is what was
// passed to panic. utilruntime.HandleCrash has logged it with its stack.
type PanicError struct {
	Value any
}

func (e *PanicError) Error() string { return fmt.Sprintf("recovered from a panic: %v", e.Value) }

// Failure is what the error handler receives: the step that failed, why,
// and what the watcher makes of it. It unwraps to the cause, so apierrors'
// predicates see through it.
type Failure struct {
	Op  Op
	Err error
	// Decision is the watcher's classification of Err: its cause, whether a
	// user has to hear of it, and what the watcher does next.
	Decision Decision
}

func (e *Failure) Error() string { return string(e.Op) + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *Failure) Unwrap() error { return e.Err }

// unreadable marks an answer the watcher could not make sense of: a LIST
// response without list metadata, an ERROR event without a Status.
type unreadable struct{ error }

func (e unreadable) Unwrap() error { return e.error }

// isExpired reports a 410: the resourceVersion or continue token is gone.
// Servers before 1.18 answered Gone rather than Expired.
func isExpired(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

// tooLargeResourceVersion is the text API servers before 1.18.6 said "too
// large resource version" by.
const tooLargeResourceVersion = "Too large resource version"

// isTooLarge reports a resourceVersion newer than the server has seen (a
// server behind its peers). Servers since 1.18.6 say so by a cause of its
// type; 1.17.0 to 1.18.5 by a 504 with a cause carrying only the text;
// older ones by a 504's message. client-go's reflector takes all three.
func isTooLarge(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsTimeout(err) || !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message == tooLargeResourceVersion {
				return true
			}
		}
	}
	return strings.Contains(s.Message, tooLargeResourceVersion)
}

// isUnavailable reports an error that a request from "" avoids.
func isUnavailable(err error) bool { return isExpired(err) || isTooLarge(err) }

// isThrottled reports errors after which the same request is retried: the
// server asks us to slow down, or is not there at all.
func isThrottled(err error) bool {
	return apierrors.IsTooManyRequests(err) || utilnet.IsConnectionRefused(err)
}

// retryAfter returns the delay the server asked for, if any.
func retryAfter(err error) time.Duration {
	if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// clientWatchDecoding is the cause type client-go's watch gives the ERROR
// event it makes of an event it cannot decode (rest.Request.newStreamWatcher).
const clientWatchDecoding metav1.CauseType = "ClientWatchDecoding"

// isUndecodableEvent reports the ERROR event client-go's watch sends for an
// event it could not decode: a 500 Status with cause ClientWatchDecoding.
func isUndecodableEvent(err error) bool { return apierrors.HasStatusCause(err, clientWatchDecoding) }

// compareResourceVersions compares resourceVersions a and b (-1, 0 or 1)
// when both are what etcd and the fake server send: decimal integers. Other
// resourceVersions are opaque (ok false) and never compared.
func compareResourceVersions(a, b string) (c int, ok bool) {
	x, errX := strconv.ParseUint(a, 10, 64)
	y, errY := strconv.ParseUint(b, 10, 64)
	if errX != nil || errY != nil {
		return 0, false
	}
	return cmp.Compare(x, y), true
}

// watchEventError turns the object of an ERROR watch event into an error.
func watchEventError(obj runtime.Object) error {
	status, ok := obj.(*metav1.Status)
	if !ok {
		return unreadable{fmt.Errorf("watch sent an ERROR event carrying %T instead of a *v1.Status", obj)}
	}
	if status == nil { // FromObject would panic on it
		return unreadable{errors.New("watch sent an ERROR event carrying a nil *v1.Status")}
	}
	return apierrors.FromObject(status)
}
