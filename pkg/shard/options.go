package shard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/leaninformer/leaninformer/pkg/metrics"
)

// The defaults are client-go leader election's: a member that cannot renew
// its Lease stops serving after 10 s, and the others take its range over
// 15 s after its last renewal (plus their own watch delay).
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRenewInterval = 2 * time.Second
	DefaultStopTimeout   = 30 * time.Second
)

// MaxBuckets bounds WithBuckets. A member's range is a union of its
// buckets, which the assignment scatters: with two members each range has
// about a quarter as many spans as there are buckets, and the shard
// selector sent with every LIST and WATCH has about 80 characters per span.
// At 2048 buckets that is about 45,000 characters, well within the API
// server's 100,000 (cel-go's bound on an expression); at 8192 the server
// would refuse the selectors, and the informers would never sync.
const MaxBuckets = 2048

// Option configures a Member.
type Option func(*config)

type config struct {
	name, namespace string
	identity        string
	identitySet     bool   // WithIdentity was given
	leaseName       string // name-identity: the member's name in the assignment
	holder          string // identity_instance: tells processes of one identity apart
	leaseDuration   time.Duration
	renewDeadline   time.Duration
	renewInterval   time.Duration
	stopTimeout     time.Duration
	buckets         int
	key             Key
	clock           clock.WithTickerAndDelayedExecution
	logger          logr.Logger
	metrics         *metrics.Metrics
	rec             *metrics.MemberRecorder
}

// WithIdentity names this replica among the members (default: the host
// name, which in a pod is the pod's name). It must be unique among running
// replicas and, joined to the controller's name with "-", be a valid Lease
// name that no member of another controller in the namespace has (Start
// returns an error if one does). A stable identity (a StatefulSet's pod
// names) keeps a restarted replica's range where it was.
// An empty id is an error: leave the option out for the host name.
func WithIdentity(id string) Option {
	return func(c *config) { c.identity, c.identitySet = id, true }
}

// WithLeaseDuration sets how long after its last renewal a member's Lease is
// dead to the others (default 15 s; written to the Lease in whole seconds,
// rounded up). A range is handed over about this long after its member
// died abruptly.
func WithLeaseDuration(d time.Duration) Option { return func(c *config) { c.leaseDuration = d } }

// WithRenewDeadline sets how long after its last successful renewal a
// member stops serving (default 10 s): shorter than the lease duration, so
// that it stops before anyone can take its range. Reconciles in flight are
// cancelled then and must end within the difference.
func WithRenewDeadline(d time.Duration) Option { return func(c *config) { c.renewDeadline = d } }

// WithRenewInterval sets how often a member renews its Lease (default 2 s).
func WithRenewInterval(d time.Duration) Option { return func(c *config) { c.renewInterval = d } }

// WithStopTimeout bounds a clean stop: how long a stopping member waits for
// its work in flight to end and its Lease to be deleted (default 30 s,
// controller-runtime's graceful shutdown timeout). After it the Lease is
// left to expire.
func WithStopTimeout(d time.Duration) Option { return func(c *config) { c.stopTimeout = d } }

// WithBuckets sets how many equal buckets the hash space is cut into for
// assignment (default DefaultBuckets). More buckets split more evenly among
// many members but give longer selectors (hence MaxBuckets). Every member of a group must use
// the same count.
func WithBuckets(n int) Option { return func(c *config) { c.buckets = n } }

// WithKey sets the field whose hash places objects (default KeyUID). Every
// member of a group must use the same key.
func WithKey(k Key) Option { return func(c *config) { c.key = k } }

// WithClock replaces the real clock, for tests. Members judge Leases only
// by their own clock, so a fake clock steps expiry deterministically even
// against a real API server.
func WithClock(clk clock.WithTickerAndDelayedExecution) Option {
	return func(c *config) { c.clock = clk }
}

// WithMetrics sets the metrics the member records into (default
// metrics.Default; nil records none), labelled by the controller's name.
func WithMetrics(m *metrics.Metrics) Option { return func(c *config) { c.metrics = m } }

// WithLogger sets the logger (default klog's, named "shard").
func WithLogger(l logr.Logger) Option { return func(c *config) { c.logger = l } }

func newConfig(namespace, name string, opts []Option) (*config, error) {
	c := &config{
		name: name, namespace: namespace,
		leaseDuration: DefaultLeaseDuration, renewDeadline: DefaultRenewDeadline,
		renewInterval: DefaultRenewInterval, stopTimeout: DefaultStopTimeout,
		buckets: DefaultBuckets, key: KeyUID,
		clock: clock.RealClock{}, logger: klog.Background().WithName("shard"), metrics: metrics.Default,
	}
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("shard: option %d is nil", i)
		}
		opt(c)
	}
	if c.identitySet && c.identity == "" {
		return nil, errors.New(`shard: WithIdentity(""): the identity is empty (leave the option out for the host name)`)
	}
	if c.identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("shard: no WithIdentity and no host name to default it to: %w", err)
		}
		c.identity = strings.ToLower(host)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	instance := make([]byte, 4)
	if _, err := rand.Read(instance); err != nil {
		return nil, fmt.Errorf("shard: generating this process's holder identity: %w", err)
	}
	c.leaseName = name + "-" + c.identity
	c.holder = c.identity + "_" + hex.EncodeToString(instance)
	c.logger = c.logger.WithValues("controller", name, "member", c.leaseName)
	c.rec = c.metrics.Member(name)
	return c, nil
}

func (c *config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("shard: "+format, args...)) }
	if msgs := validation.IsDNS1123Label(c.namespace); len(msgs) > 0 {
		bad("namespace %q: %s", c.namespace, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsValidLabelValue(c.name); c.name == "" || len(msgs) > 0 {
		bad("name %q must be a non-empty label value: %s", c.name, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(c.name + "-" + c.identity); len(msgs) > 0 {
		bad("WithIdentity(%q): the Lease name %q is invalid: %s", c.identity, c.name+"-"+c.identity, strings.Join(msgs, "; "))
	}
	if c.leaseDuration < time.Second {
		bad("WithLeaseDuration(%v): must be at least 1s (Leases count whole seconds)", c.leaseDuration)
	}
	if c.renewDeadline <= 0 || c.renewDeadline >= c.leaseDuration {
		bad("WithRenewDeadline(%v): must be positive and shorter than the lease duration (%v)", c.renewDeadline, c.leaseDuration)
	}
	if c.renewInterval <= 0 || c.renewInterval >= c.renewDeadline {
		bad("WithRenewInterval(%v): must be positive and shorter than the renew deadline (%v)", c.renewInterval, c.renewDeadline)
	}
	if c.stopTimeout <= 0 {
		bad("WithStopTimeout(%v): must be positive", c.stopTimeout)
	}
	if c.buckets < 1 || c.buckets > MaxBuckets {
		bad("WithBuckets(%d): must be between 1 and %d", c.buckets, MaxBuckets)
	}
	if err := c.key.validate(); err != nil {
		bad("WithKey: %v", err)
	}
	if c.clock == nil {
		bad("WithClock(nil): a clock is required")
	}
	return errors.Join(errs...)
}

// isNil reports whether v is nil, or an interface holding a nil pointer,
// map, slice, func or channel: an argument that fails only when used.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
