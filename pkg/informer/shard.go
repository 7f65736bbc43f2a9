package informer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

// WithShard restricts the informer to the range of the hash space that
// member serves (see package shard): it lists and watches with the range's
// shard selector, which an API server with the ShardedListAndWatch feature
// gate applies, and drops what is outside the range itself, so an API
// server without the gate gives the same store (SyncStatus, the log and
// the metric leaninformer_shard_informers say which of the two filters).
//
// When member's range changes, the informer relists with the new range:
// relist reuse keeps the objects that stay, handlers get
// OnDelete(cache.DeletedFinalStateUnknown) for those that left and OnAdd
// for those that joined, all in one swap of the store. HasSynced stays
// true through a range change: the store always holds a complete list of
// one range, the old one until the swap; SyncStatus().Shard.Pending says
// that a relist for a new range is under way, and shard.Reconciler holds
// back requests for the new range until every sharded informer of the
// member holds it (shard.Member.CachesHold), so reconcilers read complete
// caches.
//
// The informer does not wait for member to run: it lists at once with the
// range member serves then, empty before its first claim (which no object
// matches), and relists when the range arrives. It cannot wait:
// controller-runtime's manager starts its caches, and waits for them to
// sync, before it starts runnables such as the member. A plain client-go
// program that starts member first and waits for member.Ready saves that
// first, empty list.
//
// Informers of the kinds of except (example objects, matched by API group
// and kind; typed objects need a kind in the scheme) are not sharded:
// with NewCacheWith, the controller's own configuration, or the secondary
// objects every replica needs whole. A nil member, a nil exclusion, one
// without a kind, or a kind given twice make the options invalid (see
// ValidateOptions). A controller whose primary kind is excluded adds the
// source shard.Handovers.
func WithShard(member *shard.Member, except ...runtime.Object) Option {
	return func(c *config) { c.shard = &shardConfig{member: member, except: except} }
}

// withScheme sets the scheme that gives typed objects their kinds, for
// WithShard's exclusions: NewCacheWith passes the manager's.
func withScheme(s *runtime.Scheme) Option {
	return func(c *config) { c.scheme = s }
}

// shardConfig is what WithShard set.
type shardConfig struct {
	member *shard.Member
	except []runtime.Object
}

func (sc *shardConfig) validate(s *runtime.Scheme) error {
	if sc.member == nil {
		return fmt.Errorf("WithShard: the member is nil")
	}
	seen := make(map[schema.GroupKind]int, len(sc.except))
	var errs []error
	for i, obj := range sc.except {
		if isNilObject(obj) {
			errs = append(errs, fmt.Errorf("WithShard: exclusion %d is nil", i))
			continue
		}
		gk, ok := groupKindOf(obj, s)
		if !ok {
			errs = append(errs, fmt.Errorf("WithShard: the exclusion %T has no kind: set its TypeMeta or use a type of the scheme", obj))
			continue
		}
		// A kind given twice is most likely another kind mistyped, which
		// would then be sharded.
		if j, dup := seen[gk]; dup {
			errs = append(errs, fmt.Errorf("WithShard: exclusions %d and %d are both %s", j, i, gk))
			continue
		}
		seen[gk] = i
	}
	return errors.Join(errs...)
}

// isNilObject reports whether obj is nil or a nil pointer, whose kind
// cannot be read.
func isNilObject(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// excludes reports whether informers of obj's kind are left unsharded.
func (sc *shardConfig) excludes(obj runtime.Object, s *runtime.Scheme) bool {
	gk, ok := groupKindOf(obj, s)
	if !ok {
		return false
	}
	for _, ex := range sc.except {
		if exGK, _ := groupKindOf(ex, s); exGK == gk {
			return true
		}
	}
	return false
}

// groupKindOf is obj's group and kind: from its TypeMeta if set
// (unstructured and metadata-only objects), else from the scheme.
func groupKindOf(obj runtime.Object, s *runtime.Scheme) (schema.GroupKind, bool) {
	if isNilObject(obj) {
		return schema.GroupKind{}, false
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		return gvk.GroupKind(), true
	}
	if kinds, _, err := s.ObjectKinds(obj); err == nil && len(kinds) > 0 {
		return kinds[0].GroupKind(), true
	}
	return schema.GroupKind{}, false
}

// ShardStatus is the sharding part of SyncStatus.
type ShardStatus struct {
	// Sharded: the informer was built WithShard and its kind is not
	// excluded.
	Sharded bool
	// Filtering says whether the API server or the informer filters.
	Filtering shard.Filtering
	// Stored is the range the store holds: that of the last complete list.
	Stored shard.Range
	// Pending: the member's range changed, and the relist with the new
	// range has not completed yet.
	Pending bool
}

// String summarises the status.
func (st ShardStatus) String() string {
	if !st.Sharded {
		return "not sharded"
	}
	where := "filtering not known yet"
	if st.Filtering != shard.FilteringUnknown {
		where = "filtered on the " + string(st.Filtering)
	}
	s := fmt.Sprintf("shard: %.3f of the hash space in %d terms, %s", st.Stored.Fraction(), st.Stored.Terms(), where)
	if st.Pending {
		s += ", relisting for a new range"
	}
	return s
}

// shardState follows a member's range for one informer.
type shardState struct {
	member      *shard.Member
	description string // of the objects, naming the cache in the member's logs
	lw          *shard.ListerWatcher
	metrics     *metricsBridge

	mu      sync.Mutex
	cache   *shard.CacheRange // registered while the informer runs
	logger  klog.Logger
	stored  shard.Range
	pending bool
}

// newShardState wraps lw so that it lists and watches member's range.
func newShardState(member *shard.Member, lw toolscache.ListerWatcher, m *metricsBridge, description string) *shardState {
	st := &shardState{member: member, description: description, metrics: m, logger: klog.Background()}
	// Context-aware first: the shard's ListerWatcher calls lw with contexts,
	// and a call that ignores its own must not hold up Run's return.
	st.lw = shard.NewListerWatcher(listerwatcher.ContextAware(lw), member, func(f shard.Filtering, reason string) {
		st.mu.Lock()
		logger := st.logger
		st.mu.Unlock()
		logger.Info("Sharded informer: objects are filtered on the "+string(f), "type", description, "reason", reason)
		m.shardFiltering(f)
	})
	return st
}

// start registers the informer's store with the member and sets the range
// of the first list: what the member serves now.
func (st *shardState) start(ctx context.Context) {
	st.mu.Lock()
	st.logger = klog.FromContext(ctx)
	st.cache = st.member.TrackCacheOf(st.description)
	st.mu.Unlock()
	st.lw.SetRange(st.member.Serving())
}

// follow relists (with relist) whenever the member's range changes, until
// ctx ends.
func (st *shardState) follow(ctx context.Context, relist func()) {
	for {
		r, changed := st.member.Watch()
		if !r.Equal(st.lw.Range()) {
			st.lw.SetRange(r)
			st.mu.Lock()
			st.pending = true
			logger := st.logger
			st.mu.Unlock()
			logger.V(2).Info("Shard range changed: relisting", "share", r.Fraction(), "terms", r.Terms())
			relist()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// stop unregisters the informer's store from the member.
func (st *shardState) stop() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.cache != nil {
		st.cache.Close()
		st.cache = nil
	}
}

// listed records a completed restart: the store now holds the range that
// restart listed.
func (st *shardState) listed() {
	stored := st.lw.RestartRange()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.stored = stored
	st.pending = !stored.Equal(st.lw.Range())
	if st.cache != nil {
		st.cache.Set(stored)
	}
}

func (st *shardState) status() ShardStatus {
	if st == nil {
		return ShardStatus{}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return ShardStatus{Sharded: true, Filtering: st.lw.Filtering(), Stored: st.stored, Pending: st.pending}
}
