package fake

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// labeled is cm(name) in namespace ns with the label app=app (none when app
// is "").
func labeled(ns, name, app string) *corev1.ConfigMap {
	c := cm(name)
	c.Namespace = ns
	if app != "" {
		c.Labels = map[string]string{"app": app}
	}
	return c
}

func selectorServer(t *testing.T) *Server {
	t.Helper()
	s := newServer(t)
	for _, c := range []*corev1.ConfigMap{
		labeled("ns", "a", "x"),    // @2
		labeled("ns", "b", "y"),    // @3
		labeled("ns", "c", ""),     // @4
		labeled("other", "d", "x"), // @5
		labeled("other", "e", "z"), // @6
	} {
		if _, err := s.Create(c); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// A LIST with a label or field selector returns only the objects it selects,
// as the API server does: labels.Parse semantics for labels, metadata.name
// and metadata.namespace for fields.
func TestListAppliesSelectors(t *testing.T) {
	s := selectorServer(t)
	for _, tc := range []struct {
		opts metav1.ListOptions
		want []string
	}{
		{metav1.ListOptions{LabelSelector: "app=x"}, []string{"a", "d"}},
		{metav1.ListOptions{LabelSelector: "app in (x,y)"}, []string{"a", "b", "d"}},
		{metav1.ListOptions{LabelSelector: "app!=x"}, []string{"b", "c", "e"}},
		{metav1.ListOptions{LabelSelector: "!app"}, []string{"c"}},
		{metav1.ListOptions{LabelSelector: "app"}, []string{"a", "b", "d", "e"}},
		{metav1.ListOptions{FieldSelector: "metadata.namespace=other"}, []string{"d", "e"}},
		{metav1.ListOptions{FieldSelector: "metadata.name=b"}, []string{"b"}},
		{metav1.ListOptions{FieldSelector: "metadata.name!=b,metadata.namespace==ns"}, []string{"a", "c"}},
		{metav1.ListOptions{LabelSelector: "app=x", FieldSelector: "metadata.namespace=other"}, []string{"d"}},
		{metav1.ListOptions{LabelSelector: "app=nothing"}, nil},
	} {
		if got := names(list(t, s, tc.opts)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("list %+v: %v, want %v", tc.opts, got, tc.want)
		}
	}
}

// Pages of a LIST with a selector hold up to limit selected objects; a page
// is followed by a continue token whenever objects remain after it, selected
// or not (the watch cache and etcd3's store both decide so), so the last
// page may be empty.
func TestListPagesWithSelectors(t *testing.T) {
	s := selectorServer(t)
	var pages [][]string
	opts := metav1.ListOptions{LabelSelector: "app=x", Limit: 1}
	for range 10 {
		l := list(t, s, opts)
		if l.RemainingItemCount != nil {
			t.Errorf("page %d has remainingItemCount %d with a selector", len(pages), *l.RemainingItemCount)
		}
		pages = append(pages, names(l))
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	// a (ns/a), then d (other/d) with other/e after it, then nothing.
	if want := [][]string{{"a"}, {"d"}, nil}; !reflect.DeepEqual(pages, want) {
		t.Errorf("pages %v, want %v", pages, want)
	}
}

// A selector the API server cannot parse, or a field it does not index,
// answers 400 BadRequest with the server's message, on LIST and WATCH.
func TestSelectorErrors(t *testing.T) {
	s := selectorServer(t)
	lw := s.ListerWatcher()
	for _, tc := range []struct {
		opts metav1.ListOptions
		want string
	}{
		{metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}, `"spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{metav1.ListOptions{FieldSelector: "metadata.name"}, "invalid selector"},
		{metav1.ListOptions{LabelSelector: "app=x,=y"}, "found '='"},
		{metav1.ListOptions{LabelSelector: "app in x"}, "found 'x'"},
	} {
		_, err := lw.List(tc.opts)
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("list %+v: %v, want a BadRequest saying %q", tc.opts, err, tc.want)
		}
		w, err := lw.Watch(tc.opts)
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("watch %+v: %v, want a BadRequest saying %q", tc.opts, err, tc.want)
		}
		if w != nil {
			w.Stop()
		}
	}
}

// describeLabels is describe with the object's app label.
func describeLabels(ev watch.Event) string {
	if ev.Type == watch.Error || ev.Type == watch.Bookmark {
		return describe(ev)
	}
	return describe(ev) + " app=" + ev.Object.(*corev1.ConfigMap).Labels["app"]
}

// A watch with a selector sends the selected objects' events; an object that
// starts matching after an update comes as ADDED, one that stops matching as
// DELETED with its last matching state at the update's resourceVersion, as
// the watch cache (cacheWatcher.convertToWatchEvent) and etcd3's watcher
// (watchChan.transform) send them.
func TestWatchAppliesSelectors(t *testing.T) {
	for name, opts := range map[string]metav1.ListOptions{
		"replayed from a resourceVersion": {ResourceVersion: "6"},
		"live":                            {},
	} {
		t.Run(name, func(t *testing.T) {
			s := selectorServer(t) // rv 6
			opts.LabelSelector = "app=x"
			opts.FieldSelector = "metadata.namespace=ns"
			var w watch.Interface
			if opts.ResourceVersion == "" {
				w = openWatch(t, s, opts)
				// Synthetic state from "": the selected objects only.
				if got := describeLabels(receive(t, w)); got != "ADDED a@2 app=x" {
					t.Fatalf("initial event %s, want ADDED a@2 app=x", got)
				}
			}
			update := func(ns, name, app string) {
				t.Helper()
				if _, err := s.Update(labeled(ns, name, app)); err != nil {
					t.Fatal(err)
				}
			}
			update("ns", "b", "x")                                       // @7: starts matching
			update("ns", "b", "x")                                       // @8: still matches
			update("ns", "a", "y")                                       // @9: stops matching
			update("ns", "c", "y")                                       // @10: matched neither before nor after
			update("other", "e", "x")                                    // @11: other namespace
			if _, err := s.Create(labeled("ns", "f", "x")); err != nil { // @12
				t.Fatal(err)
			}
			if _, err := s.Create(labeled("ns", "g", "y")); err != nil { // @13
				t.Fatal(err)
			}
			if _, err := s.Delete("ns", "g"); err != nil { // @14: never matched
				t.Fatal(err)
			}
			if _, err := s.Delete("ns", "f"); err != nil { // @15
				t.Fatal(err)
			}
			if opts.ResourceVersion != "" {
				w = openWatch(t, s, opts)
			}
			want := []string{
				"ADDED b@7 app=x",
				"MODIFIED b@8 app=x",
				"DELETED a@9 app=x",
				"ADDED f@12 app=x",
				"DELETED f@15 app=x",
			}
			var got []string
			for range want {
				got = append(got, describeLabels(receive(t, w)))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("events %v, want %v", got, want)
			}
		})
	}
}

// A streamed list (sendInitialEvents=true) sends the selected objects, then
// its end bookmark, which no selector filters.
func TestWatchListAppliesSelectors(t *testing.T) {
	s := selectorServer(t)
	w := openWatch(t, s, metav1.ListOptions{
		LabelSelector: "app=x", SendInitialEvents: ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true,
	})
	if got, want := events(t, w, 3), []string{"ADDED a@2", "ADDED d@5", "BOOKMARK @6 end"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// WithFieldSet adds the fields a resource indexes, as a registry's field
// label conversions do: a LIST and a WATCH select on them (an object that
// moves to the selected node comes as ADDED, one that leaves as DELETED),
// metadata.name and metadata.namespace still work, and any other field is
// a 400 with the message of a kind's conversion.
func TestWithFieldSet(t *testing.T) {
	s := NewServer(&corev1.PodList{}, WithFieldSet(func(obj runtime.Object) fields.Set {
		return fields.Set{"spec.nodeName": obj.(*corev1.Pod).Spec.NodeName}
	}))
	t.Cleanup(s.Close)
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	}
	for _, p := range []*corev1.Pod{pod("a", "n1"), pod("b", "n2"), pod("c", "n1")} {
		if _, err := s.Create(p); err != nil {
			t.Fatal(err)
		}
	}
	lw := s.ListerWatcher()
	podNames := func(opts metav1.ListOptions) []string {
		t.Helper()
		obj, err := lw.List(opts)
		if err != nil {
			t.Fatalf("list %+v: %v", opts, err)
		}
		var out []string
		for _, p := range obj.(*corev1.PodList).Items {
			out = append(out, p.Name)
		}
		return out
	}
	if got := podNames(metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Errorf("spec.nodeName=n1 listed %v, want [a c]", got)
	}
	if got := podNames(metav1.ListOptions{FieldSelector: "spec.nodeName=n1,metadata.name!=a"}); !reflect.DeepEqual(got, []string{"c"}) {
		t.Errorf("spec.nodeName=n1,metadata.name!=a listed %v, want [c]", got)
	}
	if _, err := lw.List(metav1.ListOptions{FieldSelector: "status.phase=Running"}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "field label not supported: status.phase") {
		t.Errorf("a field the set does not give: %v, want a BadRequest saying field label not supported", err)
	}

	w, err := lw.Watch(metav1.ListOptions{FieldSelector: "spec.nodeName=n2", ResourceVersion: s.ResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := s.Update(pod("a", "n2")); err != nil { // moves to n2
		t.Fatal(err)
	}
	if _, err := s.Update(pod("b", "n3")); err != nil { // leaves n2
		t.Fatal(err)
	}
	var got []string
	for range 2 {
		ev := receive(t, w)
		got = append(got, string(ev.Type)+" "+ev.Object.(*corev1.Pod).Name+" on "+ev.Object.(*corev1.Pod).Spec.NodeName)
	}
	if want := []string{"ADDED a on n2", "DELETED b on n2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("watch on spec.nodeName=n2: %v, want %v", got, want)
	}
}
