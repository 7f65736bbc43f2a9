package fake

import (
	"context"
	"fmt"
	"net"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Server is an in-memory API server for the objects of one list type. It is
// safe for concurrent use. Close ends its open watches.
type Server struct {
	listType     reflect.Type  // the list struct, e.g. corev1.ConfigMapList
	itemType     reflect.Type  // the item pointer, e.g. *corev1.ConfigMap
	deepCopyInto reflect.Value // itemType's DeepCopyInto, to decode straight into Items
	resource     schema.GroupResource
	noWatchList  bool
	noLog        bool
	// minRequestTimeout bounds a watch without timeoutSeconds, as
	// kube-apiserver's --min-request-timeout does; 0 is no bound.
	minRequestTimeout time.Duration
	// bookmarkFrequency is how often a watch that allows bookmarks gets one;
	// 0 sends none but those asked for.
	bookmarkFrequency time.Duration
	// fieldSet gives the fields, besides metadata.name and
	// metadata.namespace, that field selectors match (WithFieldSet), and
	// fieldLabels its keys; nil: none.
	fieldSet    func(runtime.Object) fields.Set
	fieldLabels fields.Set

	mu         sync.Mutex
	rv         uint64              // the newest resourceVersion handed out
	compacted  uint64              // resourceVersions below it are gone
	heads      map[string]*version // newest version per key, tombstones until Compact
	live       int                 // keys whose head is not a tombstone
	keys       []string            // every key of heads; sorted when keysSorted
	keysSorted bool
	history    []change                  // every change after compacted, in resourceVersion order
	watches    map[*serverWatch]struct{} // open: they get every change committed
	// drops counts CloseWatches and Close calls: a watch admitted before one
	// and registered after it was on a connection that dropped, and ends.
	drops    uint64
	fault    Fault
	requests []Request
	closed   bool
	uids     uint64
	pumps    sync.WaitGroup
}

// version is one state of a key. Stored objects are never mutated, so they
// are deep-copied outside the lock.
type version struct {
	obj     runtime.Object // for a deletion: the last state, at the deletion's rv
	rv      uint64
	deleted bool
	older   *version
}

type change struct {
	typ  watch.EventType
	v    *version
	prev *version // for a MODIFIED v, the version it replaced
}

// Request is one LIST or WATCH call as the server received it.
type Request struct {
	// Verb is "list" or "watch".
	Verb string
	// Options are the ListOptions of the call, copied.
	Options metav1.ListOptions
}

// Fault decides the fate of a request before the server serves it: a nil
// error serves it, any other error is returned to the caller instead. ctx is
// the caller's context (context.Background for the context-less methods), so
// a Fault may also block until it ends, as a hung request would.
type Fault func(ctx context.Context, req Request) error

// Option configures a Server.
type Option func(*Server)

// WithoutWatchList makes the server ignore sendInitialEvents and
// resourceVersionMatch on watches, as a server that predates streaming lists
// or client-go's FakeControllerSource does: a watch from "" then sends
// synthetic ADDED events and no end bookmark, a watch from a resourceVersion
// only the changes after it.
func WithoutWatchList() Option { return func(s *Server) { s.noWatchList = true } }

// WithoutRequestLog turns the request log off, so that a long benchmark
// does not measure it growing.
func WithoutRequestLog() Option { return func(s *Server) { s.noLog = true } }

// DefaultMinRequestTimeout is kube-apiserver's default --min-request-timeout:
// a watch without timeoutSeconds ends after it times a random factor in
// [1, 2), 30 to 60 minutes.
const DefaultMinRequestTimeout = 1800 * time.Second

// WithMinRequestTimeout sets what bounds a watch without timeoutSeconds (or
// with 0), as kube-apiserver's --min-request-timeout does: it ends, as after
// its timeoutSeconds, after d times a random factor in [1, 2). 0 is no
// bound. The default is DefaultMinRequestTimeout.
func WithMinRequestTimeout(d time.Duration) Option {
	return func(s *Server) { s.minRequestTimeout = d }
}

// DefaultBookmarkFrequency is how often the API server's watch cache sends
// a BOOKMARK on a watch that allows them.
const DefaultBookmarkFrequency = time.Minute

// WithBookmarkFrequency sets how often a watch with allowWatchBookmarks gets
// a BOOKMARK at the newest resourceVersion: every d, and 2 s before its
// timeout when that comes sooner, as the API server's watch cache sends
// them. A bookmark no newer than the resourceVersion the watch started from
// is not sent. 0 sends only the end bookmark of a streamed list and those
// of SendBookmark. The default is DefaultBookmarkFrequency.
func WithBookmarkFrequency(d time.Duration) Option {
	return func(s *Server) { s.bookmarkFrequency = d }
}

// WithFieldSet lets field selectors match the fields fieldSet returns for
// an object, besides metadata.name and metadata.namespace, as a resource's
// registry does with its field label conversions: spec.nodeName and
// status.phase of Pods, type of Secrets, and so on. A field selector on a
// field fieldSet does not return answers 400 BadRequest "field label not
// supported". The fields are the keys fieldSet returns for the list's zero
// item, so they must not depend on the object's values. For instance, for
// Pods by node:
//
//	fake.WithFieldSet(func(obj runtime.Object) fields.Set {
//		return fields.Set{"spec.nodeName": obj.(*corev1.Pod).Spec.NodeName}
//	})
func WithFieldSet(fieldSet func(obj runtime.Object) fields.Set) Option {
	return func(s *Server) { s.fieldSet = fieldSet }
}

// NewServer returns an empty server storing the item type of exampleList,
// which must be a pointer to a typed list such as &corev1.ConfigMapList{}.
// It panics on anything else: that is a bug in the test.
func NewServer(exampleList runtime.Object, opts ...Option) *Server {
	if !meta.IsListType(exampleList) {
		panic(fmt.Sprintf("fake.NewServer: %T is not a list type", exampleList))
	}
	items, err := meta.GetItemsPtr(exampleList)
	if err != nil {
		panic(fmt.Sprintf("fake.NewServer: %T: %v", exampleList, err))
	}
	elem := reflect.TypeOf(items).Elem().Elem()
	if elem.Kind() != reflect.Struct {
		panic(fmt.Sprintf("fake.NewServer: %T: items must be structs, not %v", exampleList, elem))
	}
	itemType := reflect.PointerTo(elem)
	if !itemType.Implements(reflect.TypeFor[runtime.Object]()) || !itemType.Implements(reflect.TypeFor[metav1.Object]()) {
		panic(fmt.Sprintf("fake.NewServer: %v is not a Kubernetes object", itemType))
	}
	s := &Server{
		listType: reflect.TypeOf(exampleList).Elem(),
		itemType: itemType,
		resource: schema.GroupResource{Resource: strings.ToLower(elem.Name()) + "s"},
		rv:       1,
		heads:    map[string]*version{},
		watches:  map[*serverWatch]struct{}{},

		minRequestTimeout: DefaultMinRequestTimeout,
		bookmarkFrequency: DefaultBookmarkFrequency,
	}
	if m, ok := itemType.MethodByName("DeepCopyInto"); ok && m.Type.NumIn() == 2 && m.Type.In(1) == itemType {
		s.deepCopyInto = m.Func
	}
	for _, opt := range opts {
		opt(s)
	}
	if s.fieldSet != nil {
		s.fieldLabels = s.fieldSet(reflect.New(elem).Interface().(runtime.Object))
	}
	return s
}

// ListerWatcher returns a client-go ListerWatcher (with and without context)
// reading from this server.
func (s *Server) ListerWatcher() *ListerWatcher { return &ListerWatcher{Server: s} }

// ResourceVersion returns the newest resourceVersion, as a LIST would.
func (s *Server) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return formatRV(s.rv)
}

// Len returns the number of stored objects.
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

// Create stores a copy of obj under a new resourceVersion, with a UID when it
// has none, and returns the stored state.
func (s *Server) Create(obj runtime.Object) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, err := s.createLocked(obj)
	if err != nil {
		return nil, err
	}
	return stored.DeepCopyObject(), nil
}

// CreateN creates n objects made by newObject(0..n-1) under one lock, for
// loading large collections fast. It stops at the first error.
func (s *Server) CreateN(n int, newObject func(i int) runtime.Object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = slices.Grow(s.history, n)
	for i := range n {
		if _, err := s.createLocked(newObject(i)); err != nil {
			return fmt.Errorf("object %d: %w", i, err)
		}
	}
	return nil
}

func (s *Server) createLocked(obj runtime.Object) (runtime.Object, error) {
	stored, m, key, err := s.accept(obj)
	if err != nil {
		return nil, err
	}
	head := s.heads[key]
	if head != nil && !head.deleted {
		return nil, apierrors.NewAlreadyExists(s.resource, key)
	}
	if m.GetUID() == "" {
		s.uids++
		m.SetUID(types.UID("uid-" + strconv.FormatUint(s.uids, 10)))
	}
	if head == nil {
		s.addKey(key)
	}
	s.live++
	s.commit(watch.Added, key, stored, m, head)
	return stored, nil
}

// Update replaces the stored state of obj's key with a copy of obj. A
// non-empty resourceVersion on obj must match the stored one (optimistic
// concurrency, as on a real server). UID and creation time carry over.
func (s *Server) Update(obj runtime.Object) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, m, key, err := s.accept(obj)
	if err != nil {
		return nil, err
	}
	head := s.heads[key]
	if head == nil || head.deleted {
		return nil, apierrors.NewNotFound(s.resource, key)
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != formatRV(head.rv) {
		return nil, apierrors.NewConflict(s.resource, key,
			fmt.Errorf("the object has been modified: resourceVersion %s, stored %d", rv, head.rv))
	}
	old, _ := meta.Accessor(head.obj)
	m.SetUID(old.GetUID())
	m.SetCreationTimestamp(old.GetCreationTimestamp())
	s.commit(watch.Modified, key, stored, m, head)
	return stored.DeepCopyObject(), nil
}

// Delete removes the object namespace/name (namespace "" for cluster-scoped
// objects) and returns its last state, at the deletion's resourceVersion.
func (s *Server) Delete(namespace, name string) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := objectKey(namespace, name)
	head := s.heads[key]
	if head == nil || head.deleted {
		return nil, apierrors.NewNotFound(s.resource, key)
	}
	last := head.obj.DeepCopyObject()
	m, _ := meta.Accessor(last)
	s.live--
	s.commit(watch.Deleted, key, last, m, head)
	return last.DeepCopyObject(), nil
}

// commit stores a new version of key at the next resourceVersion, records it
// in the history and queues it on every open watch.
func (s *Server) commit(typ watch.EventType, key string, obj runtime.Object, m metav1.Object, head *version) {
	s.rv++
	m.SetResourceVersion(formatRV(s.rv))
	v := &version{obj: obj, rv: s.rv, deleted: typ == watch.Deleted, older: head}
	s.heads[key] = v
	c := change{typ: typ, v: v}
	if typ == watch.Modified {
		// Kept here: Compact cuts the chain of older versions.
		c.prev = head
	}
	s.history = append(s.history, c)
	for w := range s.watches {
		if v.rv > w.after {
			w.enqueue(queued{typ: typ, v: v, prev: c.prev})
		}
	}
}

// accept type-checks obj and returns a private copy with its accessor and key.
func (s *Server) accept(obj runtime.Object) (runtime.Object, metav1.Object, string, error) {
	if reflect.TypeOf(obj) != s.itemType {
		return nil, nil, "", fmt.Errorf("fake server stores %v, not %T", s.itemType, obj)
	}
	stored := obj.DeepCopyObject()
	m, err := meta.Accessor(stored)
	if err != nil {
		return nil, nil, "", err
	}
	if m.GetName() == "" {
		return nil, nil, "", apierrors.NewBadRequest("name is required")
	}
	if ts := m.GetCreationTimestamp(); ts.IsZero() {
		m.SetCreationTimestamp(metav1.Now())
	}
	return stored, m, objectKey(m.GetNamespace(), m.GetName()), nil
}

func (s *Server) addKey(key string) {
	if n := len(s.keys); n > 0 && s.keysSorted && s.keys[n-1] >= key {
		s.keysSorted = false
	}
	if len(s.keys) == 0 {
		s.keysSorted = true
	}
	s.keys = append(s.keys, key)
}

// sortedKeys sorts the key index if a key arrived out of order since the
// last read; loading in key order never sorts.
func (s *Server) sortedKeys() []string {
	if !s.keysSorted {
		slices.Sort(s.keys)
		s.keysSorted = true
	}
	return s.keys
}

// Compact forgets every resourceVersion before the current one, as etcd
// compaction does: LIST at an older exact resourceVersion, continue tokens
// from before and WATCH from before answer 410 Expired.
func (s *Server) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = s.rv
	s.history = nil
	// Watches still sending their initial state read it at their snapshot,
	// which a real server serves from its watch cache, untouched by etcd's
	// compaction: keep the versions those snapshots see.
	keep := s.rv
	for w := range s.watches {
		if w.initial {
			keep = min(keep, w.snap)
		}
	}
	keys := s.keys[:0]
	for _, key := range s.keys {
		head := s.heads[key]
		if head.deleted && head.rv <= keep {
			delete(s.heads, key)
			continue
		}
		v := head
		for v.rv > keep && v.older != nil {
			v = v.older
		}
		v.older = nil
		keys = append(keys, key)
	}
	clear(s.keys[len(keys):])
	s.keys = keys
}

// SetFault installs f to decide every following request (nil removes it).
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Requests returns the requests received so far, oldest first (none with
// WithoutRequestLog).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// ResetRequests empties the request log.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// admit logs a request and applies the fault hook, outside the lock so that
// a hook may call the server.
func (s *Server) admit(ctx context.Context, verb string, opts metav1.ListOptions) error {
	req := Request{Verb: verb, Options: copyOptions(opts)}
	s.mu.Lock()
	if !s.noLog {
		s.requests = append(s.requests, req)
	}
	fault, closed := s.fault, s.closed
	s.mu.Unlock()
	if closed {
		return ConnectionRefused()
	}
	if fault != nil {
		return fault(ctx, req)
	}
	return nil
}

// Close ends every open watch, waits for them and refuses later requests
// (as connection refused), those a Fault hook holds while it runs included:
// nothing of the server runs once it has returned.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.dropWatchesLocked()
	s.mu.Unlock()
	s.pumps.Wait()
}

// ConnectionRefused returns the error a client gets when nothing listens on
// the API server's port; client-go's utilnet.IsConnectionRefused reports true
// for it.
func ConnectionRefused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// TooLargeResourceVersion returns the error an API server answers when asked
// for a resourceVersion newer than it has seen (a 504 with the
// ResourceVersionTooLarge cause).
func TooLargeResourceVersion(requested, current uint64) *apierrors.StatusError {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", requested, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func formatRV(rv uint64) string { return strconv.FormatUint(rv, 10) }

func parseRV(rv string) (uint64, error) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}

// visibleAt returns the version of a key that a read at rv sees, or nil.
func visibleAt(v *version, rv uint64) *version {
	for v != nil && v.rv > rv {
		v = v.older
	}
	if v == nil || v.deleted {
		return nil
	}
	return v
}

func copyOptions(opts metav1.ListOptions) metav1.ListOptions {
	if opts.TimeoutSeconds != nil {
		opts.TimeoutSeconds = new(*opts.TimeoutSeconds)
	}
	if opts.SendInitialEvents != nil {
		opts.SendInitialEvents = new(*opts.SendInitialEvents)
	}
	return opts
}
