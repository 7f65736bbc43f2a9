package informer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clientgofeatures "k8s.io/client-go/features"
	clientgofeaturestesting "k8s.io/client-go/features/testing"
	toolscache "k8s.io/client-go/tools/cache"
)

// pausingProvider is a client-go metrics provider whose processing-latency
// histogram, once armed, holds client-go's FIFO after the first item it
// processes (its Observe runs after the item's store change and the
// queueing of its notifications, before the next Pop) until release is
// closed: what a handler reads then is the store as that one item left it.
type pausingProvider struct {
	fakeProvider
	armed   atomic.Bool
	release chan struct{}
}

type pausingHistogram struct{ p *pausingProvider }

func (h pausingHistogram) Observe(float64) {
	if h.p.armed.Load() {
		select {
		case <-h.p.release:
		case <-time.After(20 * time.Second):
		}
	}
}

func (p *pausingProvider) NewProcessingLatencyMetric(toolscache.InformerNameAndResource) toolscache.HistogramMetric {
	return pausingHistogram{p}
}

// storeAtFirstCall returns a handler that records every call and, once
// armed, the store's state at the first call it gets; done is closed then.
func storeAtFirstCall(store toolscache.Store) (rec *recorder, arm func(), state func() map[string]string, done <-chan struct{}) {
	rec = newRecorder()
	var armed atomic.Bool
	var once sync.Once
	var captured map[string]string
	ch := make(chan struct{})
	rec.onCall = func(call) {
		if armed.Load() {
			once.Do(func() {
				captured = storeState(store)
				close(ch)
			})
		}
	}
	return rec, func() { armed.Store(true) }, func() map[string]string { <-ch; return captured }, ch
}

// A handler told of a relist reads the store as it is after the whole
// relist, in ours whatever client-go's AtomicFIFO feature gate says. In
// client-go that holds only with AtomicFIFO (on by default): without it its
// FIFO applies a relist's deletes and objects in batches of at most 1000
// (one by one with InOrderInformersBatchProcess off too) and notifies each
// batch before applying the next, so a handler of a relist of more than
// 1000 objects can read a store part-way through it (a documented
// difference).
func TestDifferentialRelistAppliedAtOnce(t *testing.T) {
	for _, atomicFIFO := range []bool{true, false} {
		t.Run(fmt.Sprintf("AtomicFIFO=%v", atomicFIFO), func(t *testing.T) {
			clientgofeaturestesting.SetFeatureDuringTest(t, clientgofeatures.AtomicFIFO, atomicFIFO)
			const n = 1010 // more than one of client-go's batches of 1000
			s := newServer(t, n)
			ours := newInformer(s, 0)
			opts, _ := providerOptions(t, false, "client-go")
			provider := &pausingProvider{release: make(chan struct{})}
			opts.InformerMetricsProvider = provider
			opts.Indexers = toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
			theirs := toolscache.NewSharedIndexInformerWithOptions(s.ListerWatcher(), &corev1.ConfigMap{}, opts)
			ourRec, armOurs, ourState, _ := storeAtFirstCall(ours.GetStore())
			theirRec, armTheirs, theirState, theirCaptured := storeAtFirstCall(theirs.GetStore())
			go func() { <-theirCaptured; close(provider.release) }()
			if _, err := ours.AddEventHandler(ourRec); err != nil {
				t.Fatal(err)
			}
			if _, err := theirs.AddEventHandler(theirRec); err != nil {
				t.Fatal(err)
			}
			run(t, ours)
			run(t, theirs)
			waitSynced(t, ours, theirs)
			eventually(t, "the initial lists", func() bool { return ourRec.len() == n && theirRec.len() == n })
			ourRec.reset()
			theirRec.reset()
			armOurs()
			armTheirs()
			provider.armed.Store(true)

			// A relist of n-2 changed objects and 2 deletes: 1000 of
			// client-go's deltas in its first batch, 10 in the second.
			forceRelist(t, s, func() {
				mustDelete(t, s, "cm-0000")
				mustDelete(t, s, "cm-0001")
				for i := 2; i < n; i++ {
					mustUpdate(t, s, configMap(fmt.Sprintf("cm-%04d", i), "relisted", "yes"))
				}
			})
			eventually(t, "both handlers to hear of the whole relist", func() bool { return ourRec.len() == n && theirRec.len() == n })
			want := serverState(t, s)
			o, c := ourState(), theirState()
			if !equalStates(want, o) {
				t.Errorf("at its first relist call our handler read a store part-way through the relist: %s", diffStates(want, o))
			}
			if equalStates(want, c) != atomicFIFO {
				t.Errorf("at its first relist call client-go's handler read the whole relist: %v, want %v (AtomicFIFO=%v)", equalStates(want, c), atomicFIFO, atomicFIFO)
			}
		})
	}
}
