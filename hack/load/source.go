package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// source is where a child's informer lists and watches, and where the
// window's writes come from.
type source interface {
	listWatch() (toolscache.ListerWatcher, *fullLists)
	// writes runs the window's writes, or waits for them, and returns how
	// many there were.
	writes(ctx context.Context, fast *handler) (int64, error)
	close()
}

// The child's side of the line protocol with the parent, envtest backend.
const (
	// msgReady (child to parent): synced and measuring; write now.
	msgReady = "ready"
	// msgStop (parent to child) ends the window; the number of writes
	// follows.
	msgStop = "stop "
	// msgResult (child to parent) prefixes the JSON of the Result.
	msgResult = "result "
)

// clusterSource is a real API server; the parent writes.
type clusterSource struct {
	cs  kubernetes.Interface
	in  *bufio.Reader
	out io.Writer
}

func newClusterSource(kubeconfig string, in io.Reader, out io.Writer) (*clusterSource, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	// Protobuf, as controllers use for built-in types; client-go's default
	// rate limits, which an informer's few requests never reach.
	cfg.ContentType = apiruntime.ContentTypeProtobuf
	cfg.AcceptContentTypes = apiruntime.ContentTypeProtobuf + "," + apiruntime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clusterSource{cs: cs, in: bufio.NewReader(in), out: out}, nil
}

func (s *clusterSource) listWatch() (toolscache.ListerWatcher, *fullLists) {
	cms := s.cs.CoreV1().ConfigMaps(metav1.NamespaceAll)
	return countingListWatch(
		func(ctx context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
			return cms.List(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return cms.Watch(ctx, opts)
		},
		s.cs)
}

func (s *clusterSource) writes(ctx context.Context, _ *handler) (int64, error) {
	if _, err := fmt.Fprintln(s.out, msgReady); err != nil {
		return 0, err
	}
	lines := make(chan string, 1)
	errs := make(chan error, 1)
	go func() {
		line, err := s.in.ReadString('\n')
		if err != nil {
			errs <- fmt.Errorf("waiting for the parent's writes to end: %w", err)
			return
		}
		lines <- strings.TrimSuffix(line, "\n")
	}()
	select {
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	case err := <-errs:
		return 0, err
	case line := <-lines:
		n, ok := strings.CutPrefix(line, msgStop)
		if !ok {
			return 0, fmt.Errorf("from the parent: got %q, want %q and the number of writes", line, msgStop)
		}
		return strconv.ParseInt(n, 10, 64)
	}
}

func (s *clusterSource) close() {}

// fakeSource is the fake API server of pkg/listerwatcher/fake in this
// process, and a writer updating its objects on the window's schedule.
type fakeSource struct {
	server   *fake.Server
	objs     []*corev1.ConfigMap
	schedule schedule
	// inflight bounds, at rate 0, the writes the fast handler has not got.
	inflight int64
}

// compactEvery is how many writes the fake server's history holds at most:
// it keeps every version until compacted, which a long run would measure.
const compactEvery = 1000

func newFakeSource(objects int, sch schedule, inflight int64) (*fakeSource, error) {
	s := &fakeSource{server: fake.NewServer(&corev1.ConfigMapList{}, fake.WithoutRequestLog()), schedule: sch, inflight: inflight}
	s.objs = make([]*corev1.ConfigMap, objects)
	if err := s.server.CreateN(objects, func(i int) apiruntime.Object {
		s.objs[i] = configMap(i)
		s.objs[i].Annotations = map[string]string{}
		return s.objs[i]
	}); err != nil {
		return nil, fmt.Errorf("load the fake server: %w", err)
	}
	s.server.Compact()
	return s, nil
}

func (s *fakeSource) listWatch() (toolscache.ListerWatcher, *fullLists) {
	lw := s.server.ListerWatcher()
	return countingListWatch(lw.ListWithContext, lw.WatchWithContext, lw)
}

func (s *fakeSource) writes(ctx context.Context, fast *handler) (int64, error) {
	var written atomic.Int64
	sch := s.schedule
	sch.workers = 1 // the writes are in memory: one writer outpaces any informer
	if sch.rate == 0 {
		sch.ready = func() bool { return written.Load()-fast.windowUpdates.Load() < s.inflight }
	}
	return sch.run(ctx, func(_ context.Context, i int) error {
		obj := s.objs[i%len(s.objs)]
		obj.Annotations[writtenAtAnnotation] = stamp(time.Now())
		if _, err := s.server.Update(obj); err != nil {
			return err
		}
		if written.Add(1)%compactEvery == 0 {
			s.server.Compact()
		}
		return nil
	})
}

func (s *fakeSource) close() { s.server.Close() }
