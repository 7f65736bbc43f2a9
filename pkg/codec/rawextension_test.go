package codec

import (
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A RawExtension holding an Object (an object built in the process: a fake
// clientset's, a transform's that decoded Raw) is refused, alone or beside
// Raw, since protobuf writes Raw alone and the decode would lose the
// Object; with Raw only, as the API server sends it, the object encodes and
// comes back.
func TestRawExtensionObjectIsRefused(t *testing.T) {
	revision := func(data runtime.RawExtension) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns"}, Revision: 1, Data: data}
	}
	c := New()
	objectOnly := revision(runtime.RawExtension{Object: &corev1.ConfigMap{Data: map[string]string{"k": "v"}}})
	if _, err := c.Encode(objectOnly); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Encode of a RawExtension with only an Object: %v, want ErrUnsupported", err)
	}
	both := revision(runtime.RawExtension{Raw: []byte(`{"data":{"k":"v"}}`), Object: &corev1.ConfigMap{Data: map[string]string{"k": "v"}}})
	if _, err := c.Encode(both); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Encode of a RawExtension with Raw and an Object: %v, want ErrUnsupported", err)
	}
	// A type that reaches no RawExtension encodes as before.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if _, err := c.Encode(pod); err != nil {
		t.Fatalf("a Pod, which holds no RawExtension: %v", err)
	}

	withRaw := revision(runtime.RawExtension{Raw: []byte(`{"k":"v"}`)})
	data, err := c.Encode(withRaw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.(*appsv1.ControllerRevision).Data, withRaw.Data) {
		t.Errorf("Data decoded as %#v, want %#v", got.(*appsv1.ControllerRevision).Data, withRaw.Data)
	}
}
