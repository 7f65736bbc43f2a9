package intern_test

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/leaninformer/leaninformer/pkg/intern"
)

// Interning pods as they are decoded: the table ends up with one instance
// of each repeated value (namespace, label key and value, container name
// and image), whichever pod had it; names stay the pods' own.
func ExampleTable_Object() {
	tab := intern.NewTable()
	var pods []*corev1.Pod
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		pod := &corev1.Pod{}
		err := json.Unmarshal(fmt.Appendf(nil, `{"metadata": {"name": %q, "namespace": "shop", "labels": {"app": "web"}},
			"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}`, name), pod)
		if err != nil {
			panic(err)
		}
		pods = append(pods, tab.Object(pod).(*corev1.Pod))
	}
	fmt.Println(pods[2].Name, pods[2].Namespace, pods[2].Labels, pods[2].Spec.Containers[0].Image)
	fmt.Println("shared values:", tab.Len())
	// Output:
	// web-3 shop map[app:web] nginx:1.27
	// shared values: 4
}

// Any client-go informer can intern what it stores: its transform runs on
// every object before the object is stored.
func ExampleTable_Transform() {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	pods := factory.Core().V1().Pods().Informer()
	if err := pods.SetTransform(intern.Default().Transform); err != nil {
		fmt.Println(err)
	}
}
