package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/leaninformer/leaninformer/internal/benchobjects"
)

// objectKind is the kind of object a run populates and measures (--kind).
// Bench objects are named by index (the last 7 digits of the name) and
// labelled, so that a later run against the same cluster finds them.
type objectKind struct {
	// resource is the --kind value and the API resource.
	resource string
	// title names the objects in reports.
	title   string
	example func() runtime.Object
	// namespace and name of the i-th bench object.
	namespace, name func(i int) string
	// create creates the i-th bench object (and, for Pods, sets its status
	// as a kubelet would); AlreadyExists is returned as is.
	create func(ctx context.Context, cs kubernetes.Interface, i int) error
	delete func(ctx context.Context, cs kubernetes.Interface, namespace, name string) error
	// patch applies a JSON merge patch to an object.
	patch func(ctx context.Context, cs kubernetes.Interface, namespace, name string, data []byte) error
	// list lists one page in all namespaces, as the typed list.
	list  func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (runtime.Object, error)
	watch func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (watch.Interface, error)
}

// The bench objects' field manager and revision (the objects themselves,
// their namespaces and label: package benchobjects).
const (
	fieldManager = "leaninformer-bench"
	// revisionAnnotation is on every bench object, with a fixed-width
	// value, so that a churn modifies objects without resizing them.
	revisionAnnotation = "example.com/revision"
)

func revision(rev int) string { return fmt.Sprintf("%06d", rev%1_000_000) }

var kinds = []objectKind{roleBindings, configMaps, pods}

func kindNames() []string {
	var names []string
	for _, k := range kinds {
		names = append(names, k.resource)
	}
	return names
}

func findKind(resource string) (objectKind, error) {
	for _, k := range kinds {
		if k.resource == resource {
			return k, nil
		}
	}
	return objectKind{}, fmt.Errorf("unknown --kind %q (known: %s)", resource, strings.Join(kindNames(), ", "))
}

// index returns the index of the bench object namespace/name, or -1 if no
// bench object has that name.
func (k objectKind) index(namespace, name string) int {
	if len(name) < 7 {
		return -1
	}
	i, err := strconv.Atoi(name[len(name)-7:])
	if err != nil || i < 0 || k.name(i) != name || k.namespace(i) != namespace {
		return -1
	}
	return i
}

// listWatch is the ListerWatcher client-go's generated informers build for
// the kind in all namespaces.
func (k objectKind) listWatch(cs kubernetes.Interface) toolscache.ListerWatcher {
	return toolscache.ToListWatcherWithWatchListSemantics(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return k.list(ctx, cs, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return k.watch(ctx, cs, opts)
		},
	}, cs)
}

// isBench reports whether o is one of the bench objects (of any kind).
func isBench(o any) bool {
	m, err := meta.Accessor(o)
	return err == nil && m.GetLabels()[benchobjects.Label] == benchobjects.LabelValue
}

// RoleBindings: 3 to 5 subjects of all three kinds, labels and an
// annotation, as RoleBindings of tenants and teams have.
var roleBindings = objectKind{
	resource:  "rolebindings",
	title:     "RoleBindings",
	example:   func() runtime.Object { return &rbacv1.RoleBinding{} },
	namespace: benchobjects.Namespace,
	name:      benchobjects.RoleBindingName,
	create: func(ctx context.Context, cs kubernetes.Interface, i int) error {
		_, err := cs.RbacV1().RoleBindings(benchobjects.Namespace(i)).Create(ctx, roleBinding(i), metav1.CreateOptions{FieldManager: fieldManager})
		return err
	},
	delete: func(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
		return cs.RbacV1().RoleBindings(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	},
	patch: func(ctx context.Context, cs kubernetes.Interface, namespace, name string, data []byte) error {
		_, err := cs.RbacV1().RoleBindings(namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: fieldManager})
		return err
	},
	list: func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (runtime.Object, error) {
		return cs.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, opts)
	},
	watch: func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (watch.Interface, error) {
		return cs.RbacV1().RoleBindings(metav1.NamespaceAll).Watch(ctx, opts)
	},
}

// ConfigMaps: an application's settings, a few short keys and a config
// file of its own, labelled by application (500 of them).
var configMaps = objectKind{
	resource:  "configmaps",
	title:     "ConfigMaps",
	example:   func() runtime.Object { return &corev1.ConfigMap{} },
	namespace: benchobjects.Namespace,
	name:      benchobjects.ConfigMapName,
	create: func(ctx context.Context, cs kubernetes.Interface, i int) error {
		_, err := cs.CoreV1().ConfigMaps(benchobjects.Namespace(i)).Create(ctx, configMap(i), metav1.CreateOptions{FieldManager: fieldManager})
		return err
	},
	delete: func(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
		return cs.CoreV1().ConfigMaps(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	},
	patch: func(ctx context.Context, cs kubernetes.Interface, namespace, name string, data []byte) error {
		_, err := cs.CoreV1().ConfigMaps(namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: fieldManager})
		return err
	},
	list: func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, opts)
	},
	watch: func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (watch.Interface, error) {
		return cs.CoreV1().ConfigMaps(metav1.NamespaceAll).Watch(ctx, opts)
	},
}

// Pods: those of Deployments, as the ReplicaSet controller creates them,
// with the status their kubelet reports once they run (benchobjects.Pod).
var pods = objectKind{
	resource:  "pods",
	title:     "Pods",
	example:   func() runtime.Object { return &corev1.Pod{} },
	namespace: benchobjects.PodNamespace,
	name:      benchobjects.PodName,
	create: func(ctx context.Context, cs kubernetes.Interface, i int) error {
		p := pod(i)
		status := p.Status
		created, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
		if err != nil {
			return err
		}
		created.Status = status
		_, err = cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kubelet"})
		return err
	},
	delete: func(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
		return cs.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	},
	patch: func(ctx context.Context, cs kubernetes.Interface, namespace, name string, data []byte) error {
		_, err := cs.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: "kube-controller-manager"})
		return err
	},
	list: func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
	},
	watch: func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (watch.Interface, error) {
		return cs.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, opts)
	},
}

// roleBinding, configMap and pod are the i-th bench objects as hack/bench
// creates them: package benchobjects', with the revision annotation the
// churn rows rewrite, at revision 0.
func roleBinding(i int) *rbacv1.RoleBinding { return withRevision(benchobjects.RoleBinding(i)) }
func configMap(i int) *corev1.ConfigMap     { return withRevision(benchobjects.ConfigMap(i)) }
func pod(i int) *corev1.Pod                 { return withRevision(benchobjects.Pod(i)) }

func withRevision[T metav1.Object](o T) T {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[revisionAnnotation] = revision(0)
	o.SetAnnotations(a)
	return o
}

// listPage lists one page and returns its items, each copied out of the
// page so that the page's array can go, and the continue token.
func (k objectKind) listPage(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (items []runtime.Object, cont string, err error) {
	l, err := k.list(ctx, cs, opts)
	if err != nil {
		return nil, "", fmt.Errorf("list %s: %w", k.title, err)
	}
	if items, err = meta.ExtractListWithAlloc(l); err != nil {
		return nil, "", err
	}
	lm, err := meta.ListAccessor(l)
	if err != nil {
		return nil, "", err
	}
	return items, lm.GetContinue(), nil
}
