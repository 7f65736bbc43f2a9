package listerwatcher

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Observer gets the watcher's own activity, for metrics. Its methods are
// called synchronously from Run and must be quick. Embed NoopObserver to
// implement only some of them.
type Observer interface {
	// ListRequest: a LIST with opts returned items objects after d, or err.
	ListRequest(opts metav1.ListOptions, items int, d time.Duration, err error)
	// WatchStarted: a WATCH with opts opened (streaming ones included).
	WatchStarted(opts metav1.ListOptions)
	// WatchEnded: a watch that had opened ended after d and events events;
	// err is nil for a clean close or a stop.
	WatchEnded(d time.Duration, events int, err error)
	// StrategyFallback: Auto could not stream because of err and lists.
	StrategyFallback(err error)
	// Backoff: the watcher waits delay before retrying after err.
	Backoff(delay time.Duration, err error)
}

// NoopObserver observes nothing.
type NoopObserver struct{}

var _ Observer = NoopObserver{}

// ListRequest implements Observer.
func (NoopObserver) ListRequest(metav1.ListOptions, int, time.Duration, error) {}

// WatchStarted implements Observer.
func (NoopObserver) WatchStarted(metav1.ListOptions) {}

// WatchEnded implements Observer.
func (NoopObserver) WatchEnded(time.Duration, int, error) {}

// StrategyFallback implements Observer.
func (NoopObserver) StrategyFallback(error) {}

// Backoff implements Observer.
func (NoopObserver) Backoff(time.Duration, error) {}

// joinObservers returns one Observer that calls each of obs in turn.
func joinObservers(obs []Observer) Observer {
	switch len(obs) {
	case 0:
		return NoopObserver{}
	case 1:
		return obs[0]
	}
	return observers(slices.Clone(obs))
}

// observers calls each of its Observers in turn.
type observers []Observer

func (o observers) ListRequest(opts metav1.ListOptions, items int, d time.Duration, err error) {
	for _, x := range o {
		x.ListRequest(opts, items, d, err)
	}
}

func (o observers) WatchStarted(opts metav1.ListOptions) {
	for _, x := range o {
		x.WatchStarted(opts)
	}
}

func (o observers) WatchEnded(d time.Duration, events int, err error) {
	for _, x := range o {
		x.WatchEnded(d, events, err)
	}
}

func (o observers) StrategyFallback(err error) {
	for _, x := range o {
		x.StrategyFallback(err)
	}
}

func (o observers) Backoff(delay time.Duration, err error) {
	for _, x := range o {
		x.Backoff(delay, err)
	}
}
