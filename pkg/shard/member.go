package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Member is one replica of a sharded controller: it holds and renews its
// own Lease, watches the other members' Leases, and serves the Range of the
// hash space the assignment gives it once no other live member publishes
// any of it. Run it with Start (it is a controller-runtime Runnable that
// needs no leader election); read what it serves with Serving or Watch, and
// bracket work on an object with Begin, so that a hand-over waits for it.
type Member struct {
	cfg    *config
	leases coordinationclient.LeaseInterface
	gate   *gate
	ready  chan struct{} // closed once the member has made its first claim
	caches caches

	// last is the member's Lease as last read or written by its loop: the
	// base of its next update, which keeps what others put on the Lease.
	last *coordinationv1.Lease

	mu      sync.Mutex
	started bool
	// unassignedSince is when a Reconciler first retried a request for
	// want of the member's first assignment; unassignedTold says that the
	// wait has been logged.
	unassignedSince time.Time
	unassignedTold  bool
}

// New returns the member of the sharded controller name whose Leases live
// in namespace. leases is typically a clientset's CoordinationV1(); the
// member needs get, list, watch, create, update, patch and delete on Leases
// in namespace.
func New(leases coordinationclient.LeasesGetter, namespace, name string, opts ...Option) (*Member, error) {
	if isNil(leases) {
		return nil, errors.New("shard: a Lease client is required")
	}
	cfg, err := newConfig(namespace, name, opts)
	if err != nil {
		return nil, err
	}
	return &Member{cfg: cfg, leases: leases.Leases(namespace), gate: newGate(cfg.clock), ready: make(chan struct{})}, nil
}

// Key is the field whose hash places objects.
func (m *Member) Key() Key { return m.cfg.key }

// LeaseName is the name of the member's Lease, its name in the assignment.
func (m *Member) LeaseName() string { return m.cfg.leaseName }

// Serving is the Range the member serves now: empty before Start has
// claimed anything and after it returned.
func (m *Member) Serving() Range {
	r, _ := m.gate.snapshot()
	return r
}

// Watch returns the Range served now and a channel closed when it changes.
func (m *Member) Watch() (Range, <-chan struct{}) { return m.gate.snapshot() }

// Begin starts work on the object whose hash is h, if the member serves h
// now. While the work runs, h stays published, so no other member takes it
// over; done ends the work and must be called. The returned context is ctx,
// also cancelled if the member is fenced (it could not renew its Lease in
// time): work must then end within the lease duration minus the renew
// deadline, before another member may start on h.
func (m *Member) Begin(ctx context.Context, h uint64) (context.Context, func(), bool) {
	return m.gate.begin(ctx, h)
}

// Ready is closed once the running member has written its Lease and
// verified its first claim: Serving is then what it could take at start
// (everything assigned to it that no other member held). It is never closed
// if Start returns before that (an error, or a stop), so wait for it
// together with Start's end or a context. The informers of WithShard do not
// wait for it: they list the empty range first and relist when the first
// claim arrives.
func (m *Member) Ready() <-chan struct{} { return m.ready }

// NeedLeaderElection is false: every replica runs its member.
func (m *Member) NeedLeaderElection() bool { return false }

// Start runs the member until ctx is cancelled, then stops cleanly: it
// serves nothing more, waits for the work in flight, publishes an empty
// range and deletes its Lease, so that the others take its range over at
// once (a member none of whose Lease writes succeeded has nothing to
// release and returns at once, nil also when the member Leases could not
// even be listed). It returns nil after a clean stop, and an error if the stop timed
// out (the Lease is then left to expire), if another process took the
// member's Lease over, or if a Lease of its name belongs to another
// controller's member (see WithIdentity). Once it has returned, the member serves nothing and
// is assigned nothing. A Member starts once.
func (m *Member) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return errors.New("shard: the member was already started")
	}
	m.started = true
	m.mu.Unlock()

	// The watch of the group outlives ctx: a stopping member still renews
	// its Lease while its work in flight ends.
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatch()
	wake := make(chan struct{}, 1)
	store, watchDone, err := m.watchGroup(watchCtx, wake)
	if err != nil {
		m.retire()
		return err
	}
	defer func() { stopWatch(); <-watchDone }()
	defer m.retire()
	if !toolscache.WaitForCacheSync(ctx.Done(), func() bool { return store.HasSynced() }) {
		// Stopped before the group could be listed (an API server outage
		// at start): nothing was written or served, so the stop is clean.
		m.cfg.logger.Info("Member stopped before the member Leases could be listed: nothing to release")
		return nil
	}

	c := newCore(m.cfg, m.gate, uint64(m.cfg.clock.Now().UnixNano()))
	// Requests run on a context of their own: a stopping member still
	// renews its Lease and then deletes it after ctx is done.
	ioCtx, cancelIO := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelIO()
	done := ctx.Done()
	var readyOnce sync.Once
	var stopTimer clock.Timer
	var stopDeadline <-chan time.Time
	defer func() {
		if stopTimer != nil {
			stopTimer.Stop()
		}
	}()
	for {
		now := m.cfg.clock.Now()
		c.observe(now, m.records(store.GetStore().List()))
		if req := c.next(now); req.kind != reqNone {
			m.do(ioCtx, c, req)
			if c.ready() {
				readyOnce.Do(func() { close(m.ready) })
			}
			continue
		}
		if c.lost != nil {
			return c.lost
		}
		if c.finished {
			if c.own.written {
				m.cfg.logger.Info("Member stopped and released its Lease")
			} else {
				m.cfg.logger.Info("Member stopped before any write of its Lease succeeded: nothing to release")
			}
			return nil
		}
		timer := m.cfg.clock.NewTimer(c.wakeAt(now).Sub(now))
		select {
		case <-timer.C():
		case <-wake:
		case <-m.gate.drained:
		case <-done:
			c.stop()
			done = nil
			stopTimer = m.cfg.clock.NewTimer(m.cfg.stopTimeout)
			stopDeadline = stopTimer.C()
		case <-stopDeadline:
			timer.Stop()
			return fmt.Errorf("shard: member %s did not stop within %v (work in flight or failing requests); its Lease expires after %v",
				m.cfg.leaseName, m.cfg.stopTimeout, m.cfg.leaseDuration)
		}
		timer.Stop()
	}
}

// waitedForAssignment is called when a Reconciler retries a request
// because the member has computed no assignment yet: once that has lasted a
// lease duration, it says why, once, where users look (every reconcile
// being retried, without a word, is what they would see otherwise).
//
// It returns how long requests have waited for the first assignment (zero
// once there is one: the request then waits for a hand-over).
func (m *Member) waitedForAssignment() time.Duration {
	m.gate.mu.Lock()
	assigned := m.gate.assignedYet
	m.gate.mu.Unlock()
	if assigned {
		return 0
	}
	now := m.cfg.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unassignedSince.IsZero() {
		m.unassignedSince = now
	}
	waited := now.Sub(m.unassignedSince)
	if m.unassignedTold || waited < m.cfg.leaseDuration {
		return waited
	}
	m.unassignedTold = true
	if !m.started {
		m.cfg.logger.Error(nil, "Reconcile requests are retried until the shard member has made its first assignment, but the member has not been started: add it to the manager (mgr.Add(member)) or run its Start",
			"waited", waited)
		return waited
	}
	m.cfg.logger.Error(nil, "Reconcile requests are retried until the shard member has made its first assignment, and it has not listed the member Leases yet: see its failed Lease requests (it needs get, list, watch, create, update, patch and delete on leases.coordination.k8s.io in its namespace)",
		"waited", waited, "namespace", m.cfg.namespace)
	return waited
}

// retire ends a member whose Start returns: it serves and is assigned
// nothing, and sees no members (its gauges say so, not what it saw last).
func (m *Member) retire() {
	m.gate.retire()
	m.cfg.rec.Members(0)
}

// watchGroup starts an informer on the group's Leases that signals wake on
// every change.
func (m *Member) watchGroup(ctx context.Context, wake chan<- struct{}) (toolscache.SharedIndexInformer, <-chan struct{}, error) {
	selector := labels.SelectorFromSet(labels.Set{LabelController: m.cfg.name}).String()
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			l, err := m.leases.List(ctx, opts)
			if err != nil && ctx.Err() == nil {
				m.cfg.rec.LeaseError(listLeases)
				m.cfg.logger.Error(err, "Shard Lease request failed", "request", listLeases)
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return m.leases.Watch(ctx, opts)
		},
	}
	inf := toolscache.NewSharedIndexInformer(listThenWatch{lw}, &coordinationv1.Lease{}, 0, toolscache.Indexers{})
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal() },
		UpdateFunc: func(any, any) { signal() },
		DeleteFunc: func(any) { signal() },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("shard: watching the member Leases: %w", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	return inf, done, nil
}

// listLeases labels failed LISTs of the Lease watch in
// lease_request_errors_total.
const listLeases = "list leases"

// listThenWatch keeps client-go's reflector from streaming the list of a
// group's Leases: a handful of objects, for which a LIST costs nothing, and
// which every client, a fake included, can list.
type listThenWatch struct{ *toolscache.ListWatch }

// IsWatchListSemanticsUnSupported tells the reflector to LIST, then WATCH.
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// records reads the group's Leases from objs (the informer's store or a
// list), skipping Leases of other groups.
func (m *Member) records(objs []any) []leaseRecord {
	out := make([]leaseRecord, 0, len(objs))
	for _, o := range objs {
		l, ok := o.(*coordinationv1.Lease)
		if !ok || l.Labels[LabelController] != m.cfg.name {
			continue
		}
		out = append(out, recordOf(l, m.cfg.key, m.cfg.leaseDuration))
	}
	return out
}

// requestTimeout bounds one request, so that a hung request delays a fence
// by at most this long.
func (m *Member) requestTimeout() time.Duration { return max(m.cfg.renewInterval, time.Second) }

// do carries out req and hands its result to c.
func (m *Member) do(ctx context.Context, c *core, req request) {
	ctx, cancel := context.WithTimeout(ctx, m.requestTimeout())
	defer cancel()
	switch req.kind {
	case reqGetOwn:
		l, err := m.leases.Get(ctx, req.name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				m.last = nil
			}
			c.gotOwn(m.cfg.clock.Now(), req, nil, classify(err))
			return
		}
		m.last = l
		rec := recordOf(l, m.cfg.key, m.cfg.leaseDuration)
		c.gotOwn(m.cfg.clock.Now(), req, &rec, nil)
	case reqWrite:
		var out *coordinationv1.Lease
		var err error
		if req.create {
			out, err = m.leases.Create(ctx, m.cfg.buildLease(nil, "", req.publish, req.sent), metav1.CreateOptions{})
		} else {
			out, err = m.leases.Update(ctx, m.cfg.buildLease(m.last, req.rv, req.publish, req.sent), metav1.UpdateOptions{})
		}
		rv := ""
		if err == nil {
			m.last, rv = out, out.ResourceVersion
		}
		c.wrote(m.cfg.clock.Now(), req, rv, classify(err))
	case reqVerify:
		list, err := m.leases.List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{LabelController: m.cfg.name}).String(),
		})
		var recs []leaseRecord
		if err == nil {
			objs := make([]any, len(list.Items))
			for i := range list.Items {
				objs[i] = &list.Items[i]
			}
			recs = m.records(objs)
		}
		c.listed(m.cfg.clock.Now(), req, recs, classify(err))
	case reqDeleteOwn, reqDeletePeer:
		c.deleted(m.cfg.clock.Now(), req, classify(m.release(ctx, req.name, req.rv)))
	}
}

// release deletes the Lease name if it still has resourceVersion rv:
// it drops the Lease's finalizer (a terminating Lease is gone then), then
// deletes it. Other finalizers stay (a strategic merge patch removes ours
// only): the Lease then stays, terminating, until their owners remove them.
func (m *Member) release(ctx context.Context, name, rv string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion":                     rv,
		"$deleteFromPrimitiveList/finalizers": []string{Finalizer},
	}})
	if err != nil {
		return err
	}
	l, err := m.leases.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	rv = l.ResourceVersion
	err = m.leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	if apierrors.IsNotFound(err) {
		return nil // it was terminating: dropping the finalizer deleted it
	}
	return err
}

// classify maps API errors to the core's.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %w", errNotFound, err)
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%w: %w", errConflict, err)
	default:
		return err
	}
}
