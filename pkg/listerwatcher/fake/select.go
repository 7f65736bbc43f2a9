package fake

import (
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
}

// parseSelection parses a request's selectors as the API server decodes its
// query parameters: an unparsable one is a 400 BadRequest carrying the
// parser's message.
func parseSelection(opts metav1.ListOptions) (*selection, error) {
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
	return &selection{labels: ls, fields: fs}, nil
}

// checkFields refuses, as a 400 BadRequest with the API server's message, a
// field selector on a field the resource does not index. The server checks
// it after validating the other options. The fields every resource indexes,
// and the only ones of a resource without field label conversions such as
// ConfigMap, are metadata.name and metadata.namespace.
func (sel *selection) checkFields() error {
	if sel == nil {
		return nil
	}
	if _, err := sel.fields.Transform(runtime.DefaultMetaV1FieldSelectorConversion); err != nil {
		return apierrors.NewBadRequest(err.Error())
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
	return sel.fields.Matches(fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()})
}
