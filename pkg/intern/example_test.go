package intern_test

import (
	"context"
	"encoding/json"
	"fmt"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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
// every object before the object is stored. A program usually gives every
// informer the process-wide table's Transform, intern.Default().Transform,
// so that the objects of different informers share strings too (it is the
// table of informer.WithInterning); this example has a table of its own, so
// that what it counts is these pods' values only.
func ExampleTable_Transform() {
	var pods []runtime.Object
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
		})
	}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(pods...), 0)
	podInformer := factory.Core().V1().Pods().Informer()
	tab := intern.NewTable()
	if err := podInformer.SetTransform(tab.Transform); err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	fmt.Println("stored:", len(podInformer.GetStore().List()))
	fmt.Println("shared values:", tab.Len()) // shop, app, web (label value and container name), nginx:1.27
	cancel()
	factory.Shutdown()
	// Output:
	// stored: 3
	// shared values: 4
}

// String shares a value from its third sighting on: the first two strings
// keep their own bytes, the third and every later one get the table's
// instance. Each String call counts as another object; StringOf and Object
// count the strings of one object once. The table holds its instance only
// while some string uses it, as stored objects do here.
func ExampleTable_String() {
	tab := intern.NewTable()
	var stored []string
	for i := range 4 {
		image := string(fmt.Appendf(nil, "nginx:%s", "1.27")) // a freshly decoded string
		s := tab.String(image)
		stored = append(stored, s)
		fmt.Printf("sighting %d: own bytes %v, table entries %d\n", i+1, unsafe.StringData(s) == unsafe.StringData(image), tab.Len())
	}
	fmt.Println("last two share bytes:", unsafe.StringData(stored[2]) == unsafe.StringData(stored[3]))
	// Output:
	// sighting 1: own bytes true, table entries 0
	// sighting 2: own bytes true, table entries 0
	// sighting 3: own bytes false, table entries 1
	// sighting 4: own bytes false, table entries 1
	// last two share bytes: true
}
