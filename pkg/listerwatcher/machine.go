package listerwatcher

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// machine drives one Run through its phases. It holds what outlives a
// phase: the consumer, the backoff, Auto's fallback and a reused batch.
type machine struct {
	*Watcher
	c       Consumer
	logger  klog.Logger
	backoff *backoff
	// canStream: the strategy, the ListerWatcher and client-go's feature
	// gate allow streaming restarts.
	canStream bool
	fallback  fallback
	sizer     pageSizer        // the limits of paginated LISTs
	batch     []runtime.Object // the streaming page, reused
	// opened is the watch opened last: should a step panic, it stops it if
	// no phase did.
	opened *openWatch
	// announced: the consumer got a RestartStart during the current
	// guarded step. A step's phases change in its own variables, so that
	// should it panic, only this tells that the restart it began was seen.
	announced bool
	// versions is c's, if it tells its stored versions: see inOrder.
	versions StoredVersions
}

// fallback is Auto's memory of streaming that failed: restarts list until
// until. It belongs to the run, not to a phase: it outlives restarts.
type fallback struct {
	until time.Time
	count int // fallbacks so far; only the first is logged as a warning
}

// step performs ph and returns the next phase: the watcher's one
// transition function. It returns ph itself when ctx ended. From one LIST
// page to the next it loops, as kube-rs's step_trampolined does until it has
// an event for its caller: the listing of the next page stays a value here
// instead of one more allocation per page.
func (m *machine) step(ctx context.Context, ph phase) phase {
	switch p := ph.(type) {
	case listing:
		for {
			var after phase
			if p, after = m.list(ctx, p); after != nil {
				return after
			}
		}
	case streaming:
		return m.stream(ctx, p)
	case watching:
		return m.watch(ctx, p)
	case backingOff:
		return m.pause(ctx, p)
	}
	panic(fmt.Sprintf("listerwatcher: unknown phase %T", ph))
}

// guardedStep is step with a panic in it handled as client-go's reflector
// handles one in its ListAndWatch: utilruntime.HandleCrash logs it and, with
// ReallyCrash on (the default), crashes the process. With ReallyCrash off,
// the watch the step left open is stopped and the panic is a failure like
// any other (OpPanic): a relist after the backoff, which starts the
// consumer's restart over.
func (m *machine) guardedStep(ctx context.Context, ph phase) (next phase) {
	m.announced = false
	defer utilruntime.HandleCrashWithContext(ctx, func(ctx context.Context, r any) {
		m.stopOpened()
		if m.announced {
			ph = announced(ph) // the restart after the panic tells why
		}
		next = m.fail(ctx, ph, OpPanic, &PanicError{Value: r})
	})
	return m.step(ctx, ph)
}

// stopOpened stops the watch opened last, unless a phase stopped it.
func (m *machine) stopOpened() {
	if w := m.opened; w != nil && !w.stopped {
		w.Stop()
		m.observer.WatchEnded(m.clock.Since(w.start), w.events, nil)
	}
	m.opened = nil
}

// restart returns the first phase of a restart for a: streaming, unless the
// strategy, the ListerWatcher or Auto's fallback says to list.
func (m *machine) restart(a attempt) phase {
	if m.streams() {
		return streaming{a}
	}
	return m.listing(a)
}

// streams reports whether the next restart streams.
func (m *machine) streams() bool {
	if !m.canStream || m.strategy == ListWatch {
		return false
	}
	return m.strategy == StreamingList || !m.clock.Now().Before(m.fallback.until)
}

// requested returns the restart a Relist call asks for after ph.
func (m *machine) requested(ph phase) phase {
	m.logger.V(2).Info("Relist requested")
	a := attempt{reason: Requested, from: relistFrom(ph)}
	if m.paginatedRelists {
		return m.listing(a)
	}
	return m.restart(a)
}

// fail carries out what classify decides about err, which step op met in
// ph, always in this order: tell the error handler, start Auto's fallback,
// then go to the next phase, after a backoff if the decision says so.
func (m *machine) fail(ctx context.Context, ph phase, op Op, err error) phase {
	d := classify(op, ph, err, m.strategy == Auto)
	m.report(ctx, &Failure{Op: op, Err: err, Decision: d})
	if d.Next == FallBackToList {
		m.fallBack(err)
	}
	next := m.after(ph, d)
	if d.Backoff {
		return backingOff{err: err, retryAfter: d.RetryAfter, next: next}
	}
	return next
}

// after returns the phase d.Next leads to from ph.
func (m *machine) after(ph phase, d Decision) phase {
	reason := reasonAfter(ph, d.Reason)
	switch d.Next {
	case RetryRequest:
		return ph
	case ResumeWatch:
		return watching{rv: relistFrom(ph)}
	case RelistFromNewest:
		// The same strategy, without the unavailable resourceVersion.
		a := attempt{reason: reason}
		if _, ok := ph.(streaming); ok {
			return streaming{a}
		}
		return m.listing(a)
	}
	a := attempt{reason: reason, from: relistFrom(ph)}
	switch d.Next {
	case FallBackToList, ListOnce:
		// This restart lists whatever the fallback TTL: one of 0 has run
		// out already (ListOnce set none), and streaming again at once
		// would loop without ever listing.
		return m.listing(a)
	case RelistWhole:
		// One page of everything: no continue token that could expire.
		l := m.listing(a)
		l.opts.Limit, l.pages.limit = 0, 0
		return l
	}
	// RelistFromLast. A restart for an expired continue token remembers
	// it: should its own expire too, the next lists whole.
	a.afterExpiredContinue = d.Reason == ExpiredContinue
	return m.restart(a)
}

// report hands f to the error handler. Without one it logs f the way
// client-go's reflector and its default watch error handler would.
func (m *machine) report(ctx context.Context, f *Failure) {
	switch {
	case m.errorHandler != nil:
		m.errorHandler(ctx, f)
	case !f.Decision.Notify:
		m.logger.V(f.Decision.Verbosity).Info("List and watch failed; retrying", "reason", f.Decision.Description(), "next", f.Decision.String(), "err", f)
	case f.Decision.Cause == CauseExpired:
		m.logger.V(4).Info("Resource version expired", "err", f)
	default:
		utilruntime.HandleErrorWithContext(ctx, f, "List and watch failed", "listerwatcher", m.name, "reason", f.Decision.Description())
	}
}

// fallBack makes Auto list instead of stream for the fallback TTL. It logs
// the first fallback as a warning whatever the error handler does.
func (m *machine) fallBack(err error) {
	m.fallback.until = m.clock.Now().Add(m.fallbackTTL)
	m.observer.StrategyFallback(err)
	logger := m.logger
	if m.fallback.count > 0 {
		logger = logger.V(2)
	}
	m.fallback.count++
	logger.Info("Cannot stream the list; falling back to paginated LIST", "for", m.fallbackTTL, "err", err)
}

// pause waits out p's backoff delay, then moves on to p.next; a Relist
// call ends the wait with a restart.
func (m *machine) pause(ctx context.Context, p backingOff) phase {
	d := m.backoff.next(p.retryAfter)
	t := m.clock.NewTimer(d)
	defer t.Stop()
	m.observer.Backoff(d, p.err)
	m.logger.V(2).Info("Backing off", "delay", d, "err", p.err)
	select {
	case <-ctx.Done():
		return p
	case <-m.relist:
		return m.requested(p.next)
	case <-t.C():
		return p.next
	}
}

// deliver hands ev to the consumer. It returns ctx's error once ctx ended,
// and the consumer's error saying which event it failed on.
func (m *machine) deliver(ctx context.Context, ev Event) error {
	if ev.Type == RestartStart {
		m.announced = true
	}
	err := m.c.Handle(ctx, ev)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("consumer failed to handle %v: %w", ev.Type, err)
	}
	return nil
}

// undelivered is the phase after deliver failed with err in ph: ph itself
// once ctx ended, else the consumer's failure carried out.
func (m *machine) undelivered(ctx context.Context, ph phase, err error) phase {
	if ctx.Err() != nil {
		return ph
	}
	return m.fail(ctx, ph, OpConsume, err)
}

// relistRequested reports, without waiting, whether Relist was called.
func (m *machine) relistRequested() bool {
	select {
	case <-m.relist:
		return true
	default:
		return false
	}
}

// listing returns a paginated restart for a: its first LIST page is read at
// a.from, with the limit the page sizer starts with. Never resourceVersion
// "0": the watch cache would ignore the limit and answer everything at once.
func (m *machine) listing(a attempt) listing {
	pages := m.sizer.start()
	opts := metav1.ListOptions{Limit: pages.limit}
	if a.from != "" {
		opts.ResourceVersion = a.from
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	return listing{attempt: a, opts: opts, pages: pages}
}
