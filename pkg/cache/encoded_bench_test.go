package cache

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/internal/benchsize"
	"github.com/leaninformer/leaninformer/internal/cputime"
	"github.com/leaninformer/leaninformer/internal/memstat"
	"github.com/leaninformer/leaninformer/internal/testobjects"
	"github.com/leaninformer/leaninformer/pkg/codec"
)

// The encoded store's benchmarks: steady store size, read and write cost,
// side by side with client-go's indexer in the same run, on objects a
// kube-apiserver returned for hack/bench's RoleBindings, ConfigMaps and
// Pods (internal/testobjects), 10k of each. Run them with:
//
//	go test -run '^$' -bench 'Encoded' -benchmem ./pkg/cache/

// encodedBenchN is the store size of the encoded-store benchmarks.
func encodedBenchN() int { return benchsize.N(10_000) }

// storeImpls are the stores under comparison: client-go's indexer, ours
// plain, and ours with the codec.
var storeImpls = []struct {
	name string
	new  func(toolscache.Indexers) toolscache.Indexer
}{
	{"impl=client-go", func(ix toolscache.Indexers) toolscache.Indexer {
		return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, ix)
	}},
	{"impl=leaninformer", func(ix toolscache.Indexers) toolscache.Indexer {
		return NewIndexer(toolscache.MetaNamespaceKeyFunc, ix)
	}},
	{"impl=leaninformer-encoded", func(ix toolscache.Indexers) toolscache.Indexer {
		return NewIndexer(toolscache.MetaNamespaceKeyFunc, ix, WithCodec(codec.New()))
	}},
	{"impl=leaninformer-s2", func(ix toolscache.Indexers) toolscache.Indexer {
		return NewIndexer(toolscache.MetaNamespaceKeyFunc, ix, WithCodec(codec.New(codec.WithCompression())))
	}},
}

// readIndexers index the namespace (10 namespaces: 1,000 objects each), a
// group of 100 objects and each object alone, for reads of 1, 100 and 1,000
// objects.
func readIndexers() toolscache.Indexers {
	number := func(o any) int {
		m, _ := meta.Accessor(o)
		return testobjects.Number(m.GetName())
	}
	return toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		"group100":                func(o any) ([]string, error) { return []string{strconv.Itoa(number(o) / 100)}, nil },
		"one":                     func(o any) ([]string, error) { return []string{strconv.Itoa(number(o))}, nil },
	}
}

// fillStore adds the first n objects of pop, made one at a time so that
// nothing but the store keeps them.
func fillStore(b *testing.B, s toolscache.Indexer, pop *testobjects.Population, n int) {
	b.Helper()
	for i := range n {
		if err := s.Add(pop.Object(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodedStoreSize reports the steady store of 10k objects (the
// live heap after a full GC, over the heap before the store was built) per
// object, and for ours the ratio to client-go's in the same run. One
// index: the namespace, as controller-runtime's informers have. Pods are
// measured with their managedFields and without. The timed loop is empty:
// the figures are memory.
func BenchmarkEncodedStoreSize(b *testing.B) {
	for _, kind := range testobjects.Kinds {
		pop := testobjects.NewPopulation(b, kind)
		variants := []string{"kept"}
		if kind == "pods" {
			// What managedFields weigh: controller-runtime users often
			// strip them with a transform.
			variants = append(variants, "stripped")
		}
		for _, managedFields := range variants {
			var clientGo float64
			for _, impl := range storeImpls {
				name := "kind=" + kind + "/" + impl.name
				if kind == "pods" {
					name = "kind=" + kind + "/managedFields=" + managedFields + "/" + impl.name
				}
				b.Run(name, func(b *testing.B) {
					base := memstat.HeapAfterGC()
					s := impl.new(toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
					for i := range encodedBenchN() {
						o := pop.Object(i)
						if managedFields == "stripped" {
							o.(metav1.Object).SetManagedFields(nil)
						}
						if err := s.Add(o); err != nil {
							b.Fatal(err)
						}
					}
					perObject := float64(memstat.HeapAfterGC()-base) / float64(encodedBenchN())
					for b.Loop() {
					}
					b.ReportMetric(perObject, "store-B/object")
					if impl.name == "impl=client-go" {
						clientGo = perObject
					} else if clientGo > 0 {
						b.ReportMetric(perObject/clientGo, "x-client-go")
					}
					if e, ok := s.(*Indexer); ok && e.codec != nil {
						st := e.CodecStats()
						b.ReportMetric(float64(st.EncodedBytes)/float64(st.Encoded), "encoded-B/object")
					}
					runtime.KeepAlive(s)
				})
			}
		}
	}
}

// deepCopied is a read of client-go's indexer as controller-runtime's
// cache makes it: every object deep-copied.
func deepCopied(objs []any) []any {
	for i, o := range objs {
		objs[i] = o.(k8sruntime.Object).DeepCopyObject()
	}
	return objs
}

// BenchmarkEncodedRead compares reads of the encoded store (a fresh decode
// per object) with client-go's indexer plus the DeepCopy that
// controller-runtime's cache makes of every object it returns, on 10k
// objects: Get, ByIndex of 1, 100 and 1,000 objects (a namespace) and List
// of all. Each read is checked to return a private object.
func BenchmarkEncodedRead(b *testing.B) {
	reads := []struct {
		name string
		want int
		read func(s toolscache.Indexer, i int) ([]any, error)
	}{
		{"op=Get", 1, func(s toolscache.Indexer, i int) ([]any, error) {
			o, _, err := s.GetByKey(getKey(s, i))
			return []any{o}, err
		}},
		{"op=ByIndex-1", 1, func(s toolscache.Indexer, i int) ([]any, error) {
			return s.ByIndex("one", strconv.Itoa(i%encodedBenchN()))
		}},
		{"op=ByIndex-100", 100, func(s toolscache.Indexer, i int) ([]any, error) {
			return s.ByIndex("group100", strconv.Itoa(i%(encodedBenchN()/100)))
		}},
		{"op=ByIndex-namespace", 1000, func(s toolscache.Indexer, i int) ([]any, error) {
			return s.ByIndex(toolscache.NamespaceIndex, namespaces[i%len(namespaces)])
		}},
		{"op=List-all", encodedBenchN(), func(s toolscache.Indexer, _ int) ([]any, error) { return s.List(), nil }},
	}
	for _, kind := range testobjects.Kinds {
		pop := testobjects.NewPopulation(b, kind)
		for _, impl := range []struct {
			name string
			new  func(toolscache.Indexers) toolscache.Indexer
			copy bool
		}{
			{"impl=client-go+DeepCopy", storeImpls[0].new, true},
			{"impl=leaninformer-encoded", storeImpls[2].new, false},
			{"impl=leaninformer-s2", storeImpls[3].new, false},
		} {
			s := impl.new(readIndexers())
			fillStore(b, s, pop, encodedBenchN())
			keysOf[s] = s.ListKeys()
			namespaces = s.ListIndexFuncValues(toolscache.NamespaceIndex)
			for _, r := range reads {
				b.Run("kind="+kind+"/"+r.name+"/"+impl.name, func(b *testing.B) {
					runtime.GC()
					objects := 0
					start := cputime.Process()
					for i := 0; b.Loop(); i++ {
						objs, err := r.read(s, i)
						if err != nil || len(objs) != r.want && r.want != 1000 {
							b.Fatalf("read %d objects, want %d (%v)", len(objs), r.want, err)
						}
						if impl.copy {
							deepCopied(objs)
						}
						objects += len(objs)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(objects), "ns/object")
					cputime.Report(b, start, objects, "object")
				})
			}
			delete(keysOf, s)
		}
	}
}

var (
	keysOf     = map[toolscache.Indexer][]string{}
	namespaces []string
)

func getKey(s toolscache.Indexer, i int) string {
	keys := keysOf[s]
	return keys[i%len(keys)]
}

// BenchmarkEncodedWrite compares an update (a new version of a stored
// object, the same index values) in client-go's indexer, ours plain and
// ours encoded: the encoded store pays for the encoding.
func BenchmarkEncodedWrite(b *testing.B) {
	for _, kind := range testobjects.Kinds {
		pop := testobjects.NewPopulation(b, kind)
		newer := pop.Objects(1000)
		for _, o := range newer {
			m, _ := meta.Accessor(o)
			m.SetResourceVersion(fmt.Sprint("2", m.GetResourceVersion()))
		}
		for _, impl := range storeImpls {
			b.Run("kind="+kind+"/"+impl.name, func(b *testing.B) {
				s := impl.new(toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
				fillStore(b, s, pop, len(newer))
				runtime.GC()
				start := cputime.Process()
				for i := 0; b.Loop(); i++ {
					if err := s.Update(newer[i%len(newer)]); err != nil {
						b.Fatal(err)
					}
				}
				cputime.Report(b, start, b.N, "op")
			})
		}
	}
}
