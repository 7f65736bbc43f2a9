package informer

import (
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/intern"
)

// WithInterning makes the informer intern every object it lists or watches
// before storing it, with the process-wide table of package intern: equal
// strings of all stored objects (label and annotation keys and values,
// namespaces, owner references, managedFields' managers and API versions,
// images, ...) then share one instance, and slices lose their spare
// capacity. Stored objects stay ordinary API objects.
//
// It runs after the transform set with SetTransform, on what that returns.
// Objects kept by relist reuse were interned when they were first stored and
// are not walked again. See the README's "Compact store (interning)" for
// what it saves and costs.
func WithInterning() Option {
	return func(c *config) { c.interner = intern.Default() }
}

// storeTransform returns the transform applied to every object before it is
// stored: the user's, then interning if the informer interns.
func (c *config) storeTransform(user toolscache.TransformFunc) toolscache.TransformFunc {
	switch {
	case c.interner == nil:
		return user
	case user == nil:
		return c.interner.Transform
	}
	return func(obj any) (any, error) {
		out, err := user(obj)
		if err != nil {
			return nil, err
		}
		return c.interner.Object(out), nil
	}
}
