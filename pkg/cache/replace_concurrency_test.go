package cache

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/leaninformer/leaninformer/pkg/codec"
)

// This file holds what happens between the steps of AddToReplace, which
// runs its reuse check and transform without the store's locks: live
// writes, AddIndexers and restarts of the replace in between.

// canonicalUID is a UUID, so that an encoded entry keeps its identity in
// compact form (no extra).
func canonicalUID(i int) string { return fmt.Sprintf("00000000-0000-0000-0000-%012d", i+1) }

// stallingObject is a listed object whose first GetUID, which relist reuse
// calls after it found the live entry and released the read lock, tells
// entered and then runs stall: it holds AddToReplace between its lookup and
// its buffering for as long as a test needs.
type stallingObject struct {
	metav1.PartialObjectMetadata
	once    sync.Once
	entered chan struct{}
	stall   func()
}

func newStallingObject(o *pom, stall func()) *stallingObject {
	return &stallingObject{PartialObjectMetadata: *o, entered: make(chan struct{}), stall: stall}
}

func (s *stallingObject) GetUID() types.UID {
	s.once.Do(func() {
		close(s.entered)
		s.stall()
	})
	return s.PartialObjectMetadata.GetUID()
}

// encodedStore holds a/0 .. a/n-1 at resourceVersion 5, encoded, each
// entry without extra.
func encodedStore(t *testing.T, n int) *Indexer {
	t.Helper()
	c := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), WithCodec(codec.New()))
	for i := range n {
		if err := c.Add(obj("a", fmt.Sprint(i), canonicalUID(i), "5", nil)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// AddIndexers gives entries that had one value per index an extra with
// their values' ends, while relist reuse reads an entry's identity without
// a lock: under -race, writing into the entry was a data race.
func TestAddIndexersBesideReuseCheck(t *testing.T) {
	c := encodedStore(t, 8)
	c.StartReplace()
	// The stall is a sleep, not a synchronisation: the race detector sees
	// the reuse check's read and AddIndexers' write unordered.
	listed := newStallingObject(obj("a", "0", canonicalUID(0), "5", nil), func() { time.Sleep(200 * time.Millisecond) })
	done := make(chan error)
	go func() {
		_, reused, err := c.AddToReplace(listed, nil)
		if err == nil && !reused {
			err = errors.New("the unchanged object was not reused")
		}
		done <- err
	}()
	<-listed.entered
	// tagsIndex gives these objects no value: every entry gets ends.
	if err := c.AddIndexers(toolscache.Indexers{"tags": tagsIndex}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Handlers read the resourceVersion of what the store handed out
// (ResourceVersionOf) on their own goroutines, without the store's locks,
// while AddIndexers may be adding an index.
func TestAddIndexersBesideResourceVersionOf(t *testing.T) {
	c := encodedStore(t, 200)
	_, stored := c.ListStored()
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		time.Sleep(100 * time.Millisecond) // no ordering with AddIndexers: see above
		for _, s := range stored {
			if rv, ok := ResourceVersionOf(s); !ok || rv != "5" {
				errs <- fmt.Errorf("ResourceVersionOf = %q, %v; want 5", rv, ok)
				return
			}
		}
	}()
	if err := c.AddIndexers(toolscache.Indexers{"tags": tagsIndex}); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// A live write replaces the entry relist reuse found unchanged, and an
// index is added, before AddToReplace buffers that entry: AddIndexers saw it
// neither live nor buffered, so an encoded entry had no values for the new
// index, and FinishReplace panicked writing it. The listed object must be
// stored and indexed, as the plain store (and client-go's Replace) do.
func TestLiveWriteAndAddIndexersDuringReuse(t *testing.T) {
	for _, withCodec := range []bool{false, true} {
		t.Run(fmt.Sprint("codec=", withCodec), func(t *testing.T) {
			var opts []Option
			if withCodec {
				opts = append(opts, WithCodec(codec.New()))
			}
			c := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers(), opts...)
			const n = 8
			for i := range n {
				if err := c.Add(obj("a", fmt.Sprint(i), canonicalUID(i), "5", nil)); err != nil {
					t.Fatal(err)
				}
			}
			c.StartReplace()
			release := make(chan struct{})
			listed := newStallingObject(obj("a", "0", canonicalUID(0), "5", nil), func() { <-release })
			done := make(chan error)
			go func() {
				_, _, err := c.AddToReplace(listed, nil)
				done <- err
			}()
			<-listed.entered
			if err := c.Update(obj("a", "0", canonicalUID(0), "6", nil)); err != nil {
				t.Fatal(err)
			}
			if err := c.AddIndexers(toolscache.Indexers{"name": nameIndex}); err != nil {
				t.Fatal(err)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			for i := 1; i < n; i++ {
				if _, _, err := c.AddToReplace(obj("a", fmt.Sprint(i), canonicalUID(i), "5", nil), nil); err != nil {
					t.Fatal(err)
				}
			}
			var diff *Diff
			if msg := panicMessage(func() {
				var err error
				if diff, err = c.FinishReplace("7"); err != nil {
					t.Fatal(err)
				}
			}); msg != "" {
				t.Fatalf("FinishReplace panicked: %s", msg)
			}
			if keys, err := c.IndexKeys("name", "0"); err != nil || len(keys) != 1 || keys[0] != "a/0" {
				t.Fatalf(`IndexKeys("name", "0") = %v, %v; want [a/0]`, keys, err)
			}
			got, exists, err := c.GetByKey("a/0")
			if err != nil || !exists {
				t.Fatalf("a/0: exists %v, %v", exists, err)
			}
			if rv := got.(metav1.Object).GetResourceVersion(); rv != "5" {
				t.Errorf("a/0 at resourceVersion %s after the replace; the list gave 5", rv)
			}
			// The diff tells handlers a/0 went from the live write's
			// version back to the listed one: not a reuse.
			if diff.Reused != n-1 {
				t.Errorf("Reused = %d, want %d (every object but a/0)", diff.Reused, n-1)
			}
		})
	}
}

// An AddToReplace whose replace was aborted and another started while its
// transform ran must not buffer into the new one: its object is not in the
// new list, and would be kept (or brought back) by it.
func TestAddToReplaceOfADiscardedReplace(t *testing.T) {
	for _, restart := range []struct {
		name string
		do   func(c *Indexer)
	}{
		{"abort then start", func(c *Indexer) { c.AbortReplace(); c.StartReplace() }},
		{"start again", func(c *Indexer) { c.StartReplace() }},
	} {
		t.Run(restart.name, func(t *testing.T) {
			c := NewIndexer(toolscache.MetaNamespaceKeyFunc, nsIndexers())
			for i := range 8 {
				if err := c.Add(obj("a", fmt.Sprint(i), canonicalUID(i), "5", nil)); err != nil {
					t.Fatal(err)
				}
			}
			c.StartReplace()
			entered, release := make(chan struct{}), make(chan struct{})
			slow := func(o any) (any, error) { close(entered); <-release; return o, nil } //nolint:unparam // a TransformFunc
			done := make(chan error)
			go func() {
				_, _, err := c.AddToReplace(obj("a", "gone", canonicalUID(100), "9", nil), slow)
				done <- err
			}()
			<-entered
			restart.do(c)
			close(release)
			if err := <-done; !errors.Is(err, ErrNoReplace) {
				t.Errorf("AddToReplace for the discarded replace: %v, want ErrNoReplace", err)
			}
			for i := range 8 {
				if _, _, err := c.AddToReplace(obj("a", fmt.Sprint(i), canonicalUID(i), "5", nil), nil); err != nil {
					t.Fatal(err)
				}
			}
			diff, err := c.FinishReplace("10")
			if err != nil {
				t.Fatal(err)
			}
			if _, exists, _ := c.GetByKey("a/gone"); exists || len(diff.Changes) != 8 {
				t.Errorf("after the new replace: a/gone stored %v, %d changes; want false, 8", exists, len(diff.Changes))
			}
		})
	}
}
