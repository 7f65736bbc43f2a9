package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// Filtering says where a sharded ListerWatcher's objects are filtered.
type Filtering string

// The filtering modes.
const (
	// FilteringUnknown: nothing has been listed yet.
	FilteringUnknown Filtering = ""
	// FilteringServer: the API server applies the shard selector, so each
	// replica lists, watches and decodes only its share.
	FilteringServer Filtering = "server"
	// FilteringClient: the API server ignores the shard selector (no
	// ShardedListAndWatch gate), so every replica receives everything and
	// drops what is not in its range with the same hash: it holds only its
	// share, but lists, watches and decodes everything.
	FilteringClient Filtering = "client"
)

// nothing is the selector of a member that serves nothing: no selector can
// express the empty range, so it asks for the hashes below 1 (one object
// in 2^64 hashes to 0), and the client filter drops those.
func nothing(k Key) string { return NewRange(0, 1).Selector(k) }

// ListerWatcher restricts a ListerWatcher to a Range of a member's key.
// Every LIST and WATCH carries the range's shard selector, and every object
// listed or watched outside the range is dropped on the client, so the
// result is the same whether or not the API server applies the selector;
// Filtering says which it does. An informer on it calls SetRange and then
// relists whenever its member's range changes.
type ListerWatcher struct {
	inner  toolscache.ListerWatcherWithContext
	key    Key
	probe  func(context.Context) (bool, error) // does the API server filter? for lists that cannot say
	report func(Filtering, string)

	mu        sync.Mutex
	rng       Range
	restarted Range // the range of the request that began the last restart
	filtering Filtering
	noStream  bool
}

// NewListerWatcher wraps lw for m's key. Its range is empty until SetRange.
// report, if not nil, is called whenever Filtering changes, with the
// reason. NewListerWatcher panics if lw or m is nil.
func NewListerWatcher(lw toolscache.ListerWatcher, m *Member, report func(f Filtering, reason string)) *ListerWatcher {
	switch {
	case isNil(lw):
		panic("shard.NewListerWatcher: the ListerWatcher is nil")
	case m == nil:
		panic("shard.NewListerWatcher: the member is nil")
	}
	l := &ListerWatcher{inner: toolscache.ToListerWatcherWithContext(lw), key: m.Key(), probe: m.serverFilters, report: report}
	if u, ok := lw.(interface{ IsWatchListSemanticsUnSupported() bool }); ok {
		l.noStream = u.IsWatchListSemanticsUnSupported()
	}
	return l
}

// SetRange sets the range of the next LIST and WATCH, and of the client
// filter from now on.
func (l *ListerWatcher) SetRange(r Range) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rng = r
}

// Range is the range set last.
func (l *ListerWatcher) Range() Range {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rng
}

// RestartRange is the range of the request that began the last restart: a
// LIST without a continue token, or a WATCH with sendInitialEvents. Once
// that restart is complete, it is the range the informer's store holds.
func (l *ListerWatcher) RestartRange() Range {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.restarted
}

// Filtering is where objects were filtered in the last LIST or WATCH
// that could tell.
func (l *ListerWatcher) Filtering() Filtering {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.filtering
}

// IsWatchListSemanticsUnSupported passes the wrapped ListerWatcher's
// answer on, so that informers know whether it can stream.
func (l *ListerWatcher) IsWatchListSemanticsUnSupported() bool { return l.noStream }

func (l *ListerWatcher) selector() (Range, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rng.Empty() {
		return l.rng, nothing(l.key)
	}
	return l.rng, l.rng.Selector(l.key)
}

func (l *ListerWatcher) restart(r Range) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.restarted = r
}

func (l *ListerWatcher) setFiltering(f Filtering, reason string) {
	l.mu.Lock()
	changed := f != l.filtering
	l.filtering = f
	l.mu.Unlock()
	if changed && l.report != nil {
		l.report(f, reason)
	}
}

// List implements cache.Lister.
func (l *ListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// ListWithContext lists with the range's selector and drops what is
// outside the range.
func (l *ListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	r, sel := l.selector()
	if opts.Continue == "" {
		l.restart(r)
	}
	opts.ShardSelector = sel
	list, err := l.inner.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	dropped, err := l.filterList(list, r)
	if err != nil {
		return nil, err
	}
	l.learn(ctx, list, sel, dropped, opts.Continue == "")
	return list, nil
}

// Watch implements cache.Watcher.
func (l *ListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// WatchWithContext watches with the range's selector and drops events of
// objects outside the range. A streaming list (sendInitialEvents) cannot
// tell whether the server filtered, so it is preceded by a one-object LIST
// that can.
func (l *ListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	r, sel := l.selector()
	opts.ShardSelector = sel
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		l.restart(r)
		probe := metav1.ListOptions{ShardSelector: sel, Limit: 1, LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector}
		if list, err := l.inner.ListWithContext(ctx, probe); err == nil {
			dropped, _ := l.filterList(list, r)
			l.learn(ctx, list, sel, dropped, true)
		}
	}
	w, err := l.inner.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return newFilterWatch(w, func(ev watch.Event) bool {
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			h, err := l.key.HashOf(ev.Object)
			if err != nil || !l.Range().Contains(h) {
				if err == nil && !r.Contains(h) {
					l.setFiltering(FilteringClient, "the API server sent a watch event of an object outside the shard selector")
				}
				return false
			}
		}
		return true
	}), nil
}

// filterWatch passes on the events of a watch that keep accepts. Unlike
// apimachinery's watch.Filter, its goroutine ends on Stop even when nobody
// reads its results any more, as an informer that stops a watch does.
type filterWatch struct {
	inner    watch.Interface
	keep     func(watch.Event) bool
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func newFilterWatch(w watch.Interface, keep func(watch.Event) bool) *filterWatch {
	f := &filterWatch{inner: w, keep: keep, result: make(chan watch.Event), stop: make(chan struct{})}
	go f.loop()
	return f
}

func (f *filterWatch) loop() {
	defer close(f.result)
	in := f.inner.ResultChan()
	for {
		select {
		case ev, ok := <-in:
			if !ok {
				return
			}
			if !f.keep(ev) {
				continue
			}
			select {
			case f.result <- ev:
			case <-f.stop:
				return
			}
		case <-f.stop:
			return
		}
	}
}

// ResultChan implements watch.Interface.
func (f *filterWatch) ResultChan() <-chan watch.Event { return f.result }

// Stop implements watch.Interface: it stops the wrapped watch and the
// filter's goroutine.
func (f *filterWatch) Stop() {
	f.stopOnce.Do(func() { close(f.stop) })
	f.inner.Stop()
}

// filterList removes the items outside r from list and returns how many
// it removed.
func (l *ListerWatcher) filterList(list runtime.Object, r Range) (int, error) {
	outside := 0
	err := meta.EachListItem(list, func(o runtime.Object) error {
		h, err := l.key.HashOf(o)
		if err != nil {
			return err
		}
		if !r.Contains(h) {
			outside++
		}
		return nil
	})
	if err != nil || outside == 0 {
		return 0, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return 0, err
	}
	kept := items[:0]
	for _, o := range items {
		if h, _ := l.key.HashOf(o); r.Contains(h) {
			kept = append(kept, o)
		}
	}
	// SetList copies the kept items into a new Items array: the page's
	// array, with every dropped object, is garbage once the list is.
	return outside, meta.SetList(list, kept)
}

// learn updates Filtering from a list response to a request with selector
// sel that had dropped objects outside the range. A list that cannot echo
// the selector is answered by asking about the member's Leases, once per
// restart: mayProbe is set for a restart's first request only.
func (l *ListerWatcher) learn(ctx context.Context, list runtime.Object, sel string, dropped int, mayProbe bool) {
	if dropped > 0 {
		l.setFiltering(FilteringClient, fmt.Sprintf("the API server listed %d objects outside the shard selector", dropped))
		return
	}
	echo, canEcho := shardInfo(list)
	switch {
	case canEcho && echo == sel:
		l.setFiltering(FilteringServer, "the API server echoed the shard selector")
	case canEcho && echo == "":
		l.setFiltering(FilteringClient, "the API server did not echo the shard selector (ShardedListAndWatch feature gate off?)")
	case canEcho:
		l.setFiltering(FilteringClient, fmt.Sprintf("the API server echoed another shard selector: %q", echo))
	case mayProbe:
		// Metadata-only lists never echo: ask the API server about a list
		// that does, the member's Leases.
		server, err := l.probe(ctx)
		switch {
		case err != nil:
			return
		case server:
			l.setFiltering(FilteringServer, "the API server filters the member's Leases by shard selector")
		default:
			l.setFiltering(FilteringClient, "the API server does not filter the member's Leases by shard selector (ShardedListAndWatch feature gate off?)")
		}
	}
}

// shardInfo returns the selector a list echoes in ShardInfo, and whether a
// list of its kind can echo one at all.
func shardInfo(list runtime.Object) (string, bool) {
	switch l := list.(type) {
	case *metav1.PartialObjectMetadataList:
		return "", false // the API server drops ShardInfo converting to metadata
	case *unstructured.UnstructuredList:
		s, _, _ := unstructured.NestedString(l.Object, "metadata", "shardInfo", "selector")
		return s, true
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return "", false
	}
	sl, ok := la.(metav1.ShardedListInterface)
	if !ok {
		return "", false
	}
	if info := sl.GetShardInfo(); info != nil {
		return info.Selector, true
	}
	return "", true
}

// serverFilters asks the API server whether it applies shard selectors: a
// one-Lease list of the member's group with a selector of everything
// echoes it only if it does.
func (m *Member) serverFilters(ctx context.Context) (bool, error) {
	list, err := m.leases.List(ctx, metav1.ListOptions{
		Limit:         1,
		LabelSelector: labels.SelectorFromSet(labels.Set{LabelController: m.cfg.name}).String(),
		ShardSelector: FullRange().Selector(m.cfg.key),
	})
	if err != nil {
		return false, errors.Join(errors.New("shard: asking the API server whether it filters by shard selector"), err)
	}
	return list.ShardInfo != nil, nil
}
