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
package listerwatcher
