package testobjects

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProtobufForm of a time or quantity is what apimachinery's protobuf round
// trip of it gives, zero times in a zone and sub-second parts included.
func TestProtobufFormIsTheProtobufRoundTrip(t *testing.T) {
	zone := time.FixedZone("X", 3600)
	times := []time.Time{
		{},
		time.Time{}.In(zone),
		time.Unix(0, 0),
		time.Unix(1700000000, 123456789).In(zone),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	type pb interface {
		Marshal() ([]byte, error)
	}
	roundTrip := func(in pb, out interface{ Unmarshal([]byte) error }) {
		t.Helper()
		data, err := in.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := out.Unmarshal(data); err != nil {
			t.Fatal(err)
		}
	}
	for _, tm := range times {
		in := metav1.Time{Time: tm}
		var want metav1.Time
		roundTrip(&in, &want)
		ProtobufForm(reflect.ValueOf(&in))
		if !reflect.DeepEqual(in, want) {
			t.Errorf("Time %v: ProtobufForm gives %v (%v), the round trip %v (%v)", tm, in, in.Location(), want, want.Location())
		}

		inMicro := metav1.MicroTime{Time: tm}
		var wantMicro metav1.MicroTime
		roundTrip(&inMicro, &wantMicro)
		ProtobufForm(reflect.ValueOf(&inMicro))
		if !reflect.DeepEqual(inMicro, wantMicro) {
			t.Errorf("MicroTime %v: ProtobufForm gives %v (%v), the round trip %v (%v)", tm, inMicro, inMicro.Location(), wantMicro, wantMicro.Location())
		}
	}
	for _, s := range []string{"0", "1m", "1000E", "100Mi", "0.5", "-3k"} {
		in := resource.MustParse(s)
		var want resource.Quantity
		roundTrip(&in, &want)
		ProtobufForm(reflect.ValueOf(&in))
		if in.Cmp(want) != 0 || in.String() != want.String() {
			t.Errorf("Quantity %s: ProtobufForm gives %s, the round trip %s", s, in.String(), want.String())
		}
	}
}
