package testobjects

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/randfill"
)

// Random makes randomly filled typed objects: apimachinery's fuzzer with
// its metadata functions (nil, empty and filled slices and maps), and then
// times the fuzzer never gives. The fuzzer leaves every *metav1.Time and
// *metav1.MicroTime nil (a deletionTimestamp, a Pod's startTime, a
// Lease's acquireTime) and gives the times it sets whole seconds in the
// local zone; Random sets three pointers in four and gives every time
// nanoseconds (or, now and then, the zero time) and one of UTC, the local
// zone or a fixed one, as a time built in the process (time.Now(), leader
// election's Leases) has them.
// Its quantities are in the form decoding gives them. Compare with a
// protobuf round trip through ProtobufForm.
//
// A Random is seeded: the same seed makes the same objects.
type Random struct {
	f *randfill.Filler
	r *rand.Rand
}

// NewRandom returns a Random seeded with seed.
func NewRandom(seed int64) *Random {
	return &Random{
		f: fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), serializer.NewCodecFactory(runtime.NewScheme())),
		r: rand.New(rand.NewSource(seed + 1)),
	}
}

// RandomKinds is how many kinds Object cycles through.
const RandomKinds = 7

// Object returns a new random object of the i-th of RandomKinds kinds
// (i modulo RandomKinds): RoleBinding, ConfigMap, Secret,
// PartialObjectMetadata, Lease, Pod, Event. Its TypeMeta is empty, as
// in a list, and its namespace, name and UID are set (one object per i).
func (g *Random) Object(i int) runtime.Object {
	var obj runtime.Object
	switch i % RandomKinds {
	case 0:
		obj = &rbacv1.RoleBinding{}
	case 1:
		obj = &corev1.ConfigMap{}
	case 2:
		obj = &corev1.Secret{}
	case 3:
		obj = &metav1.PartialObjectMetadata{}
	case 4:
		obj = &coordinationv1.Lease{}
	case 5:
		obj = &corev1.Pod{}
	default:
		obj = &corev1.Event{}
	}
	g.Fill(obj)
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	m.SetNamespace(fmt.Sprintf("ns-%d", i%3))
	m.SetName(fmt.Sprintf("random-%07d", i))
	m.SetUID(types.UID(fmt.Sprintf("random-uid-%d", i)))
	return obj
}

// Fill fills obj, a pointer, with the fuzzer and then sets its times and
// quantities (see Random and finish).
func (g *Random) Fill(obj any) {
	g.f.Fill(obj)
	g.finish(reflect.ValueOf(obj))
}

var (
	timePointerType      = reflect.TypeFor[*metav1.Time]()
	microTimePointerType = reflect.TypeFor[*metav1.MicroTime]()
	fixedZone            = time.FixedZone("east", 5*3600+30*60)
)

// finish walks v: it gives every metav1.Time and MicroTime a random time,
// setting nil pointers to them three times in four, and puts every
// resource.Quantity in the form decoding gives it (canonical, its string
// cached), as an informer's objects have them: the fuzzer's are not, and
// the first String call on one would change it.
func (g *Random) finish(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			if (v.Type() == timePointerType || v.Type() == microTimePointerType) && v.CanSet() && g.r.Intn(4) != 0 {
				v.Set(reflect.New(v.Type().Elem()))
			} else {
				return
			}
		}
		g.finish(v.Elem())
	case reflect.Struct:
		switch v.Type() {
		case timeType:
			v.Set(reflect.ValueOf(metav1.Time{Time: g.time()}))
			return
		case microTimeType:
			v.Set(reflect.ValueOf(metav1.MicroTime{Time: g.time()}))
			return
		case quantityType:
			v.Set(reflect.ValueOf(decodedQuantity(v.Interface().(resource.Quantity))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				g.finish(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			g.finish(v.Index(i))
		}
	case reflect.Map:
		// Sorted keys: the same seed makes the same objects.
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			g.finish(e)
			v.SetMapIndex(k, e)
		}
	}
}

// time returns a time after 1970 with nanoseconds or, one time in sixteen,
// the zero time; in UTC, the local zone or a fixed zone.
func (g *Random) time() time.Time {
	t := time.Unix(1+g.r.Int63n(1<<33), g.r.Int63n(1e9))
	if g.r.Intn(16) == 0 {
		t = time.Time{}
	}
	switch g.r.Intn(3) {
	case 0:
		return t.UTC()
	case 1:
		return t
	default:
		return t.In(fixedZone)
	}
}
