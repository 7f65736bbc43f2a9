package informer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// SyncStatus says whether an informer has synced and, while it has not,
// what stands in the way.
type SyncStatus struct {
	// Synced: the store has been filled by a complete list.
	Synced bool
	// Running: Run has been called and has not returned.
	Running bool
	// Since is when Run started.
	Since time.Time
	// LastError is the last failure of a list or watch since the last
	// complete list, nil if none.
	LastError error
	// LastErrorTime is when LastError happened.
	LastErrorTime time.Time
	// Failures counts the failures since the last complete list.
	Failures int
	// Reason explains LastError in a few words, e.g. "forbidden by RBAC".
	Reason string
}

// String summarises the status for a log line or an error message.
func (st SyncStatus) String() string {
	switch {
	case st.Synced:
		return "synced"
	case !st.Running:
		return "not running"
	case st.LastError == nil:
		return fmt.Sprintf("listing for %s, no error so far", time.Since(st.Since).Round(time.Second))
	default:
		return fmt.Sprintf("not synced after %s: %s (%d failures, last %s ago: %v)",
			time.Since(st.Since).Round(time.Second), st.Reason, st.Failures,
			time.Since(st.LastErrorTime).Round(time.Second), st.LastError)
	}
}

// SyncStatus reports whether the informer has synced and, if not, why: the
// last list or watch error, explained. A controller stuck waiting for caches
// can log it instead of a bare "timed out".
func (s *SharedIndexInformer) SyncStatus() SyncStatus {
	s.diagMu.Lock()
	defer s.diagMu.Unlock()
	st := s.diag
	st.Synced = s.HasSynced()
	return st
}

func (s *SharedIndexInformer) diagStart(now time.Time) {
	s.diagMu.Lock()
	defer s.diagMu.Unlock()
	s.diag.Running, s.diag.Since = true, now
}

func (s *SharedIndexInformer) diagStop() {
	s.diagMu.Lock()
	defer s.diagMu.Unlock()
	s.diag.Running = false
}

func (s *SharedIndexInformer) diagError(err error) {
	s.diagMu.Lock()
	defer s.diagMu.Unlock()
	s.diag.LastError, s.diag.LastErrorTime = err, time.Now()
	s.diag.Failures++
	s.diag.Reason = explain(err)
}

// diagSynced forgets the errors a complete list has overcome.
func (s *SharedIndexInformer) diagSynced() {
	s.diagMu.Lock()
	defer s.diagMu.Unlock()
	s.diag.LastError, s.diag.LastErrorTime, s.diag.Failures, s.diag.Reason = nil, time.Time{}, 0, ""
}

// explain names the usual reasons an informer cannot sync.
func explain(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden by RBAC: the client may not list or watch this resource"
	case apierrors.IsUnauthorized(err):
		return "unauthorized: the client's credentials are not accepted"
	case apierrors.IsNotFound(err):
		return "not found: the server does not serve this resource (is its CRD installed?)"
	case apierrors.IsTooManyRequests(err):
		return "throttled by the API server (429)"
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return "resourceVersion expired (410), relisting"
	case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err):
		return "API server error"
	case utilnet.IsConnectionRefused(err):
		return "API server unreachable (connection refused)"
	case errors.Is(err, listerwatcher.ErrNoEndBookmark):
		return "the streaming list never ended (bookmarks turned off?)"
	case apierrors.IsBadRequest(err) || apierrors.IsInvalid(err):
		return "request rejected by the API server"
	default:
		return "list or watch failed"
	}
}

// syncWatchdog logs, every interval until the informer has synced, why it
// has not.
func (s *SharedIndexInformer) syncWatchdog(ctx context.Context, logger klog.Logger, interval time.Duration) {
	if interval <= 0 {
		return
	}
	t := s.cfg.clock.NewTicker(interval)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.synced:
			if warned {
				logger.Info("Informer synced", "type", s.objectDescription, "after", time.Since(s.SyncStatus().Since).Round(time.Millisecond))
			}
			return
		case <-t.C():
			st := s.SyncStatus()
			if st.Synced {
				continue
			}
			warned = true
			logger.Info("Informer has not synced yet", "type", s.objectDescription, "status", st.String(),
				"reason", st.Reason, "failures", st.Failures, "lastError", st.LastError)
		}
	}
}

// pipelineObserver turns the pipeline's activity into metrics.
type pipelineObserver struct {
	listerwatcher.NoopObserver
	rec *metrics.Recorder
}

var _ listerwatcher.Observer = pipelineObserver{}

func (o pipelineObserver) ListRequest(_ metav1.ListOptions, _ int, _ time.Duration, err error) {
	o.rec.ListRequest(err)
}

func (o pipelineObserver) WatchStarted(metav1.ListOptions) { o.rec.WatchStarted() }

func (o pipelineObserver) WatchEnded(d time.Duration, events int, err error) {
	if events == 0 && (d < time.Second || errors.Is(err, listerwatcher.ErrVeryShortWatch)) {
		o.rec.ShortWatch()
	}
}

func (o pipelineObserver) StrategyFallback(error)       { o.rec.Fallback() }
func (o pipelineObserver) Backoff(time.Duration, error) { o.rec.Backoff() }

// clientGoMetrics feeds client-go's InformerMetricsProvider, so dashboards
// built on client-go's informer metrics keep working: the store's
// resourceVersion, the notifications waiting for handlers (client-go's
// queued items) and the time to apply each event (its processing latency).
type clientGoMetrics struct {
	resourceVersion toolscache.GaugeMetric
	queued          toolscache.GaugeMetric
	latency         toolscache.HistogramMetric

	// probe is a client-go store whose Bookmark sets the resourceVersion
	// gauge of client-go's global provider: the one client-go uses when
	// none is given, and which it offers no other way to reach.
	probe toolscache.Store
	mu    sync.Mutex
}

func newClientGoMetrics(id toolscache.InformerNameAndResource, provider toolscache.InformerMetricsProvider) *clientGoMetrics {
	if !id.Reserved() {
		return nil
	}
	if provider == nil {
		return &clientGoMetrics{probe: toolscache.NewStore(toolscache.MetaNamespaceKeyFunc, toolscache.WithStoreMetrics(id, nil))}
	}
	return &clientGoMetrics{
		resourceVersion: provider.NewStoreResourceVersionMetric(id),
		queued:          provider.NewQueuedItemMetric(id),
		latency:         provider.NewProcessingLatencyMetric(id),
	}
}

func (m *clientGoMetrics) setResourceVersion(rv string) {
	if m == nil {
		return
	}
	if m.probe != nil {
		m.mu.Lock()
		m.probe.Bookmark(rv)
		m.mu.Unlock()
		return
	}
	if v, ok := metrics.ParseResourceVersion(rv); ok {
		m.resourceVersion.Set(v)
	}
}

func (m *clientGoMetrics) processed(d time.Duration, queued int) {
	if m == nil || m.probe != nil {
		return
	}
	m.latency.Observe(d.Seconds())
	m.queued.Set(float64(queued))
}

// resourceOf guesses the group, version and resource of an informer's
// objects for metric labels: from the object's kind if set (unstructured and
// metadata-only objects), else from client-go's scheme; the resource name is
// the usual plural of the kind.
func resourceOf(obj runtime.Object, s *runtime.Scheme) schema.GroupVersionResource {
	if obj == nil {
		return schema.GroupVersionResource{Resource: "unknown"}
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" && s != nil {
		if kinds, _, err := s.ObjectKinds(obj); err == nil && len(kinds) > 0 {
			gvk = kinds[0]
		}
	}
	if gvk.Kind == "" {
		gvk.Kind = reflect.Indirect(reflect.ValueOf(obj)).Type().Name()
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	plural.Resource = strings.ToLower(plural.Resource)
	return plural
}

// defaultScheme is the scheme resourceOf uses for typed objects.
var defaultScheme = scheme.Scheme
