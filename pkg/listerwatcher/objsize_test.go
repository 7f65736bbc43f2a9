package listerwatcher

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/leaninformer/leaninformer/internal/memstat"
)

func sizeRoleBinding(i int) k8sruntime.Object {
	rb := &rbacv1.RoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("team-%03d", i%50), Name: fmt.Sprintf("binding-%06d", i),
			UID: types.UID(fmt.Sprintf("4b2e6c1a-0000-4000-8000-%012d", i)), ResourceVersion: fmt.Sprint(1000 + i),
			CreationTimestamp: metav1.Unix(1700000000, 0),
			Labels:            map[string]string{"app.kubernetes.io/name": "bench", "tier": "backend"},
			Annotations:       map[string]string{"example.com/owner": fmt.Sprintf("owner-%d@example.com", i)},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "rbac.authorization.k8s.io/v1",
				Time: &metav1.Time{}, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:roleRef":{},"f:subjects":{}}`)}},
		},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
	}
	for s := range 3 + i%3 {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: fmt.Sprintf("sa-%d-%d", i, s), Namespace: rb.Namespace})
	}
	return rb
}

func sizePod(i int) k8sruntime.Object {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "apps", Name: fmt.Sprintf("web-5d4b9c8f6-%05d", i), ResourceVersion: fmt.Sprint(1000 + i),
			Labels: map[string]string{"app": "web", "pod-template-hash": "5d4b9c8f6"},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%03d", i%50),
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example.com/web:1.2.3", Args: []string{"--port=8080"},
				Env:       []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.0.%d.%d", i/250, i%250),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func sizeConfigMap(i int) k8sruntime.Object {
	data := map[string]string{}
	for k := range 12 {
		data[fmt.Sprintf("key-%02d", k)] = fmt.Sprintf("value %d of configmap %d, a few dozen bytes long", k, i)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: fmt.Sprintf("settings-%05d", i), ResourceVersion: fmt.Sprint(1000 + i)},
		Data:       data,
	}
}

// decodedHeap decodes n objects made by newObject and returns the heap
// they hold per object, measured by full GCs, and decodedBytes' estimate
// of the same objects.
func decodedHeap(t *testing.T, n int, decode func(i int) k8sruntime.Object) (measured, estimated float64) {
	t.Helper()
	objs := make([]k8sruntime.Object, n)
	base := memstat.HeapAfterGC()
	for i := range objs {
		objs[i] = decode(i)
	}
	held := memstat.HeapAfterGC()
	var sum int64
	for _, o := range objs {
		sum += decodedBytes(o)
	}
	runtime.KeepAlive(objs)
	return float64(held-base) / float64(n), float64(sum) / float64(n)
}

func TestDecodedBytesEstimatesTheHeapOfDecodedObjects(t *testing.T) {
	const n = 2000
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	fromProtobuf := func(newObject func(int) k8sruntime.Object) func(int) k8sruntime.Object {
		encoded := make([][]byte, n)
		for i := range encoded {
			b, err := k8sruntime.Encode(pb, newObject(i))
			if err != nil {
				t.Fatal(err)
			}
			encoded[i] = b
		}
		return func(i int) k8sruntime.Object {
			obj, _, err := pb.Decode(encoded[i], nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return obj
		}
	}
	fromJSON := func(newObject func(int) k8sruntime.Object) func(int) k8sruntime.Object {
		encoded := make([][]byte, n)
		for i := range encoded {
			b, err := json.Marshal(newObject(i))
			if err != nil {
				t.Fatal(err)
			}
			encoded[i] = b
		}
		return func(i int) k8sruntime.Object {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(encoded[i]); err != nil {
				t.Fatal(err)
			}
			return u
		}
	}
	for name, decode := range map[string]func(int) k8sruntime.Object{
		"RoleBinding protobuf":     fromProtobuf(sizeRoleBinding),
		"Pod protobuf":             fromProtobuf(sizePod),
		"ConfigMap protobuf":       fromProtobuf(sizeConfigMap),
		"RoleBinding unstructured": fromJSON(sizeRoleBinding),
		"Pod unstructured":         fromJSON(sizePod),
	} {
		measured, estimated := decodedHeap(t, n, decode)
		t.Logf("%s: %.0f bytes per object measured, %.0f estimated (%.2fx)", name, measured, estimated, estimated/measured)
		// Within a quarter: the page size policy needs the order of
		// magnitude, and a systematic error shifts every page alike.
		if estimated < 0.75*measured || estimated > 1.25*measured {
			t.Errorf("%s: estimated %.0f bytes per object, measured %.0f: off by more than 25%%", name, estimated, measured)
		}
	}
}

func TestDecodedBytesOfNothing(t *testing.T) {
	if n := decodedBytes((*corev1.Pod)(nil)); n != 0 {
		t.Errorf("decodedBytes(nil pod) = %d, want 0", n)
	}
	empty := decodedBytes(&corev1.ConfigMap{})
	if want := int64(allocSize(reflect.TypeFor[corev1.ConfigMap]().Size())); empty != want {
		t.Errorf("decodedBytes(empty ConfigMap) = %d, want its struct's %d", empty, want)
	}
}
