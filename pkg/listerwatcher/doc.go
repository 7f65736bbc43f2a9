// Package listerwatcher turns any client-go ListerWatcher into a paged-restart
// event pipeline: restart start, one event per LIST page (or per batch of
// streamed initial events), restart done at a resourceVersion, then live
// added/modified/deleted/bookmark events.
//
// The pipeline never holds more than one page: it reads the next page or watch
// event only after its consumer has taken the previous one. It handles the API
// server's faults itself (410 Gone, expired continue tokens, throttling, dropped
// watches) with client-go's backoff figures, so a consumer only ever sees a
// clean sequence of restarts and live events.
//
// A Watcher's run is a sequence of phases, each a value with its own data:
// listing (the next LIST request, how far the listing got, and whether the
// consumer has seen this restart begin), streaming, watching (the newest resourceVersion, and the
// stream a streaming restart left open) and backing off. One transition
// function performs a phase and returns the next. Every failure is
// classified once, by the fault table in README.md (the same rules, row by
// row): the Decision says what the watcher does (retry the same request,
// watch again, relist from the last resourceVersion or from "", fall back
// to ListWatch, back off first or not) and, following client-go's
// reflector, whether a user must hear of it. The error handler gets every
// failure as a *Failure carrying its Decision, so an informer can call its
// watch error handler for exactly the failures client-go would, and explain
// the others in its sync status.
//
// LIST pages are sized so that a restart fits the burst of client-go's
// default client-side rate limit: a first page of DefaultPageSize objects,
// then what remains (remainingItemCount, or the previous listing's size)
// shared over about 8 LISTs, each page at most 16 MiB of decoded objects
// (or 2.5% of the store the list fills past 640 MiB, up to 64 MiB).
// WithPageSize fixes every page instead.
//
// Watcher.Relist asks a running Watcher for a new restart at once, for
// instance after the ListerWatcher's options changed.
package listerwatcher
