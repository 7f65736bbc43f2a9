// Package informer provides a drop-in replacement for client-go's
// SharedIndexInformer that keeps memory flat while it lists, relists and
// watches: the listerwatcher pipeline feeds the double-buffered indexer of
// package cache directly, without client-go's DeltaFIFO/RealFIFO queue.
//
// NewSharedIndexInformer has client-go's signature, so it can be assigned
// wherever client-go's constructor is used, including controller-runtime's
// cache.Options.NewInformer; NewCache wires it into a controller-runtime
// manager in one line.
//
// How it works and its benchmarks against client-go's informer:
// pkg/informer/README.md.
package informer
