package informer

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fakeCRCache stands for controller-runtime's cache: it hands out one
// informer and counts the Lists it is given.
type fakeCRCache struct {
	crcache.Cache
	inf       crcache.Informer
	getErr    error
	delegated int
}

func (f *fakeCRCache) GetInformer(context.Context, client.Object, ...crcache.InformerGetOption) (crcache.Informer, error) {
	return f.inf, f.getErr
}

func (f *fakeCRCache) List(context.Context, client.ObjectList, ...client.ListOption) error {
	f.delegated++
	return nil
}

// TestLabelListCacheAnswersOrDelegates checks which Lists NewCacheWith's
// cache answers from the encoded store and that its answers are those of
// controller-runtime's reader: the matching items, the GVK set where the
// reader copies, the limit and the continue token.
func TestLabelListCacheAnswersOrDelegates(t *testing.T) {
	s := newServer(t, 0)
	var labelled []string
	if err := s.CreateN(30, func(i int) kruntime.Object {
		cm := configMap(fmt.Sprintf("cm-%02d", i))
		if i%3 == 0 {
			cm.Labels = map[string]string{"app": "a"}
			labelled = append(labelled, cm.Name)
		}
		return cm
	}); err != nil {
		t.Fatal(err)
	}
	cmKind := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	encoded := newInformer(s, 0, WithEncodedStore())
	kinded := newInformer(s, 0, WithEncodedStore(), withReadKind(cmKind))
	plain := newInformer(s, 0)
	for _, inf := range []*SharedIndexInformer{encoded, kinded, plain} {
		run(t, inf)
		waitSynced(t, inf)
	}
	unsynced := newInformer(s, 0, WithEncodedStore())
	foreign := toolscache.NewSharedIndexInformer(s.ListerWatcher(), &corev1.ConfigMap{}, 0, toolscache.Indexers{})

	byLabel := client.MatchingLabels{"app": "a"}
	for _, tc := range []struct {
		name       string
		inf        crcache.Informer
		getErr     error
		noDeepCopy bool
		opts       []client.ListOption
		want       []string // nil: delegated
		wantKind   string
	}{
		{"label selector, DeepCopy off, kind from the store", kinded, nil, true, []client.ListOption{byLabel}, labelled, "ConfigMap"},
		{"label selector, DeepCopy off, stored without kind", encoded, nil, true, []client.ListOption{byLabel}, labelled, ""},
		{"label selector, DeepCopy on: the reader sets the kind", encoded, nil, false, []client.ListOption{byLabel}, labelled, "ConfigMap"},
		{"per-List UnsafeDisableDeepCopy", encoded, nil, false, []client.ListOption{byLabel, client.UnsafeDisableDeepCopy}, labelled, ""},
		{"namespace", kinded, nil, true, []client.ListOption{byLabel, client.InNamespace(testNamespace)}, labelled, "ConfigMap"},
		{"other namespace", kinded, nil, true, []client.ListOption{byLabel, client.InNamespace("other")}, []string{}, "ConfigMap"},
		{"limit", kinded, nil, true, []client.ListOption{byLabel, client.Limit(4)}, labelled[:4], "ConfigMap"},
		{"no selector", kinded, nil, true, []client.ListOption{client.InNamespace(testNamespace)}, nil, ""},
		{"field selector", kinded, nil, true, []client.ListOption{byLabel, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", "cm-00")}}, nil, ""},
		{"continue", kinded, nil, true, []client.ListOption{byLabel, client.Continue("x")}, nil, ""},
		{"plain store", plain, nil, true, []client.ListOption{byLabel}, nil, ""},
		{"not synced", unsynced, nil, true, []client.ListOption{byLabel}, nil, ""},
		{"client-go's informer", foreign, nil, true, []client.ListOption{byLabel}, nil, ""},
		{"GetInformer fails", nil, errGetInformer, true, []client.ListOption{byLabel}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeCRCache{inf: tc.inf, getErr: tc.getErr}
			l := &labelListCache{Cache: f, scheme: defaultScheme, defaultNoDeepCopy: tc.noDeepCopy}
			var list corev1.ConfigMapList
			err := l.List(context.Background(), &list, tc.opts...)
			if tc.getErr != nil {
				// controller-runtime's List would look the informer up
				// again and fail alike (TestLabelListOfAnUnknownKindDiscoversOnce).
				if !errors.Is(err, tc.getErr) || f.delegated != 0 {
					t.Fatalf("List = %v with %d delegated, want GetInformer's error and none", err, f.delegated)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if f.delegated != 1 {
					t.Fatalf("delegated %d Lists, want 1", f.delegated)
				}
				return
			}
			if f.delegated != 0 {
				t.Fatal("delegated a List the store answers")
			}
			var names []string
			for _, cm := range list.Items {
				names = append(names, cm.Name)
				if cm.Kind != tc.wantKind || (tc.wantKind != "" && cm.APIVersion != "v1") {
					t.Fatalf("%s has kind %q %q, want %q", cm.Name, cm.APIVersion, cm.Kind, tc.wantKind)
				}
			}
			slices.Sort(names)
			if len(names) != len(tc.want) || !isSubset(names, labelled) {
				t.Fatalf("listed %v, want %d of %v", names, len(tc.want), labelled)
			}
			if list.Items == nil || list.Continue != "continue-not-supported" {
				t.Fatalf("Items %v (nil: %v), Continue %q: want what controller-runtime's reader sets", list.Items, list.Items == nil, list.Continue)
			}
		})
	}

	t.Run("an unknown list type", func(t *testing.T) {
		f := &fakeCRCache{inf: kinded}
		l := &labelListCache{Cache: f, scheme: kruntime.NewScheme()}
		if err := l.List(context.Background(), &corev1.ConfigMapList{}, byLabel); err != nil || f.delegated != 1 {
			t.Fatalf("List = %v with %d delegated, want controller-runtime's answer", err, f.delegated)
		}
	})
}

var errGetInformer = errors.New("no informer")

func isSubset(names, of []string) bool {
	for _, n := range names {
		if !slices.Contains(of, n) {
			return false
		}
	}
	return true
}

// TestNewLabelListCacheOptions checks the reader settings the cache takes
// from controller-runtime's options.
func TestNewLabelListCacheOptions(t *testing.T) {
	inner := &fakeCRCache{}
	c, err := newLabelListCache(inner, defaultScheme, crcache.Options{ReaderFailOnMissingInformer: true}, nil)
	if err != nil || c != crcache.Cache(inner) {
		t.Fatalf("ReaderFailOnMissingInformer: %T, %v; want controller-runtime's cache as it is", c, err)
	}
	c, err = newLabelListCache(inner, defaultScheme, crcache.Options{
		DefaultUnsafeDisableDeepCopy: ptr.To(true),
		ByObject: map[client.Object]crcache.ByObject{
			&corev1.ConfigMap{}: {UnsafeDisableDeepCopy: ptr.To(false)},
			&corev1.Secret{}:    {},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := c.(*labelListCache)
	cm, secret := corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithKind("Secret")
	if !l.defaultNoDeepCopy || l.noDeepCopy[cm] || !l.noDeepCopy[secret] {
		t.Fatalf("default %v, ConfigMap %v, Secret %v; want true, false (its own), true (the default)", l.defaultNoDeepCopy, l.noDeepCopy[cm], l.noDeepCopy[secret])
	}
	if !l.NeedLeaderElection() {
		t.Fatal("NeedLeaderElection of a cache that does not say: false, want true as a manager reads it")
	}
	if _, err := newLabelListCache(inner, kruntime.NewScheme(), crcache.Options{ByObject: map[client.Object]crcache.ByObject{&corev1.Secret{}: {}}}, nil); err == nil {
		t.Fatal("a ByObject type the scheme does not know: no error")
	}
}

// TestNewCacheWithAnswersLabelListsOfTheEncodedStore: NewCacheWith puts the
// label-list answer in front of controller-runtime's cache with the encoded
// store, and only there (test/envtest checks its answers on a real API
// server, which the cache's own reader would give as well).
func TestNewCacheWithAnswersLabelListsOfTheEncodedStore(t *testing.T) {
	cfg := &rest.Config{Host: "https://unused.invalid"}
	for _, tc := range []struct {
		name string
		opts []Option
		want bool
	}{
		{"encoded", []Option{WithEncodedStore()}, true},
		{"plain", nil, false},
	} {
		c, err := NewCacheWith(append(tc.opts, WithMetrics(nil))...)(cfg, crcache.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.(*labelListCache); ok != tc.want {
			t.Errorf("%s: NewCacheWith made a %T; label-list answers: %v, want %v", tc.name, c, ok, tc.want)
		}
	}
}

// On a multi-namespace cache (DefaultNamespaces, or a ByObject entry's
// Namespaces) controller-runtime's informers are never ours, so a label
// List must go to controller-runtime without looking its informer up: the
// multi-namespace cache's GetInformer starts informers in every namespace
// of the cache and, per call, a goroutine that waits for them to sync,
// where controller-runtime's List of one namespace starts nothing else.
func TestLabelListsOfMultiNamespaceCachesStartNothing(t *testing.T) {
	mapper := apimeta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"Secret", "SecretList", "ConfigMap", "ConfigMapList"} {
		mapper.Add(corev1.SchemeGroupVersion.WithKind(kind), apimeta.RESTScopeNamespace)
	}
	cfg := &rest.Config{Host: "https://unused.invalid"}
	twoNamespaces := map[string]crcache.Config{"a": {}, "b": {}}
	for _, tc := range []struct {
		name string
		opts crcache.Options
		list client.ObjectList
	}{
		{"DefaultNamespaces", crcache.Options{DefaultNamespaces: twoNamespaces}, &corev1.SecretList{}},
		{"ByObject Namespaces", crcache.Options{ByObject: map[client.Object]crcache.ByObject{
			&corev1.ConfigMap{}: {Namespaces: twoNamespaces},
		}}, &corev1.ConfigMapList{}},
		{"ByObject taking DefaultNamespaces", crcache.Options{DefaultNamespaces: twoNamespaces, ByObject: map[client.Object]crcache.ByObject{
			&corev1.ConfigMap{}: {Label: nil},
		}}, &corev1.ConfigMapList{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Mapper = mapper
			theirs, err := crcache.New(cfg, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			ours, err := NewCacheWith(WithEncodedStore(), WithMetrics(nil))(cfg, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := ours.(*labelListCache); !ok {
				t.Fatalf("NewCacheWith(WithEncodedStore()) returned %T, want its label List cache", ours)
			}
			list := func(c crcache.Cache) error {
				return c.List(context.Background(), tc.list, client.InNamespace("a"), client.MatchingLabels{"app": "x"})
			}
			wantErr := list(theirs) // a cache not started refuses reads
			if wantErr == nil {
				t.Fatal("controller-runtime's cache, not started, answered a List")
			}
			_ = list(ours) // its first List may make the namespace's informer
			goruntime.GC()
			before := goruntime.NumGoroutine()
			for range 100 {
				if err := list(ours); err == nil || err.Error() != wantErr.Error() {
					t.Fatalf("List: %v, controller-runtime's %v", err, wantErr)
				}
			}
			time.Sleep(50 * time.Millisecond)
			if after := goruntime.NumGoroutine(); after-before > 10 {
				t.Fatalf("100 label Lists of a cache not started left %d goroutines running (%d before, %d after)", after-before, before, after)
			}
		})
	}
}
