package informer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestResourceLabels(t *testing.T) {
	unstructuredDeployment := &unstructured.Unstructured{}
	unstructuredDeployment.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	metadataOnly := &metav1.PartialObjectMetadata{}
	metadataOnly.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1alpha1", Kind: "Widget"})
	type notInScheme struct{ corev1.ConfigMap }
	for _, tc := range []struct {
		obj  runtime.Object
		want schema.GroupVersionResource
	}{
		{&corev1.ConfigMap{}, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
		{&networkingv1.NetworkPolicy{}, schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}},
		{&networkingv1.Ingress{}, schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}},
		{unstructuredDeployment, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
		{metadataOnly, schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}},
		{&notInScheme{}, schema.GroupVersionResource{Resource: "notinschemes"}},
		{nil, schema.GroupVersionResource{Resource: "unknown"}},
	} {
		if got := resourceOf(tc.obj, defaultScheme, nil); got != tc.want {
			t.Errorf("resourceOf(%T) = %v, want %v", tc.obj, got, tc.want)
		}
	}
}

// With a RESTMapper (controller-runtime's cache has the manager's) the
// resource is the mapped one: a CRD's plural need not be the guessed one.
func TestResourceLabelsFromTheRESTMapper(t *testing.T) {
	octopus := schema.GroupVersionKind{Group: "sea.example.com", Version: "v1", Kind: "Octopus"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.AddSpecific(octopus, octopus.GroupVersion().WithResource("octopodes"), octopus.GroupVersion().WithResource("octopus"), meta.RESTScopeNamespace)
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(octopus)
	if got, want := resourceOf(obj, defaultScheme, mapper), octopus.GroupVersion().WithResource("octopodes"); got != want {
		t.Errorf("with the mapper: %v, want %v", got, want)
	}
	if got, want := resourceOf(obj, defaultScheme, nil), octopus.GroupVersion().WithResource("octopuses"); got != want {
		t.Errorf("without a mapper: %v, want the guess %v", got, want)
	}
	// A kind the mapper does not know is guessed.
	if got, want := resourceOf(&corev1.ConfigMap{}, defaultScheme, mapper), corev1.SchemeGroupVersion.WithResource("configmaps"); got != want {
		t.Errorf("a kind the mapper does not know: %v, want %v", got, want)
	}
}
