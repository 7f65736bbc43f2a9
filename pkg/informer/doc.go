// Package informer provides a drop-in replacement for client-go's
// SharedIndexInformer that needs less memory where client-go's holds extra
// copies: the listerwatcher pipeline feeds the double-buffered indexer of
// package cache directly, without client-go's DeltaFIFO/RealFIFO queue, so a
// relist holds about one store plus one page rather than two stores. Once
// synced, the store holds one decoded copy of every object, as client-go's
// does, unless WithInterning or WithEncodedStore makes it smaller.
//
// NewSharedIndexInformer has client-go's signature, so it can be assigned
// wherever client-go's constructor is used, including controller-runtime's
// cache.Options.NewInformer; NewCache wires it into a controller-runtime
// manager in one line.
//
// How it works and its benchmarks against client-go's informer:
// pkg/informer/README.md.
package informer
