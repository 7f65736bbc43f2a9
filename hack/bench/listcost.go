package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leaninformer/leaninformer/internal/benchkit"
)

// listShape is one way of listing every object of the kind (--list-cost):
// one LIST, or a first page and continue pages. Comparing their times on
// one cluster separates what pagination costs the API server from what the
// client's rate limiter or an informer adds.
type listShape struct {
	name string
	// resourceVersion of the first request: "" reads from etcd (or, with
	// the API server's consistent reads from cache, from its watch cache
	// once it has caught up), "0" from the watch cache as it is.
	resourceVersion string
	// first and rest are the limits of the first and of every continue
	// request; 0 is no limit.
	first, rest int64
}

// listShapes are the shapes --list-cost times. pageSize > 0 (--page-size)
// adds pages of that size: near what our informer sends once it has sized
// its pages (a first page of 500, then the size it chose).
func listShapes(pageSize int64) []listShape {
	shapes := []listShape{
		{name: `one LIST, resourceVersion ""`},
		{name: `one LIST, resourceVersion "0"`, resourceVersion: "0"},
		{name: "pages of 500 (client-go's pager)", first: 500, rest: 500},
		// One object, then everything in a single continue page: the
		// cost of serving a list from a continue token rather than the
		// cost of more requests.
		{name: "1 object, then the rest in one continue page", first: 1},
	}
	if pageSize > 0 {
		shapes = append(shapes, listShape{name: fmt.Sprintf("pages of %d (--page-size)", pageSize), first: pageSize, rest: pageSize})
	}
	return shapes
}

// listOnce lists every object of kind k in shape s and returns how many
// objects and requests it took.
func (s listShape) listOnce(ctx context.Context, cs kubernetes.Interface, k objectKind) (objects, requests int, err error) {
	opts := metav1.ListOptions{ResourceVersion: s.resourceVersion, Limit: s.first}
	for {
		items, cont, err := k.listPage(ctx, cs, opts)
		if err != nil {
			return objects, requests, fmt.Errorf("%s, request %d: %w", s.name, requests+1, err)
		}
		objects += len(items)
		requests++
		if cont == "" {
			return objects, requests, nil
		}
		// A continue request carries no resourceVersion: the token holds it.
		opts = metav1.ListOptions{Continue: cont, Limit: s.rest}
	}
}

// listTiming is what --list-cost measured of one shape.
type listTiming struct {
	shape    listShape
	objects  int // in the last round
	requests int // in the last round
	took     []time.Duration
}

// listCost is --list-cost: instead of the children, this process times each
// shape of listShapes o.runs times against the populated cluster, with the
// children's client (o.limits, protobuf), the shapes' order rotating from
// round to round, and writes list-cost.md to o.out and stdout.
func listCost(ctx context.Context, o options, cfg *rest.Config, touch func(context.Context) error, header string, stdout io.Writer) error {
	cfg = rest.CopyConfig(cfg)
	benchClientConfig(cfg, o.limits)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	shapes := listShapes(o.pageSize)
	timings := make([]listTiming, len(shapes))
	for i, s := range shapes {
		timings[i].shape = s
	}
	// One untimed list first: connections, the client's decoders and the
	// API server's caches warm for every shape alike.
	if _, _, err := shapes[0].listOnce(ctx, cs, o.kind); err != nil {
		return err
	}
	for round := range o.runs {
		if o.touch {
			if err := touch(ctx); err != nil {
				return err
			}
		}
		for j := range shapes {
			t := &timings[(round+j)%len(shapes)]
			start := time.Now()
			objects, requests, err := t.shape.listOnce(ctx, cs, o.kind)
			if err != nil {
				return err
			}
			t.took = append(t.took, time.Since(start))
			t.objects, t.requests = objects, requests
		}
	}
	md := listCostMarkdown(header, timings)
	if err := os.WriteFile(filepath.Join(o.out, "list-cost.md"), []byte(md), 0o644); err != nil {
		return err
	}
	_, err = io.WriteString(stdout, md)
	return err
}

// listCostHeader says where and how list-cost.md was measured.
func listCostHeader(o options, prov provenanceStart, serverVersion string, total int) string {
	commit := prov.commit
	if prov.dirty {
		commit += " (dirty)"
	}
	touched := "bench object 0 updated before each round (continue pages served from the watch cache)"
	if !o.touch {
		touched = "no update before the rounds (--touch=false: continue pages from etcd once the resource is unwritten since the last compaction)"
	}
	return fmt.Sprintf("`%s` at %s on %s, API server %s, %s. %d bench %s (%d in the cluster in all), protobuf on the wire, **%s**, %s; "+
		"%d rounds, the shapes' order rotating from round to round, after one untimed LIST. "+
		"Times are wall time from the first request to the last page decoded, with client and API server on the same machine.",
		o.commandLine, commit, benchkit.DescribeMachine(), serverVersion, time.Now().UTC().Format(time.RFC3339),
		o.objects, o.kind.title, total, o.limits, touched, o.runs)
}

// medianMS is the median of ds in milliseconds, by benchkit.Median (the mean
// of the middle two for an even count), as every other median of the bench.
func medianMS(ds []time.Duration) float64 {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = ms(d)
	}
	return benchkit.Median(xs)
}

// listCostMarkdown renders the timings, each against the first shape's.
func listCostMarkdown(header string, timings []listTiming) string {
	var b strings.Builder
	b.WriteString("# The API server's cost of a list, by shape\n\n")
	b.WriteString(header)
	b.WriteString("\n\n| shape | requests | objects | median ms | min-max ms | µs / object | median vs first row |\n|---|--:|--:|--:|--:|--:|--:|\n")
	base := medianMS(timings[0].took)
	for _, t := range timings {
		med := medianMS(t.took)
		perObject := 0.0
		if t.objects > 0 {
			perObject = med * 1000 / float64(t.objects)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.1f-%.1f | %.2f | %.3f |\n", t.shape.name, t.requests, t.objects,
			med, ms(slices.Min(t.took)), ms(slices.Max(t.took)), perObject, med/base)
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
