package informer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// handlerReflector is the *cache.Reflector that watch error handlers
// receive. client-go hands them the reflector that lists and watches; this
// informer's watcher is not a Reflector, so handlers get a real one that
// never reaches the API server, whose Name and TypeDescription are the
// informer's, and whose LastSyncResourceVersion is the informer's at the
// moment of the call (see at).
type handlerReflector struct {
	*toolscache.Reflector

	mu     sync.Mutex // serialises at
	source *resourceVersionSource
}

func newHandlerReflector(name, typeDescription string, exampleObject runtime.Object) *handlerReflector {
	source := &resourceVersionSource{}
	quiet := logr.Discard() // its construction would log that it cannot stream
	return &handlerReflector{
		Reflector: toolscache.NewReflectorWithOptions(source, exampleObject, discardStore{}, toolscache.ReflectorOptions{
			Name:            name,
			TypeDescription: typeDescription,
			Logger:          &quiet,
		}),
		source: source,
	}
}

// at returns the reflector with its LastSyncResourceVersion set to rv. A
// Reflector only learns a resourceVersion by listing or watching, so it
// lists from a ListerWatcher that answers an empty list at rv; the watch it
// then opens is refused, which ends the call. Its logs are discarded: they
// would say that caches were populated.
func (r *handlerReflector) at(rv string) *toolscache.Reflector {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.source.rv.Store(&rv)
	ctx := klog.NewContext(context.Background(), logr.Discard())
	_ = r.ListAndWatchWithContext(ctx) // ends with errNeverWatches
	if got := r.LastSyncResourceVersion(); got != rv {
		// client-go's reflector changed how it takes a list's
		// resourceVersion: say so rather than hand handlers a wrong one.
		klog.Background().Error(nil, "The reflector given to watch error handlers did not take the informer's resourceVersion", "reflector", r.Name(), "resourceVersion", rv, "got", got)
	}
	return r.Reflector
}

var errNeverWatches = errors.New("the reflector given to watch error handlers does not watch")

// resourceVersionSource is the ListerWatcher of a handlerReflector: its list
// is empty, at the resourceVersion last stored; it never watches.
type resourceVersionSource struct {
	rv atomic.Pointer[string]
}

func (s *resourceVersionSource) List(metav1.ListOptions) (runtime.Object, error) {
	list := &metav1.List{}
	if rv := s.rv.Load(); rv != nil {
		list.ResourceVersion = *rv
	}
	return list, nil
}

func (s *resourceVersionSource) Watch(metav1.ListOptions) (watch.Interface, error) {
	return nil, errNeverWatches
}

// IsWatchListSemanticsUnSupported makes the reflector list rather than
// stream.
func (s *resourceVersionSource) IsWatchListSemanticsUnSupported() bool { return true }
