package fake_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// A fake server of Pods whose field selectors know spec.nodeName, as a node
// agent's informer lists them.
func ExampleWithFieldSet() {
	s := fake.NewServer(&corev1.PodList{}, fake.WithFieldSet(func(obj runtime.Object) fields.Set {
		return fields.Set{"spec.nodeName": obj.(*corev1.Pod).Spec.NodeName}
	}))
	defer s.Close()
	for name, node := range map[string]string{"a": "n1", "b": "n2"} {
		if _, err := s.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: node}}); err != nil {
			panic(err)
		}
	}
	list, err := s.ListerWatcher().List(metav1.ListOptions{FieldSelector: "spec.nodeName=n2"})
	if err != nil {
		panic(err)
	}
	for _, p := range list.(*corev1.PodList).Items {
		fmt.Println(p.Name, "on", p.Spec.NodeName)
	}
	_, err = s.ListerWatcher().List(metav1.ListOptions{FieldSelector: "status.phase=Running"})
	fmt.Println(err)
	// Output:
	// b on n2
	// field label not supported: status.phase
}
