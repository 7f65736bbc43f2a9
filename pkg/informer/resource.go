package informer

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// resourceOf finds the group, version and resource of an informer's objects
// for metric labels: the kind is the object's if set (unstructured and
// metadata-only objects), else s's; the resource is the one mapper maps the
// kind to (controller-runtime's knows its CRDs' plurals) or, without a
// mapper or a mapping, the usual plural of the kind.
func resourceOf(obj runtime.Object, s *runtime.Scheme, mapper meta.RESTMapper) schema.GroupVersionResource {
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
	if mapper != nil {
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return m.Resource
		}
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	plural.Resource = strings.ToLower(plural.Resource)
	return plural
}

// defaultScheme is the scheme resourceOf uses for typed objects.
var defaultScheme = scheme.Scheme
