package testobjects

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// Fixture is one of the JSON fixtures k8s.io/api tests its round trips
// with.
type Fixture struct {
	Name string // the file name, e.g. core.v1.Pod.json
	JSON []byte
}

// APIFixtures returns the JSON fixtures of k8s.io/api (testdata/HEAD in
// the module cache): one object of every kind of every API group, every
// field set.
func APIFixtures(tb testing.TB) []Fixture {
	tb.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/api").Output()
	if err != nil {
		tb.Fatalf("locate k8s.io/api in the module cache: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "testdata", "HEAD", "*.json"))
	if err != nil || len(files) < 150 {
		tb.Fatalf("found %d k8s.io/api fixtures (%v), want the ~190 of v0.37", len(files), err)
	}
	fixtures := make([]Fixture, 0, len(files))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		fixtures = append(fixtures, Fixture{Name: filepath.Base(file), JSON: data})
	}
	return fixtures
}

// DecodeTyped decodes JSON into the typed object of client-go's scheme
// that its apiVersion and kind name, TypeMeta set.
func DecodeTyped(data []byte) (runtime.Object, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	return obj, err
}

// DecodeUnstructured decodes JSON as an unstructured object.
func DecodeUnstructured(data []byte) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(data)
}

// DecodePartial decodes JSON into the metadata-only view of its typed
// object, as controller-runtime's metadata informers store it (TypeMeta
// set).
func DecodePartial(data []byte) (runtime.Object, error) {
	obj, err := DecodeTyped(data)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	accessor, ok := m.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, errors.New("no ObjectMeta")
	}
	om, ok := accessor.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return nil, errors.New("no *metav1.ObjectMeta")
	}
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: *om}, nil
}
