package main

import (
	"runtime/metrics"
	"sync"
	"time"

	"github.com/leaninformer/leaninformer/internal/benchresults"
)

// timelineRecorder samples the heap every interval in its own goroutine.
// Sampling pauses between the sync and the relist, while the child checks
// its store (which decodes every object of an encoded store), so that the
// timeline shows the informer's memory, not the benchmark's.
type timelineRecorder struct {
	start    time.Time
	baseline uint64
	stop     chan struct{}
	done     chan struct{}

	mu     sync.Mutex
	paused bool
	tl     benchresults.Timeline
}

// startTimeline samples every interval from now on; sizes are relative to
// baseline bytes.
func startTimeline(interval time.Duration, baseline uint64) *timelineRecorder {
	r := &timelineRecorder{start: time.Now(), baseline: baseline, stop: make(chan struct{}), done: make(chan struct{})}
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	r.sample(samples)
	go func() {
		defer close(r.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.sample(samples)
			}
		}
	}()
	return r
}

func (r *timelineRecorder) sample(samples []metrics.Sample) {
	metrics.Read(samples)
	kib := func(b uint64) int64 { return (int64(b) - int64(r.baseline)) >> 10 }
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paused {
		return
	}
	r.tl.Ms = append(r.tl.Ms, time.Since(r.start).Milliseconds())
	r.tl.HeapKiB = append(r.tl.HeapKiB, kib(samples[0].Value.Uint64()))
	r.tl.LiveKiB = append(r.tl.LiveKiB, kib(samples[1].Value.Uint64()))
}

// mark records that the child reached step name now.
func (r *timelineRecorder) mark(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tl.Marks = append(r.tl.Marks, benchresults.Mark{Name: name, Ms: time.Since(r.start).Milliseconds()})
}

// pause stops recording samples until resume.
func (r *timelineRecorder) pause() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paused = true
}

// resume records samples again, from one taken now.
func (r *timelineRecorder) resume() {
	r.mu.Lock()
	r.paused = false
	r.tl.Resumed = append(r.tl.Resumed, len(r.tl.Ms))
	r.mu.Unlock()
	r.sample([]metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}})
}

// finish stops sampling after a last sample (unless paused) and returns
// the timeline.
func (r *timelineRecorder) finish() *benchresults.Timeline {
	close(r.stop)
	<-r.done
	r.sample([]metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}})
	r.mu.Lock()
	defer r.mu.Unlock()
	tl := r.tl
	return &tl
}
