package informer

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// resourceOf guesses the group, version and resource of an informer's
// objects for metric labels: from the object's kind if set (unstructured and
// metadata-only objects), else from client-go's scheme; the resource name is
// the usual plural of the kind.
func resourceOf(obj runtime.Object, s *runtime.Scheme) schema.GroupVersionResource {
	if obj == nil {
		return schema.GroupVersionResource{Resource: "unknown"}
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" && s != nil {
		if kinds, _, err := s.ObjectKinds(obj); err == nil && len(kinds) > 0 {
			gvk = kinds[0]
		}
	}
	if gvk.Kind == "" {
		gvk.Kind = reflect.Indirect(reflect.ValueOf(obj)).Type().Name()
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	plural.Resource = strings.ToLower(plural.Resource)
	return plural
}

// defaultScheme is the scheme resourceOf uses for typed objects.
var defaultScheme = scheme.Scheme
