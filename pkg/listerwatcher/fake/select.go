package fake

import (
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// selection is the label and field selectors of a request; nil selects
// every object.
type selection struct {
	labels labels.Selector
	fields fields.Selector
	// fieldSet is the server's WithFieldSet function; nil: only
	// metadata.name and metadata.namespace.
	fieldSet func(runtime.Object) fields.Set
	// fieldLabels are the fields fieldSet gives (those of the zero item).
	fieldLabels fields.Set
}

// parseSelection parses a request's selectors as the API server decodes its
// query parameters: an unparsable one is a 400 BadRequest carrying the
// parser's message.
func (s *Server) parseSelection(opts metav1.ListOptions) (*selection, error) {
	ls, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	fs, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if ls.Empty() && fs.Empty() {
		return nil, nil
	}
	return &selection{labels: ls, fields: fs, fieldSet: s.fieldSet, fieldLabels: s.fieldLabels}, nil
}

// checkFields refuses, as a 400 BadRequest with the API server's message, a
// field selector on a field the resource does not index. The server checks
// it after validating the other options. The fields every resource indexes,
// and the only ones of a resource without field label conversions such as
// ConfigMap, are metadata.name and metadata.namespace; WithFieldSet adds
// others, refused then with the message of a kind's own conversion.
func (sel *selection) checkFields() error {
	if sel == nil {
		return nil
	}
	if sel.fieldSet == nil {
		if _, err := sel.fields.Transform(runtime.DefaultMetaV1FieldSelectorConversion); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		return nil
	}
	for _, r := range sel.fields.Requirements() {
		if _, ok := sel.fieldLabels[r.Field]; !ok && r.Field != "metadata.name" && r.Field != "metadata.namespace" {
			return apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
		}
	}
	return nil
}

// matches reports whether sel selects obj.
func (sel *selection) matches(obj runtime.Object) bool {
	if sel == nil {
		return true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if !sel.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	set := fields.Set{}
	if sel.fieldSet != nil {
		maps.Copy(set, sel.fieldSet(obj))
	}
	set["metadata.name"], set["metadata.namespace"] = m.GetName(), m.GetNamespace()
	return sel.fields.Matches(set)
}
