package intern

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leaninformer/leaninformer/internal/testobjects"
)

// decoded is one fixture decoded several times: ref is never interned,
// interned are, in order. The first ones keep their own strings (the table
// only counts them), the last two, b and c, share the canonical instances.
type decoded struct {
	name          string
	ref           runtime.Object
	interned      []runtime.Object
	b, c          runtime.Object
	hasObjectMeta bool
}

func decodeFixtures(t *testing.T, decode func([]byte) (runtime.Object, error)) []decoded {
	t.Helper()
	var out []decoded
	for _, fixture := range testobjects.APIFixtures(t) {
		var err error
		objs := make([]runtime.Object, admitAt+2)
		for i := range objs {
			if objs[i], err = decode(fixture.JSON); err != nil {
				break
			}
		}
		if err != nil {
			continue // a kind client-go's scheme does not know
		}
		_, metaErr := meta.Accessor(objs[0])
		n := len(objs)
		out = append(out, decoded{name: fixture.Name, ref: objs[0], interned: objs[1:], b: objs[n-2], c: objs[n-1], hasObjectMeta: metaErr == nil})
	}
	return out
}

// randomObjects returns random typed objects (testobjects.Random: pointer
// times set, times with nanoseconds in three zones) as decodeFixtures
// returns fixtures: each made as many times, by generators of one seed, so
// that no two copies share memory.
func randomObjects(*testing.T) []decoded {
	gens := make([]*testobjects.Random, admitAt+3)
	for i := range gens {
		gens[i] = testobjects.NewRandom(4)
	}
	out := make([]decoded, 50*testobjects.RandomKinds)
	for i := range out {
		objs := make([]runtime.Object, len(gens))
		for j, g := range gens {
			objs[j] = g.Object(i)
		}
		n := len(objs)
		out[i] = decoded{name: fmt.Sprintf("random %T %d", objs[0], i), ref: objs[0], interned: objs[1:], b: objs[n-2], c: objs[n-1], hasObjectMeta: true}
	}
	return out
}

// internAsObject interns obj, a decode of a fixture, as the i-th of as many
// distinct objects as there are decodes: the table counts a value once per
// object (UID), and every decode of a fixture has the fixture's UID. The
// UID, which Object leaves alone, is the fixture's again afterwards, so
// obj still compares equal to another decode.
func internAsObject(tab *Table, obj runtime.Object, i int) any {
	uid := fmt.Sprintf("distinct-object-%d", i)
	if u, ok := obj.(*unstructured.Unstructured); ok {
		md, isMap := u.Object["metadata"].(map[string]any)
		if !isMap {
			return tab.Object(obj) // no UID to count it by: each call counts
		}
		was, had := md["uid"]
		md["uid"] = uid
		defer func() {
			if delete(md, "uid"); had {
				md["uid"] = was
			}
		}()
		return tab.Object(obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return tab.Object(obj)
	}
	was := m.GetUID()
	m.SetUID(types.UID(uid))
	defer m.SetUID(was)
	return tab.Object(obj)
}

var (
	typedDecode        = testobjects.DecodeTyped
	unstructuredDecode = testobjects.DecodeUnstructured
	partialDecode      = testobjects.DecodePartial
	poison             = testobjects.Poison
)

func TestObjectKeepsEveryKindIntact(t *testing.T) {
	// min: fixtures that must decode, and share their namespace and labels.
	fixtures := func(decode func([]byte) (runtime.Object, error)) func(*testing.T) []decoded {
		return func(t *testing.T) []decoded { return decodeFixtures(t, decode) }
	}
	for _, tc := range []struct {
		name    string
		objects func(*testing.T) []decoded
		min     int
	}{
		{"typed", fixtures(typedDecode), 150},
		{"unstructured", fixtures(unstructuredDecode), 150},
		{"PartialObjectMetadata", fixtures(partialDecode), 150},
		{"random typed", randomObjects, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fixtures := tc.objects(t)
			if len(fixtures) < tc.min {
				t.Fatalf("decoded %d fixtures, want at least %d", len(fixtures), tc.min)
			}
			tab := NewTable()
			for _, f := range fixtures {
				for i, obj := range f.interned {
					if got := internAsObject(tab, obj, i); got != obj {
						t.Fatalf("%s: Object returned %p, want its argument %p", f.name, got, obj)
					}
				}
			}
			shared := 0
			for _, f := range fixtures {
				checkIntact(t, f.name, f.ref, f.b)
				checkIntact(t, f.name, f.ref, f.c)
				if f.hasObjectMeta && sharesMetadata(t, f.name, f.b, f.c) {
					shared++
				}
			}
			if shared < tc.min {
				t.Errorf("%d fixtures share their namespace and labels, want at least %d", shared, tc.min)
			}
		})
	}
}

// checkIntact fails unless got is indistinguishable from want: equal
// (deeply and semantically), encoding to the same JSON and protobuf, with a
// DeepCopy equal too.
func checkIntact(t *testing.T, name string, want, got runtime.Object) {
	t.Helper()
	if !reflect.DeepEqual(got, want) || !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s: the interned object differs from the decoded one", name)
	}
	if !reflect.DeepEqual(got.DeepCopyObject(), want) {
		t.Errorf("%s: a DeepCopy of the interned object differs from the decoded one", name)
	}
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	gotJSON, err := json.Marshal(got)
	if err != nil || !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("%s: the interned object encodes to other JSON (%v):\n got %s\nwant %s", name, err, gotJSON, wantJSON)
	}
	type protoMarshaler interface{ Marshal() ([]byte, error) }
	if pw, ok := want.(protoMarshaler); ok {
		wantPB, err1 := pw.Marshal()
		gotPB, err2 := got.(protoMarshaler).Marshal()
		if err1 != nil || err2 != nil || !bytes.Equal(gotPB, wantPB) {
			t.Errorf("%s: the interned object encodes to other protobuf (%v, %v)", name, err1, err2)
		}
	}
}

// sharesMetadata reports whether two interned objects share the bytes of
// their namespace and their label keys and values, and fails the test if
// they share their name or UID, which interning must leave alone.
func sharesMetadata(t *testing.T, name string, x, y runtime.Object) bool {
	t.Helper()
	mx, _ := meta.Accessor(x)
	my, _ := meta.Accessor(y)
	if mx.GetName() != "" && sameBytes(mx.GetName(), my.GetName()) {
		t.Errorf("%s: two objects share the bytes of their name", name)
	}
	if mx.GetUID() != "" && sameBytes(string(mx.GetUID()), string(my.GetUID())) {
		t.Errorf("%s: two objects share the bytes of their UID", name)
	}
	if mx.GetNamespace() == "" || len(mx.GetLabels()) == 0 || !sameBytes(mx.GetNamespace(), my.GetNamespace()) {
		return false
	}
	return sameKeysAndValues(mx.GetLabels(), my.GetLabels())
}

func sameKeysAndValues(x, y map[string]string) bool {
	canonicalKey := map[string]string{}
	for k := range y {
		canonicalKey[k] = k
	}
	for k, v := range x {
		if !sameBytes(k, canonicalKey[k]) || !sameBytes(v, y[k]) {
			return false
		}
	}
	return len(x) == len(y)
}

// TestObjectSharesNoWritableMemory writes every field, element, byte and
// map entry of one interned object, and checks that the objects it shares
// strings with, and a DeepCopy taken before, do not change.
func TestObjectSharesNoWritableMemory(t *testing.T) {
	for _, tc := range []struct {
		name   string
		decode func([]byte) (runtime.Object, error)
	}{
		{"typed", typedDecode},
		{"unstructured", unstructuredDecode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := NewTable()
			fixtures := decodeFixtures(t, tc.decode)
			for _, f := range fixtures {
				for i, obj := range f.interned {
					internAsObject(tab, obj, i)
				}
			}
			for _, f := range fixtures {
				poison(reflect.ValueOf(f.c.DeepCopyObject()))
				if !reflect.DeepEqual(f.c, f.ref) || !reflect.DeepEqual(f.b, f.ref) {
					t.Errorf("%s: writing through a DeepCopy changed interned objects", f.name)
				}
				copied := f.b.DeepCopyObject()
				poison(reflect.ValueOf(f.b))
				if reflect.DeepEqual(f.b, f.ref) {
					t.Fatalf("%s: poisoning changed nothing", f.name)
				}
				for what, obj := range map[string]runtime.Object{"an object sharing its strings": f.c, "the first interned": f.interned[0], "its DeepCopy": copied} {
					if !reflect.DeepEqual(obj, f.ref) {
						t.Errorf("%s: writing through one interned object changed %s", f.name, what)
					}
				}
			}
		})
	}
}

// realObjects returns the objects a kube-apiserver returned for the
// benchmark's objects of a kind, managedFields and all.
func realObjects(tb testing.TB, kind string) []runtime.Object {
	tb.Helper()
	return testobjects.ServerObjects(tb, kind)
}

// checkShared checks that from the third object on that has it, every
// value get returns shares the bytes of that third one: a value is shared
// from its third occurrence on (each object here has it once).
func checkShared[T any](t *testing.T, objs []T, what string, get func(T) string) {
	t.Helper()
	seen := map[string]int{}
	canonical := map[string]string{}
	for i, o := range objs {
		v := get(o)
		switch seen[v]++; {
		case v == "" || seen[v] < admitAt:
		case seen[v] == admitAt:
			canonical[v] = v
		case !sameBytes(v, canonical[v]):
			t.Errorf("object %d: %s %q is not shared with the earlier objects that have it", i, what, v)
		}
	}
	if len(canonical) == 0 {
		t.Errorf("no %s occurs %d times; the test needs objects that repeat it", what, admitAt+1)
	}
}

func checkUnshared[T any](t *testing.T, objs []T, what string, get func(T) string) {
	t.Helper()
	for i := range objs {
		for j := range i {
			if a, b := get(objs[i]), get(objs[j]); a != "" && sameBytes(a, b) {
				t.Errorf("objects %d and %d share their %s %q", j, i, what, a)
			}
		}
	}
}

func TestObjectSharesWhatRoleBindingsRepeat(t *testing.T) {
	tab := NewTable()
	objs := realObjects(t, "rolebindings")
	ref := realObjects(t, "rolebindings")
	var rbs []*rbacv1.RoleBinding
	trimmed := 0
	for i, o := range objs {
		rb := o.(*rbacv1.RoleBinding)
		// JSON grows slices as decoders do: five subjects in room for eight.
		wasted := cap(rb.Subjects) > len(rb.Subjects)
		tab.Object(rb)
		if wasted && cap(rb.Subjects) == len(rb.Subjects) {
			trimmed++
		}
		checkIntact(t, rb.Name, ref[i], rb)
		rbs = append(rbs, rb)
	}
	if trimmed == 0 {
		t.Error("no subjects slice lost its spare capacity")
	}
	for what, get := range map[string]func(*rbacv1.RoleBinding) string{
		"label value":              func(rb *rbacv1.RoleBinding) string { return rb.Labels["app.kubernetes.io/managed-by"] },
		"roleRef.apiGroup":         func(rb *rbacv1.RoleBinding) string { return rb.RoleRef.APIGroup },
		"roleRef.kind":             func(rb *rbacv1.RoleBinding) string { return rb.RoleRef.Kind },
		"roleRef.name":             func(rb *rbacv1.RoleBinding) string { return rb.RoleRef.Name },
		"subjects[1].kind":         func(rb *rbacv1.RoleBinding) string { return rb.Subjects[1].Kind },
		"subjects[1].apiGroup":     func(rb *rbacv1.RoleBinding) string { return rb.Subjects[1].APIGroup },
		"managedFields.manager":    func(rb *rbacv1.RoleBinding) string { return rb.ManagedFields[0].Manager },
		"managedFields.operation":  func(rb *rbacv1.RoleBinding) string { return string(rb.ManagedFields[0].Operation) },
		"managedFields.apiVersion": func(rb *rbacv1.RoleBinding) string { return rb.ManagedFields[0].APIVersion },
		"managedFields.fieldsType": func(rb *rbacv1.RoleBinding) string { return rb.ManagedFields[0].FieldsType },
		"label key": func(rb *rbacv1.RoleBinding) string {
			for k := range rb.Labels {
				if k == "app.kubernetes.io/name" {
					return k
				}
			}
			return ""
		},
	} {
		checkShared(t, rbs, what, get)
	}
	checkUnshared(t, rbs, "name", func(rb *rbacv1.RoleBinding) string { return rb.Name })
	checkUnshared(t, rbs, "uid", func(rb *rbacv1.RoleBinding) string { return string(rb.UID) })
}

func TestObjectSharesWhatPodsOfADeploymentRepeat(t *testing.T) {
	tab := NewTable()
	objs := realObjects(t, "pods")
	ref := realObjects(t, "pods")
	var pods []*corev1.Pod
	for i, o := range objs {
		p := o.(*corev1.Pod)
		tab.Object(p)
		checkIntact(t, p.Name, ref[i], p)
		pods = append(pods, p)
	}
	container := func(p *corev1.Pod) corev1.Container { return p.Spec.Containers[0] }
	for what, get := range map[string]func(*corev1.Pod) string{
		"generateName":         func(p *corev1.Pod) string { return p.GenerateName },
		"ownerReferences.name": func(p *corev1.Pod) string { return p.OwnerReferences[0].Name },
		"ownerReferences.uid":  func(p *corev1.Pod) string { return string(p.OwnerReferences[0].UID) },
		"image":                func(p *corev1.Pod) string { return container(p).Image },
		"args[0]":              func(p *corev1.Pod) string { return container(p).Args[0] },
		"env[0].value":         func(p *corev1.Pod) string { return container(p).Env[0].Value },
		"resources format": func(p *corev1.Pod) string {
			return string(ptrTo(container(p).Resources.Requests[corev1.ResourceCPU]).Format)
		},
		"volumes[0].projected":   func(p *corev1.Pod) string { return p.Spec.Volumes[0].Projected.Sources[1].ConfigMap.Name },
		"status.conditions.type": func(p *corev1.Pod) string { return string(p.Status.Conditions[0].Type) },
		"status.qosClass":        func(p *corev1.Pod) string { return string(p.Status.QOSClass) },
		"status.imageID":         func(p *corev1.Pod) string { return p.Status.ContainerStatuses[0].ImageID },
	} {
		checkShared(t, pods, what, get)
	}
	checkUnshared(t, pods, "pod IP", func(p *corev1.Pod) string { return p.Status.PodIP })
	checkUnshared(t, pods, "name", func(p *corev1.Pod) string { return p.Name })
}

func ptrTo[T any](v T) *T { return &v }

func TestObjectInternsUnstructuredButItsIdentity(t *testing.T) {
	newPod := func(name, uid string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": copyOf("v1"), "kind": copyOf("Pod"),
			"metadata": map[string]any{
				"name": copyOf(name), "uid": copyOf(uid), "resourceVersion": copyOf("42"), "namespace": copyOf("team-a"),
				"labels": map[string]any{copyOf("app"): copyOf("web")},
			},
			"spec": map[string]any{"containers": []any{map[string]any{"name": copyOf("web"), "image": copyOf("nginx:1.27"), "args": []any{copyOf("--port=80"), int64(80)}}}},
		}}
	}
	// Pods a and b are the first occurrences of their values, c the third
	// and d, in a list, the fourth: c and d share.
	tab := NewTable()
	for _, o := range []*unstructured.Unstructured{newPod("a", "uid-a"), newPod("b", "uid-b")} {
		tab.Object(o)
	}
	c := newPod("c", "uid-c")
	tab.Object(c)
	list := &unstructured.UnstructuredList{Object: map[string]any{"kind": copyOf("PodList")}, Items: []unstructured.Unstructured{*newPod("d", "uid-d")}}
	tab.Object(list)
	d := &list.Items[0]
	container := func(u *unstructured.Unstructured) map[string]any {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
		return cs[0].(map[string]any)
	}
	for what, pair := range map[string][2]string{
		"apiVersion": {c.GetAPIVersion(), d.GetAPIVersion()},
		"namespace":  {c.GetNamespace(), d.GetNamespace()},
		"label":      {c.GetLabels()["app"], d.GetLabels()["app"]},
		"image":      {container(c)["image"].(string), container(d)["image"].(string)},
		"args[0]":    {container(c)["args"].([]any)[0].(string), container(d)["args"].([]any)[0].(string)},
	} {
		if !sameBytes(pair[0], pair[1]) {
			t.Errorf("%s is not shared", what)
		}
	}
	if sameBytes(c.GetResourceVersion(), d.GetResourceVersion()) {
		t.Error("resourceVersion, part of an object's identity, was shared")
	}
	var keys []string
	for k := range c.Object {
		for dk := range d.Object {
			if k == dk && sameBytes(k, dk) {
				keys = append(keys, k)
			}
		}
	}
	if slices.Sort(keys); !slices.Equal(keys, []string{"apiVersion", "kind", "metadata", "spec"}) {
		t.Errorf("shared top-level keys %v, want all four", keys)
	}
	if want := newPod("c", "uid-c"); !reflect.DeepEqual(c, want) {
		t.Errorf("interned unstructured object differs:\n got %v\nwant %v", c.Object, want.Object)
	}
}

// tree is a recursive type, as JSON schemas are.
type tree struct {
	Label    string
	Children []*tree
	Next     *tree
	ByName   map[string]tree
	Extra    any
	Counts   map[int]string
	private  string
}

func newTree() *tree {
	leaf := &tree{Label: copyOf("leaf"), private: copyOf("private")}
	return &tree{
		Label:    copyOf("root"),
		Children: []*tree{leaf, {Label: copyOf("leaf"), Next: &tree{Label: copyOf("next")}}},
		ByName:   map[string]tree{copyOf("x"): {Label: copyOf("in-map")}},
		Extra:    &tree{Label: copyOf("behind-any")},
		Counts:   map[int]string{1: copyOf("one")},
		private:  copyOf("private"),
	}
}

func TestObjectWalksRecursiveTypes(t *testing.T) {
	tab := NewTable()
	tab.Object(newTree())
	tab.Object(newTree())
	x, y := tab.Object(newTree()).(*tree), tab.Object(newTree()).(*tree)
	for what, pair := range map[string][2]string{
		"Label":           {x.Label, y.Label},
		"Children.Label":  {x.Children[0].Label, y.Children[1].Label},
		"Next.Label":      {x.Children[1].Next.Label, y.Children[1].Next.Label},
		"ByName value":    {x.ByName["x"].Label, y.ByName["x"].Label},
		"Extra.Label":     {x.Extra.(*tree).Label, y.Extra.(*tree).Label},
		"Counts value":    {x.Counts[1], y.Counts[1]},
		"self repetition": {x.Children[0].Label, x.Children[1].Label},
	} {
		if !sameBytes(pair[0], pair[1]) {
			t.Errorf("%s %q is not shared", what, pair[0])
		}
	}
	if sameBytes(x.private, y.private) {
		t.Error("an unexported field was interned")
	}
	if want := newTree(); !reflect.DeepEqual(x, want) {
		t.Errorf("interned tree differs: %+v", x)
	}
}

func TestObjectLeavesWhatItCannotChangeAlone(t *testing.T) {
	tab := NewTable()
	for _, v := range []any{nil, (*corev1.Pod)(nil), (*unstructured.Unstructured)(nil), corev1.Pod{}, "text", 42, map[string]string{"a": "b"}} {
		if got := tab.Object(v); !reflect.DeepEqual(got, v) {
			t.Errorf("Object(%#v) = %#v", v, got)
		}
	}
	if out, err := tab.Transform(&corev1.Pod{}); err != nil || out == nil {
		t.Errorf("Transform = %v, %v", out, err)
	}
}

// forest nests by value in a slice, so that a cycle can go through a
// slice's array without a pointer.
type forest struct {
	Label string
	Kids  []forest
}

// TestObjectStopsAtCycles: a value built in the process may point back at
// itself, through a pointer, a slice, a map or an interface, branching or
// not. Following it would never end (before, the walk overflowed the
// goroutine's stack: a fatal error, not a panic). Object returns, with the
// strings it reached interned and nothing else changed.
func TestObjectStopsAtCycles(t *testing.T) {
	cyclic := func() []any {
		byPointer := &tree{Label: copyOf("pointer")}
		byPointer.Next = byPointer
		byPointer.Children = []*tree{byPointer, byPointer, byPointer} // branching
		byInterface := &tree{Label: copyOf("interface")}
		byInterface.Extra = byInterface
		byMap := &tree{Label: copyOf("map"), ByName: map[string]tree{}}
		byMap.ByName[copyOf("self")] = tree{Label: copyOf("in-map"), ByName: byMap.ByName}
		bySlice := []forest{{Label: copyOf("slice")}}
		bySlice[0].Kids = bySlice
		content := map[string]any{"kind": copyOf("Widget"), "spec": map[string]any{"field": copyOf("value")}}
		content["self"], content["again"] = content, content
		list := []any{copyOf("item"), nil}
		list[1] = list
		content["list"] = list
		return []any{byPointer, byInterface, byMap, &forest{Label: copyOf("root"), Kids: bySlice},
			&unstructured.Unstructured{Object: content}}
	}
	tab := NewTable()
	done := make(chan [2][]any)
	go func() {
		// As in TestObjectWalksRecursiveTypes, the table shares a string
		// from its third sighting: two sets first, then the two compared.
		sets := [][]any{cyclic(), cyclic(), cyclic(), cyclic()}
		for _, set := range sets {
			for _, v := range set {
				tab.Object(v)
			}
		}
		a, b := sets[2], sets[3]
		done <- [2][]any{a, b}
	}()
	var got [2][]any
	select {
	case got = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Object has not returned after a minute on cyclic values")
	}
	a, b := got[0], got[1]
	for what, pair := range map[string][2]string{
		"pointer":   {a[0].(*tree).Label, b[0].(*tree).Label},
		"interface": {a[1].(*tree).Label, b[1].(*tree).Label},
		"map":       {a[2].(*tree).Label, b[2].(*tree).Label},
		"slice":     {a[3].(*forest).Kids[0].Label, b[3].(*forest).Kids[0].Label},
		"json":      {a[4].(*unstructured.Unstructured).Object["spec"].(map[string]any)["field"].(string), b[4].(*unstructured.Unstructured).Object["spec"].(map[string]any)["field"].(string)},
	} {
		if !sameBytes(pair[0], pair[1]) {
			t.Errorf("%s: %q is not shared", what, pair[0])
		}
	}
	if p := a[0].(*tree); p.Next != p || len(p.Children) != 3 || p.Children[2] != p {
		t.Error("the pointer cycle was changed")
	}
}
