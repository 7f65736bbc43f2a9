package codec_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leaninformer/leaninformer/pkg/codec"
)

// WithCompression compresses each kind's encodings with a dictionary made
// from the first codec.TrainingSamples objects of the kind, which stay
// uncompressed. Objects of one kind look alike (the same keys, labels and
// owners), so the dictionary saves most of what they repeat. An informer
// gets it with informer.WithEncodedStore(codec.WithCompression()).
func ExampleWithCompression() {
	c := codec.New(codec.WithCompression())
	var first, last []byte
	for i := range codec.TrainingSamples + 1 {
		data, err := c.Encode(podOfDeployment(i))
		if err != nil {
			panic(err)
		}
		if i == 0 {
			first = data
		}
		last = data
	}
	fmt.Printf("pod 0: %d bytes; pod %d: %d bytes\n", len(first), codec.TrainingSamples, len(last))

	obj, err := c.Decode(last)
	if err != nil {
		panic(err)
	}
	p := obj.(*corev1.Pod)
	fmt.Println(p.Name, p.Spec.Containers[0].Image)
	// Output:
	// pod 0: 362 bytes; pod 256: 23 bytes
	// web-7d4b9c6f8-00256 registry.example.com/shop/web:1.42.0
}

// podOfDeployment returns the i-th pod of a web deployment, as a
// ReplicaSet makes them.
func podOfDeployment(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: fmt.Sprintf("web-7d4b9c6f8-%05d", i),
			Labels:          map[string]string{"app.kubernetes.io/name": "web", "pod-template-hash": "7d4b9c6f8"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c6f8", UID: "0b2c7e0e-2f7a-4d5e-9b0a-6c1d2e3f4a5b"}},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%d", i%7),
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example.com/shop/web:1.42.0",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Env:   []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "REGION", Value: "eu-west-1"}},
			}},
		},
	}
}
