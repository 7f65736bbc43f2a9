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
// It runs after the transform set with SetTransform, on what that returns,
// and writes it (its strings are replaced by equal, shared ones), so the
// transform must not put into the objects it returns a map or slice that it
// keeps or that other objects share: another goroutine reading it would
// race with the interning. Objects kept by relist reuse were interned when they were first stored and
// are not walked again. With WithEncodedStore, only the objects the codec
// refuses, which the store keeps decoded (typed custom resources), are
// interned: the store keeps the others as bytes and every read decodes a
// fresh object, so there is nothing to share. See the README's "Compact
// store (interning)" for what it saves and costs.
func WithInterning() Option {
	return func(c *config) { c.interner = intern.Default() }
}

// storeTransform returns the transform applied to every object before it is
// stored: the user's, then interning if the informer interns into a plain
// store (an encoded store interns what it keeps decoded: see internRefused).
func (c *config) storeTransform(user toolscache.TransformFunc) toolscache.TransformFunc {
	switch {
	case c.interner == nil || c.encoded:
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
