package listerwatcher

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// phase is what a Run does next, with the data that step needs: listing,
// streaming, watching or backingOff. machine.step performs one phase and
// returns the next; nothing else changes the phase.
type phase interface{ isPhase() }

// attempt is what every restart phase carries: one attempt at getting the
// whole collection.
type attempt struct {
	// reason is what the consumer is told at RestartStart.
	reason RestartReason
	// from is the resourceVersion the restart reads at (NotOlderThan): the
	// newest one the consumer has, or "" (the newest consistent state) at
	// the start and after the server said it no longer has that one.
	from string
	// announced: the consumer got RestartStart for this attempt. A failure
	// before it keeps the reason: the consumer never saw this attempt begin.
	announced bool
	// afterExpiredContinue: this attempt began because the continue token
	// of the one before it expired; should its own expire too, the next
	// attempt lists in one LIST without a limit (see the fault table).
	afterExpiredContinue bool
}

// retold returns the reason of the restart that follows a failure of a,
// given the reason the failure calls for ("" keeps a's).
func (a attempt) retold(reason RestartReason) RestartReason {
	if a.announced && reason != "" {
		return reason
	}
	return a.reason
}

// listing is a restart by paginated LISTs; opts is its next request: the
// first page, or a continue. pages is how far it got, which sizes the next
// page.
type listing struct {
	attempt
	opts  metav1.ListOptions
	pages pageProgress
}

// streaming is a restart by one watch with sendInitialEvents=true, which
// goes on as the live watch once its end bookmark arrived.
type streaming struct{ attempt }

// watching follows the changes after rv, the newest resourceVersion the
// consumer has: on stream, which a streaming restart left open, or on a new
// watch.
type watching struct {
	rv     string
	stream *openWatch
}

// backingOff waits the backoff's next delay (at least retryAfter) after err,
// then goes on with next.
type backingOff struct {
	err        error
	retryAfter time.Duration
	next       phase
}

func (listing) isPhase()    {}
func (streaming) isPhase()  {}
func (watching) isPhase()   {}
func (backingOff) isPhase() {}

// relistFrom returns the resourceVersion a restart after ph reads at.
func relistFrom(ph phase) string {
	switch p := ph.(type) {
	case listing:
		return p.from
	case streaming:
		return p.from
	case watching:
		return p.rv
	case backingOff:
		return relistFrom(p.next)
	}
	return ""
}

// isRestart reports whether ph gets the whole collection: a listing or a
// streaming phase, or a backoff before one.
func isRestart(ph phase) bool {
	switch p := ph.(type) {
	case listing, streaming:
		return true
	case backingOff:
		return isRestart(p.next)
	}
	return false
}

// announced returns ph, a restart whose RestartStart the consumer got, so
// marked.
func announced(ph phase) phase {
	switch p := ph.(type) {
	case listing:
		p.announced = true
		return p
	case streaming:
		p.announced = true
		return p
	}
	return ph
}

// reasonAfter returns the reason of the restart that follows a failure in ph
// calling for reason: a live watch always takes it, a restart keeps its own
// until the consumer saw it begin.
func reasonAfter(ph phase, reason RestartReason) RestartReason {
	switch p := ph.(type) {
	case listing:
		return p.retold(reason)
	case streaming:
		return p.retold(reason)
	}
	return reason
}
