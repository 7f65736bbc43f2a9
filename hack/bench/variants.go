package main

import (
	"fmt"
	"regexp"

	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
	"github.com/leaninformer/leaninformer/pkg/intern"
	"github.com/leaninformer/leaninformer/pkg/listerwatcher"
)

// kind is what a variant's child process runs.
type kind uint8

const (
	// informerKind: a SharedIndexInformer with one handler that counts
	// notifications, as a controller would have.
	informerKind kind = iota
	// noStoreKind: the list-and-watch machinery alone, into a sink that keeps
	// nothing: client-go's Reflector or our listerwatcher pipeline.
	noStoreKind
	// floorKind: the decoded objects in a plain slice, nothing else.
	floorKind
)

// mode is how a variant gets the collection.
type mode uint8

const (
	// streaming: one WATCH with sendInitialEvents=true.
	streaming mode = iota
	// listing: LIST requests (client-go: RV=0, answered in one piece by the
	// watch cache; ours and the floor: pages of --page-size with continue).
	listing
)

// variant is one configuration measured in its own child processes.
type variant struct {
	name string
	desc string
	kind kind
	ours bool
	mode mode
	// relist: after the initial sync, force a relist (410 Gone) and report
	// it as a row of its own.
	relist bool
	// strip: controller-runtime's TransformStripManagedFields transform.
	strip bool
	// intern: interning on (ours: informer.WithInterning; client-go: the
	// interning table's Transform as its transform).
	intern bool
	// encoded: ours on the encoded store (informer.WithEncodedStore);
	// compress adds codec.WithCompression.
	encoded, compress bool
	// prefetch: our informer through prefetchLW, which reads the next LIST
	// page while the informer stores the last one.
	prefetch bool
	// churn: before the forced relist, this percent of the bench objects
	// is modified, and 1% deleted and created, while the watch is down;
	// only the relist row is reported.
	churn int
	// busy: from before the forced relist until it ends, another client
	// sends requests through the informer's rate limiter as fast as it lets
	// them go: a controller whose workers keep the limiter of the clientset
	// its informers share empty (kubernetes.NewForConfig gives all its
	// typed clients one limiter). Only the relist row is reported.
	busy bool
	// unwritten: the child lists a resource nobody wrote since the last
	// etcd compaction (no touch; it runs after every other child, once a
	// compaction has passed since the bench's last write), whose continue
	// pages the API server reads from etcd.
	unwritten bool
}

// transform is the transform the child sets on the variant's informer.
func (v variant) transform() toolscache.TransformFunc {
	switch {
	case v.strip:
		return crcache.TransformStripManagedFields()
	case v.intern && !v.ours:
		return intern.Default().Transform
	}
	return nil
}

// env is the extra environment of the variant's child.
func (v variant) env() []string {
	if !v.ours && v.mode == listing && v.kind != floorKind {
		return []string{"KUBE_FEATURE_WatchListClient=false"}
	}
	return nil
}

// rows are the names of the table rows a variant's child reports.
func (v variant) rows() []string {
	switch {
	case v.churn > 0 || v.busy:
		return []string{relistRow(v.name)} // its initial sync is its base variant's
	case v.relist:
		return []string{v.name, relistRow(v.name)}
	}
	return []string{v.name}
}

func relistRow(name string) string { return name + " relist" }

// variants lists the variants, in table order.
func variants() []variant {
	all := []variant{
		{name: "floor", kind: floorKind, mode: listing,
			desc: "the decoded objects in a plain slice (paged LIST)"},
		{name: "client-go", kind: informerKind, mode: streaming, relist: true,
			desc: "client-go informer, default feature gates (streaming list)"},
		{name: "ours-stream", kind: informerKind, ours: true, mode: streaming, relist: true,
			desc: "leaninformer informer, StreamingList strategy"},
		{name: "client-go-list", kind: informerKind, mode: listing, relist: true,
			desc: "client-go informer, KUBE_FEATURE_WatchListClient=false (LIST)"},
		{name: "ours-listwatch", kind: informerKind, ours: true, mode: listing, relist: true,
			desc: "leaninformer informer, ListWatch strategy (paged LIST)"},
		{name: "ours-listwatch-prefetch", kind: informerKind, ours: true, mode: listing, relist: true, prefetch: true,
			desc: "leaninformer informer, ListWatch strategy, reading the next page while storing the last (a design measured, not the informer's)"},
		{name: "client-go-reflector", kind: noStoreKind, mode: streaming,
			desc: "client-go Reflector into a store that keeps nothing (streaming list)"},
		{name: "ours-pipeline-stream", kind: noStoreKind, ours: true, mode: streaming,
			desc: "leaninformer pipeline into a consumer that drops pages (StreamingList)"},
		{name: "client-go-reflector-list", kind: noStoreKind, mode: listing,
			desc: "client-go Reflector into a store that keeps nothing (LIST)"},
		{name: "ours-pipeline-listwatch", kind: noStoreKind, ours: true, mode: listing,
			desc: "leaninformer pipeline into a consumer that drops pages (ListWatch)"},
		{name: "client-go-strip", kind: informerKind, mode: streaming, strip: true,
			desc: "client-go informer (streaming list) with TransformStripManagedFields"},
		{name: "ours-stream-strip", kind: informerKind, ours: true, mode: streaming, strip: true,
			desc: "leaninformer informer (StreamingList) with TransformStripManagedFields"},
		{name: "ours-stream-intern", kind: informerKind, ours: true, mode: streaming, relist: true, intern: true,
			desc: "leaninformer informer (StreamingList) with WithInterning"},
		{name: "ours-listwatch-intern", kind: informerKind, ours: true, mode: listing, relist: true, intern: true,
			desc: "leaninformer informer (ListWatch) with WithInterning"},
		{name: "client-go-intern", kind: informerKind, mode: streaming, intern: true,
			desc: "client-go informer (streaming list) with intern.Default().Transform as its transform"},
		{name: "ours-stream-encoded", kind: informerKind, ours: true, mode: streaming, relist: true, encoded: true,
			desc: "leaninformer informer (StreamingList) with WithEncodedStore"},
		{name: "ours-listwatch-encoded", kind: informerKind, ours: true, mode: listing, relist: true, encoded: true,
			desc: "leaninformer informer (ListWatch) with WithEncodedStore"},
		{name: "ours-stream-encoded-s2", kind: informerKind, ours: true, mode: streaming, relist: true, encoded: true, compress: true,
			desc: "leaninformer informer (StreamingList) with WithEncodedStore(codec.WithCompression())"},
	}
	// The relist after changes, in the informer pairs: reuse keeps less.
	for _, percent := range []int{10, 100} {
		for _, base := range []string{"client-go-list", "ours-listwatch", "client-go", "ours-stream"} {
			v := *findIn(all, base)
			v.name, v.churn = fmt.Sprintf("%s-churn%d", base, percent), percent
			v.desc = fmt.Sprintf("%s; %d%% of the bench objects modified, %d%% deleted and as many created while the watch was down", v.desc, percent, churnDeletedPercent)
			all = append(all, v)
		}
	}
	// The relist of the paginated pair when the client's limiter is kept
	// empty by the controller's other requests: every LIST page waits its
	// turn behind them (a streamed relist is one request, as client-go's
	// LIST at resourceVersion 0 is).
	for _, base := range []string{"client-go-list", "ours-listwatch"} {
		v := *findIn(all, base)
		v.name, v.busy = base+"-busy", true
		v.desc += "; relisting while another client keeps the shared rate limiter empty"
		all = append(all, v)
	}
	// The paginated pair again on a resource nobody wrote since the last
	// etcd compaction: the state of a rarely written kind, where only
	// paginated lists pay (their continue pages come from etcd).
	for _, base := range []string{"client-go-list", "ours-listwatch"} {
		v := *findIn(all, base)
		v.name, v.unwritten = base+"-unwritten", true
		v.desc += "; the resource unwritten since the last etcd compaction, so that continue pages come from etcd"
		all = append(all, v)
	}
	return all
}

func findIn(vs []variant, name string) *variant {
	for i := range vs {
		if vs[i].name == name {
			return &vs[i]
		}
	}
	panic("no variant " + name)
}

// rowGroups is the number of groups rowGroup sorts rows into.
const rowGroups = 8

// rowGroup orders the table: the floor, initial syncs, relists, relists
// after changes, rows without store, transforms, interning, the encoded
// store.
func rowGroup(v variant, relistRow bool) int {
	switch {
	case v.kind == floorKind:
		return 0
	case v.encoded:
		return 7
	case v.intern:
		return 6
	case v.churn > 0 || v.busy:
		return 3
	case relistRow:
		return 2
	case v.kind == noStoreKind:
		return 4
	case v.strip:
		return 5
	}
	return 1
}

// selectVariants returns the variants whose name matches the regular
// expression expr (all of them for "").
func selectVariants(expr string) ([]variant, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("--variants %q: %w", expr, err)
	}
	var out []variant
	for _, v := range variants() {
		if re.MatchString(v.name) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--variants %q matches none of %v", expr, variantNames())
	}
	return out, nil
}

func variantNames() []string {
	var names []string
	for _, v := range variants() {
		names = append(names, v.name)
	}
	return names
}

func findVariant(name string) (variant, error) {
	for _, v := range variants() {
		if v.name == name {
			return v, nil
		}
	}
	return variant{}, fmt.Errorf("unknown variant %q (known: %v)", name, variantNames())
}

// floorPageSize is the floor's LIST page size for --page-size pageSize
// (negative: the informer sizes its pages; the floor lists by 500).
func floorPageSize(pageSize int64) int64 {
	if pageSize < 0 {
		return listerwatcher.DefaultPageSize
	}
	return pageSize
}

// checkRequests verifies that requests, the requests of restarts full
// (re)lists of total objects, are what v's strategy sends, so that no row
// reports a strategy that did not run. pageSize is --page-size: negative
// for the informer's own page sizes.
func (v variant) checkRequests(c faultproxy.RequestCounts, restarts, total int, pageSize int64) error {
	restarts64 := int64(restarts)
	if v.kind == floorKind {
		pageSize = floorPageSize(pageSize)
	}
	switch {
	case v.mode == streaming:
		if c.StreamingWatches < restarts64 || c.Lists != 0 {
			return fmt.Errorf("%s should stream: want >= %d watches with sendInitialEvents=true and no LIST, got %+v", v.name, restarts, c)
		}
	case v.ours && pageSize < 0:
		if c.StreamingWatches != 0 || c.Lists < restarts64 || c.ListsWithLimit != c.Lists {
			return fmt.Errorf("%s should list in pages it sizes: want >= %d LISTs, all with a limit, and no streaming watch, got %+v", v.name, restarts, c)
		}
	case v.ours || v.kind == floorKind:
		pages, limited := int64(1), c.Lists
		if pageSize > 0 {
			pages = max(1, (int64(total)+pageSize-1)/pageSize)
		} else {
			limited = 0 // --page-size 0 asks for everything at once
		}
		if c.StreamingWatches != 0 || c.Lists < restarts64*pages || c.ListsWithLimit != limited || c.ListsWithContinue < restarts64*(pages-1) {
			return fmt.Errorf("%s should list in pages of %d: want >= %d LISTs of %d pages, all with a limit, and no streaming watch, got %+v",
				v.name, pageSize, restarts, pages, c)
		}
	default:
		if c.Lists < restarts64 || c.StreamingWatches != 0 {
			return fmt.Errorf("%s should LIST: want >= %d LIST and no streaming watch, got %+v", v.name, restarts, c)
		}
	}
	return nil
}
