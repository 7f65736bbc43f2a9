package intern

import (
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A plan says where the strings of a value of one type are: the string
// fields to intern, and the pointers, slices, maps and interfaces to follow
// to more of them. Structs embedded by value are flattened into their
// parent's plan, so walking an ObjectMeta inside a Pod costs no call.
// Plans are built once per type by reflection; walking them needs none
// except for maps and interfaces.
type plan struct {
	ops   []op
	size  uintptr // of the type, to step through slices
	ready bool    // ops is complete (false while a recursive type is built)
}

type opKind uint8

const (
	opString    opKind = iota // a string (or a named string type)
	opPointer                 // a pointer: follow it with elem
	opSlice                   // a slice: walk each element with elem
	opMap                     // a map of type typ
	opInterface               // an interface of type typ
	opOwner                   // an object's UID: the owner of the strings that follow
)

type op struct {
	kind opKind
	off  uintptr      // from the start of the value
	elem *plan        // opPointer, opSlice
	typ  reflect.Type // opSlice, opMap, opInterface
}

// minTrim is the spare capacity, in bytes, from which a slice is copied to
// one of its exact length. Decoders grow slices by appending: five RoleBinding
// subjects sit in room for eight.
const minTrim = 32

// unique fields: values that identify one object, never shared between
// objects; interning them would cost a table entry each and save nothing.
var uniqueFields = map[reflect.Type]map[string]bool{
	objectMetaType:                     {"Name": true, "UID": true, "ResourceVersion": true, "SelfLink": true},
	reflect.TypeFor[metav1.ListMeta](): {"ResourceVersion": true, "Continue": true, "SelfLink": true},
}

var (
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	uidOffset      = func() uintptr { f, _ := objectMetaType.FieldByName("UID"); return f.Offset }()
)

// opaque types hold no string worth interning: a Quantity's Format is one
// of its package's constants, which cost no memory as they are.
var opaque = map[reflect.Type]bool{
	reflect.TypeFor[resource.Quantity](): true,
}

var (
	// plans holds the finished plans by type: read without locks.
	plans sync.Map // reflect.Type -> *plan
	// building serialises plan construction; recursive types refer to
	// their own plan while it is being built.
	building sync.Mutex
)

// planFor returns the plan of t, building it (and the plans it refers to)
// the first time.
func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	building.Lock()
	defer building.Unlock()
	b := planBuilder{pending: map[reflect.Type]*plan{}}
	p := b.plan(t)
	for typ, built := range b.pending {
		plans.Store(typ, built)
	}
	return p
}

type planBuilder struct {
	// pending holds the plans built in this call, published together at
	// the end so that no reader sees one whose recursion is unfinished.
	pending map[reflect.Type]*plan
}

func (b *planBuilder) plan(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	if p, ok := b.pending[t]; ok {
		return p // recursive: filled in by the caller up the stack
	}
	p := &plan{size: t.Size()}
	b.pending[t] = p
	p.ops = b.ops(t, 0)
	p.ready = true
	return p
}

// ops returns the operations that walk a value of type t at offset off.
func (b *planBuilder) ops(t reflect.Type, off uintptr) []op {
	switch t.Kind() {
	case reflect.String:
		return []op{{kind: opString, off: off}}
	case reflect.Struct:
		if opaque[t] {
			return nil
		}
		var ops []op
		// An object's strings are counted as its UID's (see Table):
		// the UID is read first, before the TypeMeta beside it.
		for i := range t.NumField() {
			if f := t.Field(i); f.Type == objectMetaType {
				ops = append(ops, op{kind: opOwner, off: off + f.Offset + uidOffset})
			}
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || uniqueFields[t][f.Name] {
				continue
			}
			ops = append(ops, b.ops(f.Type, off+f.Offset)...)
		}
		return ops
	case reflect.Array:
		var ops []op
		for i := range t.Len() {
			ops = append(ops, b.ops(t.Elem(), off+uintptr(i)*t.Elem().Size())...)
		}
		return ops
	case reflect.Pointer:
		if elem := b.plan(t.Elem()); mayHoldStrings(elem) {
			return []op{{kind: opPointer, off: off, elem: elem}}
		}
	case reflect.Slice:
		if elem := b.plan(t.Elem()); mayHoldStrings(elem) {
			return []op{{kind: opSlice, off: off, elem: elem, typ: t}}
		}
	case reflect.Map:
		if t.Key().Kind() == reflect.String || mayHoldStrings(b.plan(t.Elem())) {
			return []op{{kind: opMap, off: off, typ: t}}
		}
	case reflect.Interface:
		return []op{{kind: opInterface, off: off, typ: t}}
	}
	return nil // numbers, bools, byte slices, channels, funcs, ...
}

// mayHoldStrings reports whether a plan may find strings: it has
// operations, or it is still being built (a recursive type).
func mayHoldStrings(p *plan) bool {
	return !p.ready || len(p.ops) > 0
}

// A walk stops going deeper past maxDepth levels (pointers, slices, maps
// and interfaces walked into) and stops going anywhere after maxSteps of
// them: no decoded object comes near either (JSON decoding stops at 10,000
// levels; an object of etcd's 1.5 MiB holds far fewer containers), but one
// built in the process may point back at itself, directly or through a
// slice, map or interface, and following it would never end or, branching,
// not in any useful time. Strings not reached are left as they are.
const (
	maxDepth = 10_000
	maxSteps = 1 << 20
)

// walker is one Object call's walk through a value.
type walker struct {
	t            *Table
	depth, steps int
	owner        owner // of the strings met: the object walked through
}

// str interns s as a string of the object walked through.
func (w *walker) str(s string) string { return w.t.intern(s, w.owner) }

func (w *walker) restoreOwner(o owner) { w.owner = o }

// enter is called before walking into a pointer, slice, map or interface,
// and reports whether to; each enter that returns true needs a leave.
func (w *walker) enter() bool {
	if w.depth >= maxDepth || w.steps >= maxSteps {
		return false
	}
	w.depth++
	w.steps++
	return true
}

func (w *walker) leave() { w.depth-- }

// walk interns the strings of the value at ptr, of the type p was built for.
// An object met on the way (an item of a list) owns the strings after its
// UID, until the walk leaves it.
func (w *walker) walk(ptr unsafe.Pointer, p *plan) {
	saved := w.owner
	for i := range p.ops {
		o := &p.ops[i]
		field := unsafe.Add(ptr, o.off)
		switch o.kind {
		case opOwner:
			if uid := *(*string)(field); uid != "" {
				w.owner = w.t.ownerOf(uid)
			}
		case opString:
			s := (*string)(field)
			if c := w.str(*s); unsafe.StringData(c) != unsafe.StringData(*s) {
				*s = c
			}
		case opPointer:
			if elem := *(*unsafe.Pointer)(field); elem != nil && w.enter() {
				w.walk(elem, o.elem)
				w.leave()
			}
		case opSlice:
			s := (*sliceHeader)(field)
			if uintptr(s.cap-s.len)*o.elem.size >= minTrim {
				trim(reflect.NewAt(o.typ, field).Elem())
			}
			if s.len > 0 && w.enter() {
				data := s.data
				for j := range s.len {
					w.walk(unsafe.Add(data, uintptr(j)*o.elem.size), o.elem)
				}
				w.leave()
			}
		case opMap:
			w.walkMap(reflect.NewAt(o.typ, field).Elem())
		case opInterface:
			w.walkInterface(reflect.NewAt(o.typ, field).Elem())
		}
	}
	w.owner = saved
}

// trim replaces the slice s by a copy without spare capacity, as DeepCopy
// would make it.
func trim(s reflect.Value) {
	c := reflect.MakeSlice(s.Type(), s.Len(), s.Len())
	reflect.Copy(c, s)
	s.Set(c)
}

// sliceHeader is the memory layout of every slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

var stringMapType = reflect.TypeFor[map[string]string]()

// walkMap interns the keys and values of the map m. Assigning to an existing
// key replaces the key the map holds with the one given, which is how the
// canonical key gets in.
func (w *walker) walkMap(m reflect.Value) {
	if m.IsNil() {
		return
	}
	switch m.Type() {
	case stringMapType: // labels, annotations, data: the common case, without reflection
		mm := m.Interface().(map[string]string)
		for k, v := range mm {
			ck, cv := w.str(k), w.str(v)
			if unsafe.StringData(ck) != unsafe.StringData(k) || unsafe.StringData(cv) != unsafe.StringData(v) {
				mm[ck] = cv
			}
		}
		return
	case jsonObjectType:
		w.jsonObject(m.Interface().(map[string]any), false)
		return
	}
	kt, et := m.Type().Key(), m.Type().Elem()
	stringKeys := kt.Kind() == reflect.String
	elem := planFor(et)
	if !stringKeys && len(elem.ops) == 0 || !w.enter() {
		return
	}
	defer w.leave()
	iter := m.MapRange()
	for iter.Next() {
		k, v := iter.Key(), iter.Value()
		changed := false
		if stringKeys {
			s := k.String()
			if c := w.str(s); unsafe.StringData(c) != unsafe.StringData(s) {
				k, changed = reflect.ValueOf(c).Convert(kt), true
			}
		}
		if len(elem.ops) > 0 {
			// Map elements are not addressable: walk a copy and store it.
			c := reflect.New(et).Elem()
			c.Set(v)
			w.walk(c.Addr().UnsafePointer(), elem)
			v, changed = c, true
		}
		if changed {
			m.SetMapIndex(k, v)
		}
	}
}

var jsonObjectType = reflect.TypeFor[map[string]any]()

// walkInterface interns what the interface v holds: a struct behind a
// pointer, a map, a slice's elements or, by replacing it, a string.
func (w *walker) walkInterface(v reflect.Value) {
	if v.IsNil() {
		return
	}
	switch x := v.Interface().(type) {
	case string:
		if c := w.str(x); unsafe.StringData(c) != unsafe.StringData(x) {
			v.Set(reflect.ValueOf(c))
		}
		return
	case map[string]any:
		w.jsonObject(x, false)
		return
	case []any:
		w.jsonArray(x)
		return
	}
	e := v.Elem()
	switch e.Kind() {
	case reflect.Pointer:
		if !e.IsNil() && w.enter() {
			w.walk(e.UnsafePointer(), planFor(e.Type().Elem()))
			w.leave()
		}
	case reflect.Map:
		w.walkMap(e)
	case reflect.Slice:
		if p := planFor(e.Type().Elem()); len(p.ops) > 0 && e.Len() > 0 && w.enter() {
			for j := range e.Len() {
				w.walk(e.Index(j).Addr().UnsafePointer(), p)
			}
			w.leave()
		}
	}
}
