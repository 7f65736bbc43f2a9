package informer

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var _ crcache.NewCacheFunc = NewCache

// NewCache is a controller-runtime cache.NewCacheFunc whose informers are this
// package's. Use it in a manager's options:
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{NewCache: informer.NewCache})
//
// Every other cache option is kept as given; an Options.NewInformer the
// caller set wins. Without an Options.Mapper (a cache built outside a
// manager) it makes the RESTMapper controller-runtime would make, and
// labels the informers' metrics with the resources it names. It registers metrics.Default on controller-runtime's
// metrics registry, so the manager's /metrics endpoint shows the informers'
// metrics.
func NewCache(cfg *rest.Config, opts crcache.Options) (crcache.Cache, error) {
	return NewCacheWith()(cfg, opts)
}

// NewCacheWith is NewCache with this package's options (list strategy, page
// size, backoff, relist reuse, metrics) applied to every informer of the
// cache. Invalid options make the returned function fail (so a manager
// fails to start) with the error of ValidateOptions.
//
// With WithEncodedStore, the cache also answers a List with a label
// selector from the store without decoding the objects that do not match
// (controller-runtime's reader lists, and so would decode, every object of
// the type before it filters): cluster-wide or in one namespace, with or
// without Limit, typed, unstructured or metadata-only, it returns what
// controller-runtime's reader returns (the same items, their GVK as the
// reader sets it, Limit, the "continue-not-supported" token). A List with a
// field selector or a continue token, of a type whose informer is not this
// package's or has not synced, of a namespaced type in a multi-namespace
// cache (DefaultNamespaces, ByObject Namespaces; a cluster-scoped type is in
// one cluster-wide informer there, which answers), or of any type with
// ReaderFailOnMissingInformer set,
// goes to controller-runtime's reader unchanged; one of a type whose
// informer cannot be made (a kind the RESTMapper does not know) fails with
// the error controller-runtime's would return. Only typed and
// metadata-only objects have labels read from their encodings; unstructured
// ones are decoded to be matched, as before.
//
// With WithEncodedStore, a Go type the scheme registers under several kinds
// reads with the kind asked for, as other types do (see kindedCache).
func NewCacheWith(options ...Option) crcache.NewCacheFunc {
	return func(cfg *rest.Config, opts crcache.Options) (crcache.Cache, error) {
		s := opts.Scheme
		if s == nil {
			s = defaultScheme
		}
		// The manager's scheme knows its CRDs' kinds, for WithShard's
		// exclusions; it comes last so that it is the one used.
		options := append(slices.Clone(options), withScheme(s))
		c, err := newConfig(options)
		if err != nil {
			return nil, fmt.Errorf("informer.NewCacheWith: invalid informer options: %w", err)
		}
		if c.resource != nil {
			// It would label every informer of the cache alike, and
			// their gauges would add up in one series.
			return nil, fmt.Errorf("informer.NewCacheWith: WithResource(%s) labels one informer's metrics; the cache labels each of its informers with its own resource", c.resource.String())
		}
		if m := c.metrics; m != nil {
			if err := m.Register(crmetrics.Registry); err != nil {
				return nil, fmt.Errorf("registering leaninformer metrics with controller-runtime: %w", err)
			}
		}
		ours := opts.NewInformer == nil
		var informers *informerRegistry
		if ours {
			informers = newInformerRegistry()
			// Only where the informers are ours: a NewInformer of the
			// caller's keeps controller-runtime's DeepCopy on reads.
			opts = c.cacheOptions(opts)
			if opts, err = withMapper(cfg, opts); err != nil {
				return nil, err
			}
			mapper := opts.Mapper
			opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
				// controller-runtime knows the kinds of its scheme and,
				// through the RESTMapper it shares with us (withMapper),
				// their resources, CRDs included; label the metrics with
				// them.
				informerOpts := append([]Option{WithResource(resourceOf(obj, s, mapper))}, options...)
				gvk, gvkErr := apiutil.GVKForObject(obj, s)
				if gvkErr == nil {
					informerOpts = append(informerOpts, withReadKind(gvk))
				}
				inf := NewSharedIndexInformerWithOptions(lw, obj,
					toolscache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers},
					informerOpts...)
				if gvkErr == nil {
					informers.add(gvk, obj, inf)
				}
				return inf
			}
		}
		cc, err := crcache.New(cfg, opts)
		if err != nil || !c.encoded {
			return cc, err
		}
		if ours {
			cc = newKindedCache(cc, s, opts)
		}
		return newLabelListCache(cc, s, opts, informers)
	}
}

// withMapper returns opts with a RESTMapper: the caller's (a manager sets
// its own), else one made as controller-runtime's cache.New makes its own
// when it has none, which it then uses instead. The informers' metrics are
// labelled with the resources this mapper names, and controller-runtime
// maps each kind with it before it builds the informer: the labels cost no
// discovery request of their own, and a kind whose plural is not the usual
// one (Endpoints, a CRD's) gets the server's.
func withMapper(cfg *rest.Config, opts crcache.Options) (crcache.Options, error) {
	if opts.Mapper != nil {
		return opts, nil
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if opts.HTTPClient == nil {
		var err error
		if opts.HTTPClient, err = rest.HTTPClientFor(cfg); err != nil {
			return opts, fmt.Errorf("could not create HTTP client from config: %w", err)
		}
	}
	var err error
	if opts.Mapper, err = apiutil.NewDynamicRESTMapper(cfg, opts.HTTPClient); err != nil {
		return opts, fmt.Errorf("could not create RESTMapper from config: %w", err)
	}
	return opts, nil
}

// cacheOptions returns the cache options for informers of c: with the
// encoded store, controller-runtime's DeepCopy on reads is off unless opts
// set it (NewCacheWith asks only when it builds the informers itself).
// Every read of an encoded store is a fresh decode that the caller owns, so
// the DeepCopy would be a second copy for nothing; ByObject entries
// that set UnsafeDisableDeepCopy keep their setting.
func (c *config) cacheOptions(opts crcache.Options) crcache.Options {
	if c.encoded && opts.DefaultUnsafeDisableDeepCopy == nil {
		opts.DefaultUnsafeDisableDeepCopy = ptr.To(true)
	}
	return opts
}
