// Package benchobjects makes the objects hack/bench populates its API
// server with, RoleBindings, ConfigMaps and Pods, as a client sends them:
// what varies from one to the next varies as in real clusters (names,
// teams, subjects, applications, images, IPs, container IDs). The i-th
// object of a kind is always the same; the API server adds UID,
// resourceVersion, creationTimestamp and managedFields.
//
// hack/bench creates them (adding the revision annotation its churn
// rewrites); internal/testobjects builds the package benchmarks'
// populations from them, with the managedFields a kube-apiserver returned.
package benchobjects

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Every object carries Label=LabelValue and lives in one of Namespaces
// namespaces named NamespacePrefix and two digits.
const (
	Label           = "app.kubernetes.io/managed-by"
	LabelValue      = "leaninformer-bench"
	Namespaces      = 10
	NamespacePrefix = "leaninformer-bench-"
)

// Namespace is the namespace of the i-th RoleBinding or ConfigMap.
func Namespace(i int) string { return NamespacePrefix + fmt.Sprintf("%02d", i%Namespaces) }

// indexedName ends in i as 7 digits: the last 7 characters of every
// object's name give its index.
func indexedName(prefix string, i int) string { return fmt.Sprintf("%s%07d", prefix, i) }

// RoleBindingName is the name of the i-th RoleBinding.
func RoleBindingName(i int) string { return indexedName("rb-", i) }

// ConfigMapName is the name of the i-th ConfigMap.
func ConfigMapName(i int) string { return indexedName("cm-", i) }

// RoleBinding is the i-th RoleBinding: 3 to 5 subjects of all three kinds,
// labels and an annotation, as RoleBindings of tenants and teams have.
func RoleBinding(i int) *rbacv1.RoleBinding {
	team := fmt.Sprintf("team-%03d", i%97)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:      RoleBindingName(i),
			Namespace: Namespace(i),
			Labels: map[string]string{
				Label:                    LabelValue,
				"app.kubernetes.io/name": team,
			},
			Annotations: map[string]string{"example.com/owner": team + "@example.com"},
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
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: fmt.Sprintf("sa-%05d", i%5000), Namespace: Namespace(i)})
		}
	}
	return rb
}

// ConfigMap is the i-th ConfigMap: an application's settings, a few short
// keys and a config file of its own, labelled by application (500 of them).
func ConfigMap(i int) *corev1.ConfigMap {
	app := fmt.Sprintf("app-%04d", i%500)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ConfigMapName(i),
			Namespace: Namespace(i),
			Labels: map[string]string{
				Label:                         LabelValue,
				"app.kubernetes.io/name":      app,
				"app.kubernetes.io/component": "config",
			},
		},
		Data: map[string]string{
			"LOG_LEVEL": []string{"info", "debug", "warn"}[i%3],
			"HTTP_PORT": "8080",
			"FEATURES":  []string{"checkout,search", "search", "checkout,search,recommendations"}[i%3],
			"application.yaml": fmt.Sprintf("server:\n  port: 8080\n  name: %s\ndatabase:\n  host: postgres.%s.svc.cluster.local\n  name: db_%07d\n  pool: %d\nlogging:\n  level: info\n",
				app, Namespace(i), i, 5+i%20),
		},
	}
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

// PodNamespace is the namespace of the i-th Pod: a Deployment's Pods
// share one.
func PodNamespace(i int) string { return Namespace(i / podsPerApp) }

// PodName is the name of the i-th Pod.
func PodName(i int) string {
	app, hash := podApp(i)
	return indexedName(app+"-"+hash+"-", i)
}

// Pod is the i-th Pod: one of a Deployment of podsPerApp replicas, as the
// ReplicaSet controller creates it (owner reference, template labels, the
// service account token volume admission adds), bound to one of benchNodes
// nodes, with the status its kubelet reports once it runs.
func Pod(i int) *corev1.Pod {
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
			Name:         PodName(i),
			GenerateName: app + "-" + hash + "-",
			Namespace:    PodNamespace(i),
			Labels: map[string]string{
				Label:                        LabelValue,
				"app.kubernetes.io/name":     app,
				"app.kubernetes.io/instance": app + "-prod",
				"pod-template-hash":          hash,
			},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"},
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
