package testobjects

import (
	"embed"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

//go:embed testdata/*.json
var testdata embed.FS

// Kinds are the kinds of ServerObjects, as hack/bench's --kind names them.
var Kinds = []string{"rolebindings", "configmaps", "pods"}

// ServerObjects decodes testdata/<kind>.json: objects a kube-apiserver
// returned for hack/bench's objects of that kind, managedFields and all,
// decoded from JSON as a client does (TypeMeta empty, as in a list).
func ServerObjects(tb testing.TB, kind string) []runtime.Object {
	tb.Helper()
	var list runtime.Object
	switch kind {
	case "rolebindings":
		list = &rbacv1.RoleBindingList{}
	case "configmaps":
		list = &corev1.ConfigMapList{}
	case "pods":
		list = &corev1.PodList{}
	default:
		tb.Fatalf("no server objects of kind %q (known: %v)", kind, Kinds)
	}
	data, err := testdata.ReadFile("testdata/" + kind + ".json")
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(data, list); err != nil {
		tb.Fatalf("decoding testdata/%s.json: %v", kind, err)
	}
	items, err := meta.ExtractListWithAlloc(list)
	if err != nil || len(items) == 0 {
		tb.Fatalf("testdata/%s.json holds %d objects (%v)", kind, len(items), err)
	}
	return items
}

// protoObject is what generated protobuf types provide.
type protoObject interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// Population returns n distinct objects of kind, as an informer decodes
// them from a LIST of n such objects: ServerObjects in turn, each with its
// own name, UID and resourceVersion, every one decoded from protobuf on its
// own so that no two share memory.
func Population(tb testing.TB, kind string, n int) []runtime.Object {
	tb.Helper()
	templates := ServerObjects(tb, kind)
	out := make([]runtime.Object, n)
	for i := range out {
		o := templates[i%len(templates)].DeepCopyObject()
		m, err := meta.Accessor(o)
		if err != nil {
			tb.Fatal(err)
		}
		m.SetName(fmt.Sprintf("%s-%07d", m.GetName(), i))
		m.SetUID(UID(i))
		m.SetResourceVersion(fmt.Sprint(100000 + i))
		data, err := o.(protoObject).Marshal()
		if err != nil {
			tb.Fatal(err)
		}
		fresh := reflect.New(reflect.TypeOf(o).Elem()).Interface().(protoObject)
		if err := fresh.Unmarshal(data); err != nil {
			tb.Fatal(err)
		}
		out[i] = fresh
	}
	return out
}

// UID returns the i-th of a sequence of distinct UUIDs, as an API server
// assigns them.
func UID(i int) types.UID {
	return types.UID(fmt.Sprintf("%08x-7d3e-4f1a-9b2c-%012x", i, uint64(i)*0x9e3779b97f4a7c15>>16))
}
