package main

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/leaninformer/leaninformer/pkg/informer"
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
}

// newManager builds the operator: a manager on leaninformer's cache with one
// controller that counts the RoleBindings of every namespace. main and the
// test both run it.
func newManager(cfg *rest.Config, opts options) (manager.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: informer.NewCache, // the one-line change: leaninformer's informers
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
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        operatorName + ".leaninformer.io",
		LeaderElectionNamespace: opts.leaderElectionNamespace,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}

	// Counting needs names only: Namespaces and RoleBindings are watched and
	// cached as metadata.
	err = ctrl.NewControllerManagedBy(mgr).
		Named(operatorName).
		For(&corev1.Namespace{}, builder.OnlyMetadata).
		Watches(&rbacv1.RoleBinding{}, handler.EnqueueRequestsFromMapFunc(requestForNamespace), builder.OnlyMetadata).
		// Someone editing or deleting the count gets it rewritten.
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(requestForNamespace)).
		Complete(&counter{client: mgr.GetClient()})
	if err != nil {
		return nil, fmt.Errorf("creating the controller: %w", err)
	}
	return mgr, nil
}

// requestForNamespace maps a namespaced object to the reconcile request of
// its namespace.
func requestForNamespace(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
}

// counter reconciles a namespace: it writes the number of RoleBindings in it
// to the namespace's rolebinding-count ConfigMap.
type counter struct {
	client client.Client
}

func (c *counter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := metadataOf("Namespace")
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

// metadataOf returns an empty metadata-only object of a core kind.
func metadataOf(kind string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return m
}
