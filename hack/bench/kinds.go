package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
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

// The bench objects' namespaces, label and field manager.
const (
	benchLabel      = "app.kubernetes.io/managed-by"
	benchLabelValue = "leaninformer-bench"
	benchNamespaces = 10
	nsPrefix        = "leaninformer-bench-"
	fieldManager    = "leaninformer-bench"
	// revisionAnnotation is on every bench object, with a fixed-width
	// value, so that a churn modifies objects without resizing them.
	revisionAnnotation = "example.com/revision"
)

func revision(rev int) string { return fmt.Sprintf("%06d", rev%1_000_000) }

func nsName(i int) string { return nsPrefix + fmt.Sprintf("%02d", i%benchNamespaces) }

func indexedName(prefix string, i int) string { return fmt.Sprintf("%s%07d", prefix, i) }

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
	return err == nil && m.GetLabels()[benchLabel] == benchLabelValue
}

// RoleBindings: 3 to 5 subjects of all three kinds, labels and an
// annotation, as RoleBindings of tenants and teams have.
var roleBindings = objectKind{
	resource:  "rolebindings",
	title:     "RoleBindings",
	example:   func() runtime.Object { return &rbacv1.RoleBinding{} },
	namespace: nsName,
	name:      rbName,
	create: func(ctx context.Context, cs kubernetes.Interface, i int) error {
		_, err := cs.RbacV1().RoleBindings(nsName(i)).Create(ctx, roleBinding(i), metav1.CreateOptions{FieldManager: fieldManager})
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

func rbName(i int) string { return indexedName("rb-", i) }

func roleBinding(i int) *rbacv1.RoleBinding {
	team := fmt.Sprintf("team-%03d", i%97)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:      rbName(i),
			Namespace: nsName(i),
			Labels: map[string]string{
				benchLabel:               benchLabelValue,
				"app.kubernetes.io/name": team,
			},
			Annotations: map[string]string{"example.com/owner": team + "@example.com", revisionAnnotation: revision(0)},
		},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: []string{"view", "edit", "admin"}[i%3]},
	}
	for s := range 3 + i%3 {
		switch s % 3 {
		case 0:
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("user-%06d@example.com", i*7+s)})
		case 1:
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "group-" + team})
		case 2:
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: fmt.Sprintf("sa-%05d", i%5000), Namespace: nsName(i)})
		}
	}
	return rb
}

// ConfigMaps: an application's settings, a few short keys and a config
// file of its own, labelled by application (500 of them).
var configMaps = objectKind{
	resource:  "configmaps",
	title:     "ConfigMaps",
	example:   func() runtime.Object { return &corev1.ConfigMap{} },
	namespace: nsName,
	name:      cmName,
	create: func(ctx context.Context, cs kubernetes.Interface, i int) error {
		_, err := cs.CoreV1().ConfigMaps(nsName(i)).Create(ctx, configMap(i), metav1.CreateOptions{FieldManager: fieldManager})
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

func cmName(i int) string { return indexedName("cm-", i) }

func configMap(i int) *corev1.ConfigMap {
	app := fmt.Sprintf("app-%04d", i%500)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      cmName(i),
			Namespace: nsName(i),
			Labels: map[string]string{
				benchLabel:                    benchLabelValue,
				"app.kubernetes.io/name":      app,
				"app.kubernetes.io/component": "config",
			},
			Annotations: map[string]string{revisionAnnotation: revision(0)},
		},
		Data: map[string]string{
			"LOG_LEVEL": []string{"info", "debug", "warn"}[i%3],
			"HTTP_PORT": "8080",
			"FEATURES":  []string{"checkout,search", "search", "checkout,search,recommendations"}[i%3],
			"application.yaml": fmt.Sprintf("server:\n  port: 8080\n  name: %s\ndatabase:\n  host: postgres.%s.svc.cluster.local\n  name: db_%07d\n  pool: %d\nlogging:\n  level: info\n",
				app, nsName(i), i, 5+i%20),
		},
	}
}

// Pods: those of Deployments of podsPerApp replicas, as the ReplicaSet
// controller creates them (owner reference, template labels, the service
// account token volume admission adds), bound to one of benchNodes nodes,
// with the status their kubelet reports once they run.
var pods = objectKind{
	resource:  "pods",
	title:     "Pods",
	example:   func() runtime.Object { return &corev1.Pod{} },
	namespace: podNamespace,
	name:      podName,
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

const (
	podsPerApp = 10
	benchNodes = 50
)

// podApp returns the Deployment and pod-template-hash of the i-th Pod.
func podApp(i int) (app, hash string) {
	d := i / podsPerApp
	return fmt.Sprintf("app-%04d", d), strconv.FormatUint(uint64(0x5d4b9c8f6)+uint64(d)*7919, 36)
}

func podNamespace(i int) string { return nsName(i / podsPerApp) }

func podName(i int) string {
	app, hash := podApp(i)
	return indexedName(app+"-"+hash+"-", i)
}

func pod(i int) *corev1.Pod {
	d := i / podsPerApp
	app, hash := podApp(i)
	node := i % benchNodes
	image := fmt.Sprintf("registry.example.com/team-%02d/%s:1.%d.0", d%40, app, d%7)
	started := metav1.NewTime(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC).Add(time.Duration(d) * time.Minute))
	tokenVolume := "kube-api-access-" + strconv.FormatInt(int64(36*36*36*36+i*7), 36)[:5]
	mountPath := "/var/run/secrets/kubernetes.io/serviceaccount"
	podIP := fmt.Sprintf("10.244.%d.%d", i/250, 2+i%250)
	hostIP := fmt.Sprintf("10.0.0.%d", 10+node)
	conditions := func(types ...corev1.PodConditionType) []corev1.PodCondition {
		var cs []corev1.PodCondition
		for _, t := range types {
			cs = append(cs, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: started})
		}
		return cs
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:         podName(i),
			GenerateName: app + "-" + hash + "-",
			Namespace:    podNamespace(i),
			Labels: map[string]string{
				benchLabel:                   benchLabelValue,
				"app.kubernetes.io/name":     app,
				"app.kubernetes.io/instance": app + "-prod",
				"pod-template-hash":          hash,
			},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080", revisionAnnotation: revision(0)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash,
				UID:        types.UID(fmt.Sprintf("5e1f0000-0000-4000-8000-%012d", d)),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "app",
				Image: image,
				Args:  []string{"--listen=:8080", "--log-format=json"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "LOG_LEVEL", Value: "info"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
					PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
				},
				VolumeMounts:             []corev1.VolumeMount{{Name: tokenVolume, MountPath: mountPath, ReadOnly: true}},
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy:          corev1.PullIfNotPresent,
			}},
			Volumes: []corev1.Volume{{Name: tokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				},
				DefaultMode: ptr.To[int32](0o644),
			}}}},
			NodeName:           fmt.Sprintf("node-%03d", node),
			ServiceAccountName: "default",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: conditions("PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled),
			HostIP:     hostIP,
			HostIPs:    []corev1.HostIP{{IP: hostIP}},
			PodIP:      podIP,
			PodIPs:     []corev1.PodIP{{IP: podIP}},
			StartTime:  &started,
			QOSClass:   corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name:         "app",
				State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
				Ready:        true,
				Started:      ptr.To(true),
				Image:        image,
				ImageID:      fmt.Sprintf("registry.example.com/team-%02d/%s@sha256:%064x", d%40, app, uint64(d)*0x9e3779b97f4a7c15),
				ContainerID:  fmt.Sprintf("containerd://%064x", uint64(i)*0x9e3779b97f4a7c15+1),
				VolumeMounts: []corev1.VolumeMountStatus{{Name: tokenVolume, MountPath: mountPath, ReadOnly: true, RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyDisabled)}},
			}},
		},
	}
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
