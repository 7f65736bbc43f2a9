package codec_test

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/leaninformer/leaninformer/pkg/codec"
)

func Example() {
	c := codec.New()

	// A typed object is protobuf; its TypeMeta is kept beside the type.
	rb := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "viewers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "team-a"}},
	}
	data, err := c.Encode(rb)
	if err != nil {
		panic(err)
	}
	obj, err := c.Decode(data)
	if err != nil {
		panic(err)
	}
	fmt.Println(obj.(*rbacv1.RoleBinding).Kind, obj.(*rbacv1.RoleBinding).Subjects[0].Name)

	// Unstructured content is CBOR; what JSON cannot hold is refused.
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "size": 3}}
	_, err = c.Encode(u)
	fmt.Println(err)
	// Output:
	// RoleBinding team-a
	// object cannot be encoded: object.size: int is not a JSON value
}

// Labels reads a stored object's labels from its encoding, and MatchLabels
// matches a selector against them, without decoding the object.
func ExampleCodec_Labels() {
	c := codec.New()
	data, err := c.Encode(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{
		Namespace: "team-a", Name: "viewers", Labels: map[string]string{"team": "a", "tier": "read"},
	}})
	if err != nil {
		panic(err)
	}
	l, err := c.Labels(data)
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Get("team"), l.Has("owner"))

	matches, decoded, err := c.MatchLabels(labels.SelectorFromSet(labels.Set{"tier": "read"}))(data)
	fmt.Println(matches, decoded, err)
	// Output:
	// a false
	// true <nil> <nil>
}
