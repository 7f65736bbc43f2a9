package testobjects

import (
	"embed"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leaninformer/leaninformer/internal/benchobjects"
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

// Population makes distinct objects of a kind, as an informer decodes them
// from a LIST of many: hack/bench's i-th object of the kind (package
// benchobjects, without the revision annotation hack/bench adds, which the
// ServerObjects predate), with what a kube-apiserver adds (UID,
// resourceVersion, creationTimestamp and the managedFields of the kind's
// ServerObjects, which do not vary with i as the server's would by a few
// bytes), each one decoded from protobuf on its own so that no two share
// memory. Names end in the object's 7-digit number.
type Population struct {
	kind          string
	managedFields []metav1.ManagedFieldsEntry
}

// NewPopulation returns the population of kind (one of Kinds).
func NewPopulation(tb testing.TB, kind string) *Population {
	tb.Helper()
	m, err := meta.Accessor(ServerObjects(tb, kind)[0])
	if err != nil {
		tb.Fatal(err)
	}
	return &Population{kind: kind, managedFields: m.GetManagedFields()}
}

// Object returns the i-th object of the population.
func (p *Population) Object(i int) runtime.Object {
	var o protoObject
	switch p.kind {
	case "rolebindings":
		o = benchobjects.RoleBinding(i)
	case "configmaps":
		o = benchobjects.ConfigMap(i)
	default:
		o = benchobjects.Pod(i)
	}
	m, err := meta.Accessor(o)
	if err != nil {
		panic(err)
	}
	m.SetUID(UID(i))
	m.SetResourceVersion(fmt.Sprint(100000 + i))
	m.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)))
	m.SetManagedFields(p.managedFields)
	data, err := o.Marshal()
	if err != nil {
		panic(fmt.Errorf("encoding %T: %w", o, err))
	}
	fresh := reflect.New(reflect.TypeOf(o).Elem()).Interface().(protoObject)
	if err := fresh.Unmarshal(data); err != nil {
		panic(fmt.Errorf("decoding %T: %w", o, err))
	}
	return fresh
}

// Objects returns the first n objects of the population.
func (p *Population) Objects(n int) []runtime.Object {
	out := make([]runtime.Object, n)
	for i := range out {
		out[i] = p.Object(i)
	}
	return out
}

// Number returns the number of a population object from its name, or -1.
func Number(name string) int {
	if len(name) < 7 {
		return -1
	}
	n, err := strconv.Atoi(name[len(name)-7:])
	if err != nil {
		return -1
	}
	return n
}

// UID returns the i-th of a sequence of distinct UUIDs, as an API server
// assigns them.
func UID(i int) types.UID {
	return types.UID(fmt.Sprintf("%08x-7d3e-4f1a-9b2c-%012x", i, uint64(i)*0x9e3779b97f4a7c15>>16))
}
