package main

import (
	"context"
	"errors"

	toolscache "k8s.io/client-go/tools/cache"
)

// errNoOurs: this build does not measure leaninformer yet (its packages
// have not landed).
var errNoOurs = errors.New("this build has no leaninformer variants")

// oursVariants are the leaninformer variants this build can measure.
func oursVariants() []variant { return nil }

func (c *child) newOursInformer(toolscache.SharedIndexInformerOptions) (toolscache.SharedIndexInformer, error) {
	return nil, errNoOurs
}

func (c *child) startPipeline(context.Context) (func() (int, int), <-chan struct{}, error) {
	return nil, nil, errNoOurs
}
