package informer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/leaninformer/leaninformer/internal/benchsize"
	"github.com/leaninformer/leaninformer/internal/cputime"
	"github.com/leaninformer/leaninformer/internal/testenv"
	"github.com/leaninformer/leaninformer/pkg/codec"
	"github.com/leaninformer/leaninformer/pkg/informer"
)

// BenchmarkReadsThroughControllerRuntime reads 10k ConfigMaps through a
// controller-runtime cache, as a reconciler does: Get, and List of 1, 100
// and all objects, with a label selector and without (a namespace holds
// 100). Side by side: controller-runtime's default cache (client-go's
// informer, a DeepCopy per object read) and leaninformer's on the encoded
// store, without and with compression (a decode per object returned,
// controller-runtime's DeepCopy off; label selectors are matched on the
// encodings, see NewCacheWith). It starts
// a real API server with envtest and creates the objects (a minute or two).
// Run with:
//
//	go test -run '^$' -bench ReadsThroughControllerRuntime -benchtime 2s ./pkg/informer/
func BenchmarkReadsThroughControllerRuntime(b *testing.B) {
	cfg := crBenchServer(b)
	caches := []struct {
		name     string
		newCache crcache.NewCacheFunc
	}{
		{"cache=controller-runtime", crcache.New},
		{"cache=leaninformer-encoded", informer.NewCacheWith(informer.WithEncodedStore(), informer.WithMetrics(nil))},
		{"cache=leaninformer-encoded-s2", informer.NewCacheWith(informer.WithEncodedStore(codec.WithCompression()), informer.WithMetrics(nil))},
	}
	reads := []struct {
		name string
		want int
		read func(ctx context.Context, c crcache.Cache, i int) (int, error)
	}{
		{"op=Get", 1, func(ctx context.Context, c crcache.Cache, i int) (int, error) {
			var cm corev1.ConfigMap
			return 1, c.Get(ctx, client.ObjectKey{Namespace: crBenchNamespace(i), Name: crBenchName(i)}, &cm)
		}},
		{"op=List-1-label", 1, func(ctx context.Context, c crcache.Cache, i int) (int, error) {
			var l corev1.ConfigMapList
			err := c.List(ctx, &l, client.MatchingLabels{"one": fmt.Sprint(i % crBenchObjects())})
			return len(l.Items), err
		}},
		{"op=List-100-label", 100, func(ctx context.Context, c crcache.Cache, i int) (int, error) {
			var l corev1.ConfigMapList
			err := c.List(ctx, &l, client.MatchingLabels{"hundred": fmt.Sprint(i % (crBenchObjects() / 100))})
			return len(l.Items), err
		}},
		{"op=List-100-namespace", 100, func(ctx context.Context, c crcache.Cache, i int) (int, error) {
			var l corev1.ConfigMapList
			err := c.List(ctx, &l, client.InNamespace(crBenchNamespace(i)))
			return len(l.Items), err
		}},
		{"op=List-all", crBenchObjects(), func(ctx context.Context, c crcache.Cache, _ int) (int, error) {
			var l corev1.ConfigMapList
			err := c.List(ctx, &l, client.MatchingLabels{"bench": "cr-read"})
			return len(l.Items), err
		}},
		{"op=List-all-no-selector", crBenchObjects(), func(ctx context.Context, c crcache.Cache, _ int) (int, error) {
			var l corev1.ConfigMapList
			err := c.List(ctx, &l)
			return len(l.Items), err
		}},
	}
	for _, cc := range caches {
		ctx, cancel := context.WithCancel(context.Background())
		c, err := cc.newCache(cfg, crcache.Options{})
		if err != nil {
			b.Fatal(err)
		}
		started := make(chan error, 1)
		go func() { started <- c.Start(ctx) }()
		if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
			b.Fatal(err)
		}
		if !c.WaitForCacheSync(ctx) {
			b.Fatal("the cache did not sync")
		}
		for _, r := range reads {
			b.Run(r.name+"/"+cc.name, func(b *testing.B) {
				objects := 0
				start := cputime.Process()
				for i := 0; b.Loop(); i++ {
					n, err := r.read(ctx, c, i)
					if err != nil || (n != r.want && r.want != crBenchObjects()) || n < r.want {
						b.Fatalf("read %d objects, want %d (%v)", n, r.want, err)
					}
					objects += n
				}
				cputime.Report(b, start, b.N, "op")
				cputime.Report(b, start, objects, "object")
			})
		}
		cancel()
		if err := <-started; err != nil {
			b.Fatal(err)
		}
	}
}

// crBenchObjects is the number of ConfigMaps the controller-runtime read benchmark caches.
func crBenchObjects() int { return benchsize.N(10_000) }

func crBenchNamespace(i int) string { return fmt.Sprintf("cr-read-%03d", (i%crBenchObjects())/100) }
func crBenchName(i int) string      { return fmt.Sprintf("cm-%05d", i%crBenchObjects()) }

// crBenchServer starts envtest for the benchmark, stopped when it ends, and
// creates the objects: 100 namespaces of 100 ConfigMaps, labelled for the
// selectors above.
func crBenchServer(b *testing.B) *rest.Config {
	b.Helper()
	assets, err := testenv.AssetsDir()
	if err != nil {
		b.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := env.Stop(); err != nil {
			b.Error(err)
		}
	})
	if err := crBenchPopulate(cfg); err != nil {
		b.Fatal(err)
	}
	return cfg
}

func crBenchPopulate(cfg *rest.Config) error {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 1000, 1000
	httpClient, err := rest.HTTPClientFor(c)
	if err != nil {
		return err
	}
	defer httpClient.CloseIdleConnections()
	cs, err := kubernetes.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for n := range crBenchObjects() / 100 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: crBenchNamespace(n * 100)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < crBenchObjects(); i += 16 {
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: crBenchNamespace(i), Name: crBenchName(i), Labels: map[string]string{
						"bench": "cr-read", "one": fmt.Sprint(i), "hundred": fmt.Sprint(i / 100),
					}},
					Data: map[string]string{"LOG_LEVEL": "info", "config.yaml": fmt.Sprintf("server:\n  port: 8080\n  name: app-%05d\n", i)},
				}
				if _, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
