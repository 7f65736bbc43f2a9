package listerwatcher

import (
	"errors"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Action is what the watcher does after a failure.
type Action uint8

const (
	// RetryRequest sends the same request again: the same LIST page, the
	// same streaming watch.
	RetryRequest Action = iota + 1
	// ResumeWatch watches again from the last resourceVersion: the consumer
	// keeps its collection.
	ResumeWatch
	// RelistFromLast starts a new restart that reads at the last
	// resourceVersion (NotOlderThan), or from "" while the server has said
	// that it no longer has it.
	RelistFromLast
	// RelistFromNewest restarts at once by the same strategy from "", the
	// newest consistent state: the server no longer (or not yet) has the
	// last resourceVersion.
	RelistFromNewest
	// FallBackToList makes Auto list instead of stream for the fallback TTL,
	// and restarts at once.
	FallBackToList
	// RelistWhole starts a new restart by one LIST without a limit at the
	// last resourceVersion: no continue token to expire.
	RelistWhole
	// ListOnce makes Auto list this restart instead of streaming, at once,
	// and stream the next: the failure was not the stream's.
	ListOnce
)

var actionNames = [...]string{
	RetryRequest:     "retry the same request",
	ResumeWatch:      "watch again from the last rv",
	RelistFromLast:   "relist from the last rv",
	RelistFromNewest: `relist from "" at once`,
	FallBackToList:   "fall back to ListWatch at once",
	RelistWhole:      "relist from the last rv in one LIST without a limit",
	ListOnce:         "list instead this once, at once",
}

func (a Action) String() string {
	if int(a) < len(actionNames) && actionNames[a] != "" {
		return actionNames[a]
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// Decision is what the watcher makes of a failure: its cause, whether a user
// must hear of it, and what the watcher does next. Which failures a user
// hears of, and at which level the others are logged, follow client-go
// v0.37.2's reflector: its WatchErrorHandler gets failed LISTs and failed
// watch opens it does not retry by itself; watches that end with an error
// and retriable errors are only logged.
type Decision struct {
	// Cause is what went wrong.
	Cause Cause
	// Next is what the watcher does next.
	Next Action
	// Reason is the RestartReason of the restart Next starts. A restart
	// whose RestartStart the consumer has not seen yet keeps its reason:
	// the consumer never saw it begin.
	Reason RestartReason
	// Backoff: the watcher waits its backoff's next delay, at least
	// RetryAfter (the server's Retry-After), before Next.
	Backoff    bool
	RetryAfter time.Duration
	// Notify: a user must act on it; client-go's reflector hands it to its
	// WatchErrorHandler, whose default logs it as an error (a 410 at V(4)).
	Notify bool
	// Verbosity is the klog verbosity client-go's reflector logs the
	// failure at when it does not notify: 0 is a warning.
	Verbosity int
}

// Description explains the cause in a few words, for a status or a log line.
func (d Decision) Description() string { return d.Cause.Description() }

// String says what the watcher does, e.g. "back off, relist from the last
// rv (Expired)".
func (d Decision) String() string {
	s := d.Next.String()
	if d.Backoff {
		s = "back off, " + s
	}
	if d.Reason != "" {
		s += " (" + string(d.Reason) + ")"
	}
	return s
}

// fault is a failure as the rules see it.
type fault struct {
	op    Op
	phase string // "listing", "streaming" or "watching"
	// continued: the LIST asked for a continue page.
	continued bool
	// afterExpiredContinue: the listing began because the continue token
	// of the one before it expired.
	afterExpiredContinue bool
	// fromRV: the request read at a resourceVersion rather than from "".
	fromRV bool
	// auto: the strategy is Auto, which may fall back to ListWatch.
	auto bool
	err  error
}

// faultOf describes a failure of op in ph.
func faultOf(op Op, ph phase, err error, auto bool) fault {
	f := fault{op: op, err: err, auto: auto}
	switch p := ph.(type) {
	case listing:
		f.phase, f.continued, f.fromRV = "listing", p.opts.Continue != "", p.opts.ResourceVersion != ""
		f.afterExpiredContinue = p.afterExpiredContinue
	case streaming:
		f.phase, f.fromRV = "streaming", p.from != ""
	case watching:
		f.phase, f.fromRV = "watching", p.rv != ""
	}
	return f
}

// rule is one row of the fault table: the first rule whose phase, step and
// match fit a failure decides it. when is the README's words for match.
type rule struct {
	phase string // "any" fits every phase
	op    Op     // "" fits every step
	when  string
	match func(f fault) bool // nil matches everything
	d     Decision
}

func (r rule) fits(f fault) bool {
	return (r.phase == "any" || r.phase == f.phase) && (r.op == "" || r.op == f.op) && (r.match == nil || r.match(f))
}

func throttled(f fault) bool   { return isThrottled(f.err) }
func unavailable(f fault) bool { return f.fromRV && isUnavailable(f.err) }
func expired(f fault) bool     { return isExpired(f.err) }
func internal(f fault) bool    { return apierrors.IsInternalError(f.err) }

func notServedOrNotAllowed(f fault) bool {
	return apierrors.IsNotFound(f.err) || apierrors.IsForbidden(f.err) || apierrors.IsUnauthorized(f.err)
}

func undecodableEvent(f fault) bool  { return isUndecodableEvent(f.err) }
func unexpectedObject(f fault) bool  { return errors.Is(f.err, ErrUnexpectedObject) }
func bookmarkWithoutRV(f fault) bool { return errors.Is(f.err, ErrBookmarkWithoutResourceVersion) }
func stale(f fault) bool             { return errors.Is(f.err, ErrStaleEvent) }

// rules is the fault table, mirrored row by row by the README's. client-go
// means v0.37.2's reflector (tools/cache/reflector.go) and its pager.
var rules = []rule{
	// The consumer's state is suspect: rebuild it. client-go's list hands a
	// failed store Replace to the watch error handler.
	{"any", OpConsume, "the consumer returns an error", nil,
		Decision{Next: RelistFromLast, Reason: ConsumerError, Backoff: true, Notify: true}},

	// client-go's list retries at once from "" (isExpiredError,
	// isTooLargeResourceVersionError), silently.
	{"listing", OpList, `the first page, read at the last rv, answers 410 or "too large resource version"`,
		func(f fault) bool { return !f.continued && unavailable(f) },
		Decision{Next: RelistFromNewest, Verbosity: 4}},
	// A continue token lives 5 to 10 minutes (etcd's compaction): the list
	// starts over. A list slower than that expires on every attempt: when
	// the restart that began for an expired token has its own expire, the
	// list is one LIST without a limit, which has no token, at once.
	// client-go's pager falls back to that at the first expiry, silently.
	{"listing", OpList, "a continue page answers 410 (the token expired) in a restart that began for an expired one",
		func(f fault) bool { return f.continued && f.afterExpiredContinue && expired(f) },
		Decision{Next: RelistWhole, Reason: ExpiredContinue, Verbosity: 4}},
	{"listing", OpList, "a continue page answers 410 (the token expired)",
		func(f fault) bool { return f.continued && expired(f) },
		Decision{Next: RelistFromLast, Reason: ExpiredContinue, Backoff: true, Verbosity: 4}},
	// The pages so far are fine: ask for the same page again. client-go's
	// list hands every error it does not retry to the handler.
	{"listing", OpList, "429 (Retry-After honoured when longer) or connection refused", throttled,
		Decision{Next: RetryRequest, Backoff: true, Notify: true}},
	{"listing", OpList, "any other error, or a response that cannot be read", nil,
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}},

	// client-go's watchList backs off and retries (isWatchErrorRetriable),
	// logging at V(2).
	{"streaming", OpWatch, "the stream's open answers 429 or connection refused", throttled,
		Decision{Next: RetryRequest, Backoff: true, Verbosity: 2}},
	// client-go's watchList streams again from "" at once, silently.
	{"streaming", OpWatch, `the stream's open, at the last rv, answers 410 or "too large resource version"`, unavailable,
		Decision{Next: RelistFromNewest, Verbosity: 4}},
	// client-go falls back to a LIST at V(4) ("Data couldn't be fetched in
	// watchlist mode"), at every attempt. A resource not served (its CRD
	// not installed yet) or a client not allowed to read it tells nothing
	// of the server's streaming: the LIST fails alike and reaches the
	// handler, and the next attempt streams, once the CRD is served too.
	{"streaming", OpWatch, "Auto: the stream's open answers 404, 403 or 401 (the resource or the client, not the stream)",
		func(f fault) bool { return f.auto && notServedOrNotAllowed(f) },
		Decision{Next: ListOnce, Verbosity: 4}},
	{"streaming", OpWatch, "Auto: the stream's open fails otherwise",
		func(f fault) bool { return f.auto },
		Decision{Next: FallBackToList, Verbosity: 4}},
	// With StreamingList the stream is the only way to list: its failure is
	// told as client-go tells a failed LIST.
	{"streaming", OpWatch, "StreamingList: the stream's open fails otherwise", nil,
		Decision{Next: RetryRequest, Backoff: true, Notify: true}},
	// client-go's watchList backs off and retries, logging at V(2).
	{"streaming", OpStream, "the stream sends a 429 ERROR event", throttled,
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 2}},
	// client-go's watchList streams again from "" at once, silently.
	{"streaming", OpStream, `the stream, at the last rv, sends 410 or "too large resource version"`, unavailable,
		Decision{Next: RelistFromNewest, Reason: Expired, Verbosity: 4}},
	// A server that never ends the initial events (bookmarks off) or does
	// not stream at all (a change comes first). client-go waits for the
	// bookmark for ever, warning every 10 s; Auto's fallback logs a line of
	// its own.
	{"streaming", OpStream, "Auto: no end bookmark within the idle timeout, or a change before it",
		func(f fault) bool {
			return f.auto && (errors.Is(f.err, ErrNoEndBookmark) || errors.Is(f.err, ErrNotStreaming))
		},
		Decision{Next: FallBackToList, Reason: StreamingFallback, Verbosity: 4}},
	{"streaming", OpStream, "StreamingList: no end bookmark within the idle timeout, or a change before it",
		func(f fault) bool { return errors.Is(f.err, ErrNoEndBookmark) || errors.Is(f.err, ErrNotStreaming) },
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 0}},
	// Bad input from the wire. Dropping an object of another type would lose
	// the change it stood for (client-go drops it with an error); a
	// consistent LIST has it. An end bookmark without a resourceVersion
	// leaves nothing to watch from but "" (client-go takes it).
	{"streaming", OpStream, "the stream sends an object of another type or kind, or a Table (as=Table)", unexpectedObject,
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}},
	{"streaming", OpStream, "the stream's end bookmark has no resourceVersion", bookmarkWithoutRV,
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 0}},
	// client-go's watchList falls back to a LIST at V(4) after an ERROR
	// event, and reopens a stream that ended early silently.
	{"streaming", OpStream, "the stream ends otherwise: another ERROR event, or closed before its end bookmark", nil,
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 4}},

	// The collection is fine: watch again. client-go's watch backs off and
	// retries (isWatchErrorRetriable), logging at V(4).
	{"watching", OpWatch, "the watch's open answers 429 or connection refused", throttled,
		Decision{Next: ResumeWatch, Backoff: true, Verbosity: 4}},
	// client-go hands every failed watch open it does not retry to the
	// handler; its default handler logs a 410 at V(4).
	{"watching", OpWatch, "the watch's open answers 410", expired,
		Decision{Next: RelistFromLast, Reason: Expired, Backoff: true, Notify: true}},
	{"watching", OpWatch, "the watch's open answers 500", internal,
		Decision{Next: ResumeWatch, Backoff: true, Notify: true}},
	{"watching", OpWatch, `the watch's open fails otherwise (403, "too large resource version", ...)`, nil,
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}},
	// A watch that ends with an error never reaches client-go's handler:
	// its watch logs a 410 at V(4) ("Watch closed"), a 429 at V(2) and the
	// rest as a warning ("watch ended with error").
	{"watching", OpStream, "the watch sends a 410 ERROR event", expired,
		Decision{Next: RelistFromLast, Reason: Expired, Backoff: true, Verbosity: 4}},
	// Bad input from the wire. An event client-go's decoder cannot read
	// comes as a 500 ERROR event of its own: the same watch from the last rv
	// sends it again, and a LIST could not read it either. A bookmark without
	// a resourceVersion says nothing: client-go takes "" from it and replays
	// the collection on its next watch. An object of another type: see
	// streaming. An event older than what the store holds would undo newer state
	// (client-go applies it): the stream cannot be trusted, a LIST can.
	{"watching", OpStream, "the watch sends an event the client cannot decode (client-go's 500 ERROR event with cause ClientWatchDecoding)", undecodableEvent,
		Decision{Next: ResumeWatch, Backoff: true, Verbosity: 0}},
	{"watching", OpStream, "the watch sends an object of another type or kind, or a Table (as=Table)", unexpectedObject,
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}},
	{"watching", OpStream, "the watch sends a bookmark without a resourceVersion", bookmarkWithoutRV,
		Decision{Next: ResumeWatch, Backoff: true, Verbosity: 0}},
	{"watching", OpStream, "the watch sends an event older than what the consumer has (a change: than the object it stores under the key, if it says; else than the collection)", stale,
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 0}},
	{"watching", OpStream, "the watch sends a 429 ERROR event", throttled,
		Decision{Next: ResumeWatch, Backoff: true, Verbosity: 2}},
	{"watching", OpStream, "the watch sends a 500 ERROR event, or closes within 1 s without events (ErrVeryShortWatch)",
		func(f fault) bool { return internal(f) || errors.Is(f.err, ErrVeryShortWatch) },
		Decision{Next: ResumeWatch, Backoff: true, Verbosity: 0}},
	{"watching", OpStream, "the watch sends another ERROR event (one without a Status included)", nil,
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 0}},

	// What the panicking step left behind cannot be trusted: rebuild it.
	// client-go's reflector loop logs the panic (HandleCrash) and lists and
	// watches again after its backoff; the handler does not hear of it.
	{"any", OpPanic, "a step panics, with utilruntime.ReallyCrash off (on, the default, the process crashes)", nil,
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 4}},

	// No step fails in another phase; should one, relisting is safe.
	{"any", "", "any other failure", nil,
		Decision{Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}},
}

// classify decides what the watcher does about err, which step op met in
// phase ph; auto: the strategy is Auto.
func classify(op Op, ph phase, err error, auto bool) Decision {
	_, d := classifyRule(faultOf(op, ph, err, auto))
	return d
}

// classifyRule returns the index of the rule that decides f, and its
// decision with the cause and the server's Retry-After.
func classifyRule(f fault) (int, Decision) {
	i := len(rules) - 1 // the last rule fits every failure
	for j, r := range rules[:i] {
		if r.fits(f) {
			i = j
			break
		}
	}
	d := rules[i].d
	d.Cause = causeOf(f.op, f.err)
	if d.Backoff {
		d.RetryAfter = retryAfter(f.err)
	}
	return i, d
}
