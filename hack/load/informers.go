package main

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/informer"
)

// informerVariant is one informer measured under load, each run in its own
// child process.
type informerVariant struct {
	name string
	desc string
	new  func(lw toolscache.ListerWatcher, opts toolscache.SharedIndexInformerOptions) toolscache.SharedIndexInformer
	// coalesceSlow registers the slow handler through informer.Coalesce: it
	// then gets fewer calls than there are writes, by design.
	coalesceSlow bool
	// control is client-go's informer under another name: its ratios to
	// client-go are no goal but what the run's noise alone makes of one.
	// Not run unless --informers names it.
	control bool
}

// slowHandler is the slow handler as v registers it.
func (v informerVariant) slowHandler(h *handler) toolscache.ResourceEventHandler {
	if v.coalesceSlow {
		return informer.Coalesce(h)
	}
	return h
}

// informerVariants are the informers in table order, each with its default
// settings, as users run them.
var informerVariants = []informerVariant{
	{
		name: "client-go",
		desc: "client-go v0.37.2's SharedIndexInformer, default feature gates (streaming list)",
		new:  newClientGo,
	},
	{
		name: "ours",
		desc: "leaninformer's SharedIndexInformer, default options (Auto strategy, metrics on)",
		new:  newOurs,
	},
	{
		name:         "ours-coalesce",
		desc:         "the same, with the slow handler registered through informer.Coalesce (the fast one as is)",
		new:          newOurs,
		coalesceSlow: true,
	},
	{
		name:    controlInformer,
		desc:    "client-go's informer again, in a child of its own: a control, compared with client-go as ours is, to show the spread two runs of one informer give",
		new:     newClientGo,
		control: true,
	},
}

// controlInformer names the control variant.
const controlInformer = "client-go-control"

func newClientGo(lw toolscache.ListerWatcher, opts toolscache.SharedIndexInformerOptions) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, opts)
}

func newOurs(lw toolscache.ListerWatcher, opts toolscache.SharedIndexInformerOptions) toolscache.SharedIndexInformer {
	return informer.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, opts)
}

func informerNames() []string {
	var names []string
	for _, v := range informerVariants {
		names = append(names, v.name)
	}
	return names
}

// defaultInformerNames are the informers run unless --informers says
// otherwise: all but the control.
func defaultInformerNames() []string {
	var names []string
	for _, v := range informerVariants {
		if !v.control {
			names = append(names, v.name)
		}
	}
	return names
}

func findInformer(name string) (informerVariant, error) {
	for _, v := range informerVariants {
		if v.name == name {
			return v, nil
		}
	}
	return informerVariant{}, fmt.Errorf("unknown informer %q (known: %s)", name, strings.Join(informerNames(), ", "))
}

// handlerSet is which handlers an informer runs: the fast one alone, or the
// fast one beside a slow one (slowHandlerDelay per call), each with its own
// queue.
type handlerSet string

const (
	fastOnly    handlerSet = "fast"
	fastAndSlow handlerSet = "fast+slow"
)

func parseHandlerSet(s string) (handlerSet, error) {
	switch hs := handlerSet(s); hs {
	case fastOnly, fastAndSlow:
		return hs, nil
	}
	return "", fmt.Errorf("unknown handler set %q (known: %s, %s)", s, fastOnly, fastAndSlow)
}

func (hs handlerSet) slow() bool { return hs == fastAndSlow }
