package testobjects

import (
	"encoding/json"
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	sigsjson "sigs.k8s.io/json"
)

// GizmoGVK is the kind of Gizmo, a custom resource of the example.com group.
var GizmoGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gizmo"}

// AddGizmo registers Gizmo and GizmoList in s under GizmoGVK's group
// version, as a kubebuilder project's AddToScheme does.
func AddGizmo(s *runtime.Scheme) error {
	gv := GizmoGVK.GroupVersion()
	s.AddKnownTypes(gv, &Gizmo{}, &GizmoList{})
	metav1.AddToGroupVersion(s, gv)
	return nil
}

// Gizmo is a typed custom resource as kubebuilder writes them: a Go struct
// with JSON tags and generated-style DeepCopy methods, and no protobuf, so
// package codec refuses it and an encoded store keeps it decoded. Its spec
// holds what such types hold: maps, slices, pointers, nested structs, a
// pointer time, quantities, a RawExtension and free-form JSON
// (x-kubernetes-preserve-unknown-fields).
type Gizmo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GizmoSpec   `json:"spec"`
	Status GizmoStatus `json:"status,omitempty"`
}

// GizmoSpec is a Gizmo's desired state.
type GizmoSpec struct {
	Replicas *int32                       `json:"replicas,omitempty"`
	Paused   bool                         `json:"paused,omitempty"`
	Selector map[string]string            `json:"selector,omitempty"`
	Tags     []string                     `json:"tags,omitempty"`
	Ports    []GizmoPort                  `json:"ports,omitempty"`
	Limits   map[string]resource.Quantity `json:"limits,omitempty"`
	Size     resource.Quantity            `json:"size"`
	Deadline *metav1.Time                 `json:"deadline,omitempty"`
	Template *GizmoTemplate               `json:"template,omitempty"`
	Config   runtime.RawExtension         `json:"config,omitempty"`
	Extra    map[string]any               `json:"extra,omitempty"`
}

// GizmoPort is an element of a Gizmo's list of ports.
type GizmoPort struct {
	Name     string   `json:"name"`
	Port     int32    `json:"port"`
	Protocol *string  `json:"protocol,omitempty"`
	Hosts    []string `json:"hosts,omitempty"`
}

// GizmoTemplate is a nested struct behind a pointer, holding itself.
type GizmoTemplate struct {
	Labels map[string]string   `json:"labels,omitempty"`
	Env    map[string][]string `json:"env,omitempty"`
	Weight float64             `json:"weight,omitempty"`
	Nested *GizmoTemplate      `json:"nested,omitempty"`
}

// GizmoStatus is a Gizmo's observed state.
type GizmoStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Phase              string             `json:"phase,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	LastProbe          *metav1.MicroTime  `json:"lastProbe,omitempty"`
}

// GizmoList is a list of Gizmos.
type GizmoList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gizmo `json:"items"`
}

// DeepCopyInto copies g into out, sharing nothing.
func (g *Gizmo) DeepCopyInto(out *Gizmo) {
	*out = *g
	out.TypeMeta = g.TypeMeta
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	g.Spec.DeepCopyInto(&out.Spec)
	g.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of g sharing nothing with it.
func (g *Gizmo) DeepCopy() *Gizmo {
	if g == nil {
		return nil
	}
	out := new(Gizmo)
	g.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (g *Gizmo) DeepCopyObject() runtime.Object {
	if c := g.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies s into out, sharing nothing.
func (s *GizmoSpec) DeepCopyInto(out *GizmoSpec) {
	*out = *s
	if s.Replicas != nil {
		out.Replicas = new(int32)
		*out.Replicas = *s.Replicas
	}
	if s.Selector != nil {
		out.Selector = make(map[string]string, len(s.Selector))
		for k, v := range s.Selector {
			out.Selector[k] = v
		}
	}
	if s.Tags != nil {
		out.Tags = make([]string, len(s.Tags))
		copy(out.Tags, s.Tags)
	}
	if s.Ports != nil {
		out.Ports = make([]GizmoPort, len(s.Ports))
		for i := range s.Ports {
			s.Ports[i].DeepCopyInto(&out.Ports[i])
		}
	}
	if s.Limits != nil {
		out.Limits = make(map[string]resource.Quantity, len(s.Limits))
		for k, v := range s.Limits {
			out.Limits[k] = v.DeepCopy()
		}
	}
	out.Size = s.Size.DeepCopy()
	if s.Deadline != nil {
		out.Deadline = s.Deadline.DeepCopy()
	}
	if s.Template != nil {
		out.Template = new(GizmoTemplate)
		s.Template.DeepCopyInto(out.Template)
	}
	s.Config.DeepCopyInto(&out.Config)
	if s.Extra != nil {
		out.Extra = runtime.DeepCopyJSON(s.Extra)
	}
}

// DeepCopyInto copies p into out, sharing nothing.
func (p *GizmoPort) DeepCopyInto(out *GizmoPort) {
	*out = *p
	if p.Protocol != nil {
		out.Protocol = new(string)
		*out.Protocol = *p.Protocol
	}
	if p.Hosts != nil {
		out.Hosts = make([]string, len(p.Hosts))
		copy(out.Hosts, p.Hosts)
	}
}

// DeepCopyInto copies t into out, sharing nothing.
func (t *GizmoTemplate) DeepCopyInto(out *GizmoTemplate) {
	*out = *t
	if t.Labels != nil {
		out.Labels = make(map[string]string, len(t.Labels))
		for k, v := range t.Labels {
			out.Labels[k] = v
		}
	}
	if t.Env != nil {
		out.Env = make(map[string][]string, len(t.Env))
		for k, v := range t.Env {
			var c []string
			if v != nil {
				c = make([]string, len(v))
				copy(c, v)
			}
			out.Env[k] = c
		}
	}
	if t.Nested != nil {
		out.Nested = new(GizmoTemplate)
		t.Nested.DeepCopyInto(out.Nested)
	}
}

// DeepCopyInto copies s into out, sharing nothing.
func (s *GizmoStatus) DeepCopyInto(out *GizmoStatus) {
	*out = *s
	if s.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i := range s.Conditions {
			s.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
	if s.LastProbe != nil {
		out.LastProbe = s.LastProbe.DeepCopy()
	}
}

// DeepCopyInto copies l into out, sharing nothing.
func (l *GizmoList) DeepCopyInto(out *GizmoList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Gizmo, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopyObject implements runtime.Object.
func (l *GizmoList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := new(GizmoList)
	l.DeepCopyInto(out)
	return out
}

// Gizmo returns a new random Gizmo, numbered i as Object numbers its
// objects (namespace ns-<i%3>, name random-<i>, UID random-uid-<i>), in
// the form a client decodes from the API server's JSON: times in whole
// seconds (MicroTimes in whole microseconds) in the local zone, free-form
// integers as int64, quantities parsed. Its TypeMeta is set one time in
// two (items of a CR list carry it; a typed list's items do not).
func (g *Random) Gizmo(i int) *Gizmo {
	var meta metav1.ObjectMeta
	g.Fill(&meta)
	meta.ManagedFields = nil // the fuzzer's fieldsV1 are not JSON
	setIdentity(&meta, i)
	obj := &Gizmo{ObjectMeta: meta, Spec: g.gizmoSpec(), Status: g.gizmoStatus()}
	if g.r.Intn(2) == 0 {
		obj.SetGroupVersionKind(GizmoGVK)
	}
	out := &Gizmo{}
	JSONRoundTrip(obj, out)
	return out
}

func setIdentity(m metav1.Object, i int) {
	m.SetNamespace(fmt.Sprintf("ns-%d", i%3))
	m.SetName(fmt.Sprintf("random-%07d", i))
	m.SetUID(types.UID(fmt.Sprintf("random-uid-%d", i)))
}

// JSONRoundTrip encodes in as JSON and decodes that into out as
// apimachinery's JSON serializer does (case-sensitive, integers in
// free-form fields as int64).
func JSONRoundTrip(in, out any) {
	data, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("encoding %T: %v", in, err))
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, out); err != nil {
		panic(fmt.Sprintf("decoding %T from %s: %v", out, data, err))
	}
}

var quantities = []string{"0", "1", "100m", "1.5", "2Gi", "512Mi", "1e3", "250u", "3k", "7Ei", "-4", "0.001"}

func (g *Random) quantity() resource.Quantity {
	return resource.MustParse(quantities[g.r.Intn(len(quantities))])
}

// word returns a short random string, empty one time in eight, with
// characters JSON escapes one time in five.
func (g *Random) word() string {
	switch g.r.Intn(8) {
	case 0:
		return ""
	case 1:
		return []string{"ü", "日本", "a\"b", "<&>", "\\", "tab\t", "\u2028"}[g.r.Intn(7)]
	}
	return fmt.Sprintf("%c%d", 'a'+rune(g.r.Intn(26)), g.r.Intn(100))
}

func (g *Random) stringMap() map[string]string {
	switch g.r.Intn(4) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	m := map[string]string{}
	for range 1 + g.r.Intn(4) {
		m[g.word()] = g.word()
	}
	return m
}

func (g *Random) strings() []string {
	switch g.r.Intn(4) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	s := make([]string, 1+g.r.Intn(4))
	for i := range s {
		s[i] = g.word()
	}
	return s
}

func (g *Random) gizmoSpec() GizmoSpec {
	var s GizmoSpec
	if g.r.Intn(3) != 0 {
		n := int32(g.r.Intn(10))
		s.Replicas = &n
	}
	s.Paused = g.r.Intn(2) == 0
	s.Selector = g.stringMap()
	s.Tags = g.strings()
	for range g.r.Intn(4) {
		p := GizmoPort{Name: g.word(), Port: int32(g.r.Intn(65536)), Hosts: g.strings()}
		if g.r.Intn(2) == 0 {
			proto := []string{"TCP", "UDP", ""}[g.r.Intn(3)]
			p.Protocol = &proto
		}
		s.Ports = append(s.Ports, p)
	}
	if g.r.Intn(3) != 0 {
		s.Limits = map[string]resource.Quantity{}
		for range g.r.Intn(3) {
			s.Limits[g.word()] = g.quantity()
		}
	}
	s.Size = g.quantity()
	if g.r.Intn(4) != 0 {
		s.Deadline = &metav1.Time{Time: g.time()}
	}
	s.Template = g.template(3)
	switch g.r.Intn(3) {
	case 0:
	case 1:
		s.Config.Raw = []byte(`{"mode":"fast","retries":3,"ratio":0.25,"on":true,"nothing":null,"list":[1,"two",{}]}`)
	default:
		data, err := json.Marshal(g.jsonObject(2))
		if err != nil {
			panic(err)
		}
		s.Config.Raw = data
	}
	if g.r.Intn(3) != 0 {
		s.Extra = g.jsonObject(3)
	}
	return s
}

func (g *Random) template(depth int) *GizmoTemplate {
	if depth == 0 || g.r.Intn(3) == 0 {
		return nil
	}
	t := &GizmoTemplate{Labels: g.stringMap(), Weight: float64(g.r.Intn(1000)) / 8, Nested: g.template(depth - 1)}
	if g.r.Intn(2) == 0 {
		t.Env = map[string][]string{}
		for range g.r.Intn(3) {
			t.Env[g.word()] = g.strings()
		}
	}
	return t
}

func (g *Random) gizmoStatus() GizmoStatus {
	s := GizmoStatus{ObservedGeneration: g.r.Int63n(100), Phase: g.word()}
	for range g.r.Intn(3) {
		s.Conditions = append(s.Conditions, metav1.Condition{
			Type: "T" + g.word(), Status: metav1.ConditionStatus([]string{"True", "False", "Unknown"}[g.r.Intn(3)]),
			ObservedGeneration: g.r.Int63n(10), LastTransitionTime: metav1.Time{Time: g.time()}, Reason: "R" + g.word(), Message: g.word(),
		})
	}
	if g.r.Intn(2) == 0 {
		s.LastProbe = &metav1.MicroTime{Time: g.time()}
	}
	return s
}

// jsonValue returns a random JSON value: int64, float64, string, bool,
// nil, or, depth permitting, a map or slice, empty or not. (A float64 JSON
// writes without a fraction or exponent decodes as an int64: callers take
// the JSON round trip's form.)
func (g *Random) jsonValue(depth int) any {
	n := 7
	if depth > 0 {
		n = 9
	}
	switch g.r.Intn(n) {
	case 0:
		return []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 53, 1<<53 + 1, 42}[g.r.Intn(8)]
	case 1:
		return []float64{0.5, -3.25, 1e-7, 1.5e300, math.SmallestNonzeroFloat64, 0.1, 1e21 + 0.5*1e6}[g.r.Intn(7)]
	case 2, 3:
		return g.word()
	case 4:
		return g.r.Intn(2) == 0
	case 5:
		return nil
	case 6:
		return g.r.Int63n(1 << 40)
	case 7:
		return g.jsonObject(depth - 1)
	default:
		return g.jsonArray(depth - 1)
	}
}

func (g *Random) jsonObject(depth int) map[string]any {
	m := map[string]any{}
	for range g.r.Intn(4) {
		m[g.word()] = g.jsonValue(depth)
	}
	return m
}

func (g *Random) jsonArray(depth int) []any {
	s := make([]any, g.r.Intn(4))
	for i := range s {
		s[i] = g.jsonValue(depth)
	}
	return s
}

// UnstructuredGizmo returns a new random Gizmo as a dynamic client decodes
// it: unstructured, with its apiVersion and kind, metadata and random
// free-form content (int64s, float64s, strings, bools, nils, maps and
// slices nested, empty or not), numbered i as Object numbers its objects.
func (g *Random) UnstructuredGizmo(i int) *unstructured.Unstructured {
	typed := g.Gizmo(i)
	typed.SetGroupVersionKind(GizmoGVK)
	data, err := json.Marshal(typed)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		panic(err)
	}
	free := g.jsonObject(3)
	free["deep"] = map[string]any{"empty map": map[string]any{}, "empty list": []any{}, "nil": nil,
		"list": []any{map[string]any{}, []any{}, nil, int64(-7), 2.5, "s", false}}
	u.Object["data"] = free
	out := &unstructured.Unstructured{}
	JSONRoundTrip(u, out) // through Unstructured's UnmarshalJSON
	return out
}
