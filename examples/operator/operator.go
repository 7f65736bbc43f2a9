package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/leaninformer/leaninformer/pkg/informer"
	"github.com/leaninformer/leaninformer/pkg/shard"
)

const (
	// countConfigMap is the ConfigMap the operator keeps in every namespace.
	countConfigMap = "rolebinding-count"
	// countKey is the key of countConfigMap's data that holds the count.
	countKey = "count"
	// managedByLabel marks the ConfigMaps the operator writes.
	managedByLabel = "app.kubernetes.io/managed-by"
	operatorName   = "rolebinding-counter"
)

// options are the operator's settings, set from its flags.
type options struct {
	metricsBindAddress      string
	leaderElect             bool
	leaderElectionNamespace string
	// shardNamespace, when set, shards the operator: each replica keeps a
	// Lease there and counts the namespaces of its share.
	shardNamespace string
	shardIdentity  string // default: the host name
	// shardOptions, onReconcile and replicasInProcess are for tests: Lease
	// durations, a callback around every count, and several managers in one
	// process (whose controllers then share a name).
	shardOptions      []shard.Option
	onReconcile       func(namespace string, start, end time.Time)
	replicasInProcess bool
}

// newManager builds the operator: a manager on leaninformer's cache with one
// controller that counts the RoleBindings of every namespace. main and the
// test both run it.
func newManager(cfg *rest.Config, opts options) (manager.Manager, error) {
	newCache := informer.NewCache // the one-line change: leaninformer's informers
	var member *shard.Member
	if opts.shardNamespace != "" {
		if opts.leaderElect {
			// The controller would run on the leader alone, and the leader
			// counts only its share: the other shares would go uncounted.
			return nil, errors.New("--leader-elect with --shard-namespace: a sharded controller runs on every replica, each counting its share; leave leader election off")
		}
		var err error
		if member, err = newShardMember(cfg, opts); err != nil {
			return nil, err
		}
		// Every replica caches the RoleBindings and counts of its share of
		// the namespaces; the Namespaces themselves (a few small objects)
		// all replicas cache whole.
		newCache = informer.NewCacheWith(informer.WithShard(member, namespaceMetadata()))
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: newCache,
		Cache: cache.Options{
			// Cache the operator's own ConfigMaps, not every ConfigMap of
			// the cluster.
			ByObject: map[client.Object]cache.ByObject{
				&corev1.ConfigMap{}: {Field: fields.OneTermEqualSelector("metadata.name", countConfigMap)},
			},
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		Metrics:                 metricsserver.Options{BindAddress: opts.metricsBindAddress},
		HealthProbeBindAddress:  "0",
		Controller:              config.Controller{SkipNameValidation: &opts.replicasInProcess},
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        operatorName + ".leaninformer.io",
		LeaderElectionNamespace: opts.leaderElectionNamespace,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}

	var r reconcile.Reconciler = &counter{client: mgr.GetClient(), onReconcile: opts.onReconcile}
	if member != nil {
		if err := mgr.Add(member); err != nil {
			return nil, fmt.Errorf("adding the shard member: %w", err)
		}
		// A namespace is counted by the replica that serves the hash of its
		// name, the namespace key of its RoleBindings and its count.
		r = shard.Reconciler(member, shard.RequestName, r)
	}

	// Counting needs names only: Namespaces and RoleBindings are watched and
	// cached as metadata.
	b := ctrl.NewControllerManagedBy(mgr).
		Named(operatorName).
		For(&corev1.Namespace{}, builder.OnlyMetadata).
		Watches(&rbacv1.RoleBinding{}, handler.EnqueueRequestsFromMapFunc(requestForNamespace), builder.OnlyMetadata).
		// Someone editing or deleting the count gets it rewritten.
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(requestForNamespace))
	if member != nil {
		// Namespaces are not sharded: every replica sees every event, and
		// one that arrives while its namespace moves between replicas is
		// dropped by all of them. The replica taking a range over enqueues
		// its namespaces again.
		namespaces := &metav1.PartialObjectMetadataList{}
		namespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
		b = b.WatchesRawSource(shard.Handovers(member, mgr.GetCache(), namespaces, shard.RequestName))
	}
	err = b.Complete(r)
	if err != nil {
		return nil, fmt.Errorf("creating the controller: %w", err)
	}
	return mgr, nil
}

// newShardMember is the replica's member of the operator's shard group:
// objects are placed by their namespace.
func newShardMember(cfg *rest.Config, opts options) (*shard.Member, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Lease client: %w", err)
	}
	shardOpts := []shard.Option{shard.WithKey(shard.KeyNamespace)}
	if opts.shardIdentity != "" {
		shardOpts = append(shardOpts, shard.WithIdentity(opts.shardIdentity))
	}
	member, err := shard.New(client.CoordinationV1(), opts.shardNamespace, operatorName, append(shardOpts, opts.shardOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("creating the shard member: %w", err)
	}
	return member, nil
}

// requestForNamespace maps a namespaced object to the reconcile request of
// its namespace.
func requestForNamespace(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
}

// counter reconciles a namespace: it writes the number of RoleBindings in it
// to the namespace's rolebinding-count ConfigMap.
type counter struct {
	client      client.Client
	onReconcile func(namespace string, start, end time.Time) // nil: none
}

func (c *counter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if c.onReconcile != nil {
		start := time.Now()
		defer func() { c.onReconcile(req.Name, start, time.Now()) }()
	}
	ns := namespaceMetadata()
	if err := c.client.Get(ctx, types.NamespacedName{Name: req.Name}, ns); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ns.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // the ConfigMap goes with its namespace
	}

	bindings := &metav1.PartialObjectMetadataList{}
	bindings.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("RoleBindingList"))
	if err := c.client.List(ctx, bindings, client.InNamespace(req.Name)); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the RoleBindings of namespace %s: %w", req.Name, err)
	}
	count := strconv.Itoa(len(bindings.Items))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Name, Name: countConfigMap}}
	op, err := controllerutil.CreateOrUpdate(ctx, c.client, cm, func() error {
		metav1.SetMetaDataLabel(&cm.ObjectMeta, managedByLabel, operatorName)
		cm.Data = map[string]string{countKey: count}
		return nil
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("writing the count of namespace %s: %w", req.Name, err)
	}
	if op != controllerutil.OperationResultNone {
		log.FromContext(ctx).Info("Counted RoleBindings", "count", count, "configMap", op)
	}
	return reconcile.Result{}, nil
}

// namespaceMetadata returns an empty metadata-only Namespace.
func namespaceMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return m
}
