package informer

import (
	"testing"

	toolscache "k8s.io/client-go/tools/cache"
)

type namedHandler struct{}

func (namedHandler) onAdd(any)         {}
func (namedHandler) onUpdate(any, any) {}

// TestHandlerNames pins the handler label that docs/observability.md
// describes.
func TestHandlerNames(t *testing.T) {
	const pkg = "github.com/leaninformer/leaninformer/pkg/informer"
	var h namedHandler
	for _, tc := range []struct {
		name    string
		handler toolscache.ResourceEventHandler
		want    string
	}{
		{"a type", &recorder{}, pkg + ".recorder"},
		{"closures", toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) {}, UpdateFunc: func(any, any) {}}, pkg + ".TestHandlerNames"},
		{"method values", &toolscache.ResourceEventHandlerFuncs{AddFunc: h.onAdd, UpdateFunc: h.onUpdate}, pkg + ".namedHandler"},
		{"from two places", toolscache.ResourceEventHandlerFuncs{AddFunc: h.onAdd, DeleteFunc: func(any) {}},
			pkg + ".namedHandler.onAdd-fm+" + pkg + ".TestHandlerNames.func3"},
		{"nil", nil, "<nil>"},
	} {
		if got := handlerName(tc.handler); got != tc.want {
			t.Errorf("%s: handlerName = %q, want %q", tc.name, got, tc.want)
		}
	}
}
