package listerwatcher

import (
	"context"
	"errors"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Cause names what went wrong in a Failure, in the terms a user acts on.
type Cause uint8

// The causes a Decision can name. CauseOther covers every error the others
// do not.
const (
	CauseOther Cause = iota
	CauseConsumer
	CauseDecode
	CauseVeryShortWatch
	CauseNoEndBookmark
	CauseNotStreaming
	CauseStreamEnded
	CauseForbidden
	CauseUnauthorized
	CauseNotFound
	CauseThrottled
	CauseExpired
	CauseTooLargeResourceVersion
	CauseTimeout
	CauseServerError
	CauseRefused
	CauseBadRequest
	CauseUnexpectedObject
	CauseBookmarkWithoutResourceVersion
	CauseStaleEvent
	CausePanic
)

var causes = [...]struct{ name, description string }{
	CauseOther:                          {"Other", "list or watch failed"},
	CauseConsumer:                       {"Consumer", "the consumer failed to handle an event"},
	CauseDecode:                         {"Decode", "the API server's answer could not be read"},
	CauseVeryShortWatch:                 {"VeryShortWatch", "watches close at once without events (does something between the client and the API server drop them?)"},
	CauseNoEndBookmark:                  {"NoEndBookmark", "the streaming list never ended (bookmarks turned off?)"},
	CauseNotStreaming:                   {"NotStreaming", "the API server does not stream lists"},
	CauseStreamEnded:                    {"StreamEnded", "the streaming list ended before its end bookmark"},
	CauseForbidden:                      {"Forbidden", "forbidden by RBAC: the client may not list or watch this resource"},
	CauseUnauthorized:                   {"Unauthorized", "unauthorized: the client's credentials are not accepted"},
	CauseNotFound:                       {"NotFound", "not found: the server does not serve this resource (is its CRD installed?)"},
	CauseThrottled:                      {"Throttled", "throttled by the API server (429)"},
	CauseExpired:                        {"Expired", "resourceVersion expired (410)"},
	CauseTooLargeResourceVersion:        {"TooLargeResourceVersion", "resourceVersion too large: the API server has not caught up with it yet"},
	CauseTimeout:                        {"Timeout", "timed out"},
	CauseServerError:                    {"ServerError", "API server error"},
	CauseRefused:                        {"Refused", "API server unreachable (connection refused)"},
	CauseBadRequest:                     {"BadRequest", "request rejected by the API server"},
	CauseUnexpectedObject:               {"UnexpectedObject", "the watch sent an object of another type or kind than the informer's (a ListerWatcher for another resource?)"},
	CauseBookmarkWithoutResourceVersion: {"BookmarkWithoutResourceVersion", "the watch sent a bookmark without a resourceVersion"},
	CauseStaleEvent:                     {"StaleEvent", "the watch went back in time: an event older than what the store holds"},
	CausePanic:                          {"Panic", "a panic in the ListerWatcher or the consumer (a transform? an index function?), recovered: see the logged stack"},
}

// String returns the cause's name, e.g. "Forbidden".
func (c Cause) String() string {
	if int(c) < len(causes) {
		return causes[c].name
	}
	return "Cause(" + strconv.Itoa(int(c)) + ")"
}

// Description says in a few words what the cause means for an informer that
// cannot sync, e.g. "forbidden by RBAC: the client may not list or watch
// this resource".
func (c Cause) Description() string {
	if int(c) < len(causes) {
		return causes[c].description
	}
	return causes[CauseOther].description
}

// causeOf names what err is; op is the step it came from. The watcher's own
// errors come first, then the API server's by status; "too large resource
// version" before timeouts, since old servers sent it as a 504.
func causeOf(op Op, err error) Cause {
	var bad unreadable
	switch {
	case op == OpPanic:
		return CausePanic
	case op == OpConsume:
		return CauseConsumer
	case errors.As(err, &bad) || isUndecodableEvent(err):
		return CauseDecode
	case errors.Is(err, ErrUnexpectedObject):
		return CauseUnexpectedObject
	case errors.Is(err, ErrBookmarkWithoutResourceVersion):
		return CauseBookmarkWithoutResourceVersion
	case errors.Is(err, ErrStaleEvent):
		return CauseStaleEvent
	case errors.Is(err, ErrVeryShortWatch):
		return CauseVeryShortWatch
	case errors.Is(err, ErrNoEndBookmark):
		return CauseNoEndBookmark
	case errors.Is(err, ErrNotStreaming):
		return CauseNotStreaming
	case errors.Is(err, ErrStreamEnded):
		return CauseStreamEnded
	case apierrors.IsForbidden(err):
		return CauseForbidden
	case apierrors.IsUnauthorized(err):
		return CauseUnauthorized
	case apierrors.IsNotFound(err):
		return CauseNotFound
	case apierrors.IsTooManyRequests(err):
		return CauseThrottled
	case isExpired(err):
		return CauseExpired
	case isTooLarge(err):
		return CauseTooLargeResourceVersion
	case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || errors.Is(err, context.DeadlineExceeded):
		return CauseTimeout
	case apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err):
		return CauseServerError
	case utilnet.IsConnectionRefused(err):
		return CauseRefused
	case apierrors.IsBadRequest(err) || apierrors.IsInvalid(err):
		return CauseBadRequest
	}
	return CauseOther
}
