package shard

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// wantPanic runs f and fails unless it panics with a message containing
// want.
func wantPanic(t *testing.T, what, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s: no panic, want one naming %q", what, want)
			return
		}
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Errorf("%s: panic %v, want one naming %q", what, r, want)
		}
	}()
	f()
}

// Arguments that would only fail when used (a nil member, reader, key or
// reconciler, a nil object, a key that contradicts the member's) are
// refused where they are given, naming the argument: the constructors
// that return no error panic, as controller-runtime's builders do.
func TestConstructorsRefuseUnusableArguments(t *testing.T) {
	m := idleMember(t)
	reader := crfake.NewClientBuilder().Build()
	inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	key := ObjectKey(m, reader, &corev1.ConfigMap{})

	wantPanic(t, "Reconciler(nil, ...)", "shard.Reconciler: the member is nil", func() { Reconciler(nil, key, inner) })
	wantPanic(t, "Reconciler(m, nil, ...)", "shard.Reconciler: the key is nil", func() { Reconciler(m, nil, inner) })
	wantPanic(t, "Reconciler(m, key, nil)", "shard.Reconciler: the reconciler is nil", func() { Reconciler(m, key, nil) })
	wantPanic(t, "Reconciler(m, key, typed nil)", "shard.Reconciler: the reconciler is nil", func() { Reconciler(m, key, reconcile.Func(nil)) })
	// RequestName and RequestNamespace place requests by a namespace: a
	// member of the UID key would reconcile what its caches do not hold.
	wantPanic(t, "Reconciler(KeyUID member, RequestName, ...)", "RequestName", func() { Reconciler(m, RequestName, inner) })
	wantPanic(t, "Reconciler(KeyUID member, RequestNamespace, ...)", "RequestNamespace", func() { Reconciler(m, RequestNamespace, inner) })
	byNamespace, err := New(fake.NewClientset().CoordinationV1(), "ns", "ctl", WithIdentity("a"), WithKey(KeyNamespace), WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	Reconciler(byNamespace, RequestName, inner)
	Reconciler(byNamespace, RequestNamespace, inner)

	wantPanic(t, "ObjectKey(nil, ...)", "shard.ObjectKey: the member is nil", func() { ObjectKey(nil, reader, &corev1.ConfigMap{}) })
	wantPanic(t, "ObjectKey(m, nil, ...)", "shard.ObjectKey: the reader is nil", func() { ObjectKey(m, nil, &corev1.ConfigMap{}) })
	wantPanic(t, "ObjectKey(m, typed nil reader, ...)", "shard.ObjectKey: the reader is nil", func() { ObjectKey(m, client.Reader((client.Client)(nil)), &corev1.ConfigMap{}) })
	wantPanic(t, "ObjectKey(m, reader, nil)", "shard.ObjectKey: the object is nil", func() { ObjectKey(m, reader, nil) })
	wantPanic(t, "ObjectKey(m, reader, (*ConfigMap)(nil))", "shard.ObjectKey: the object is nil", func() { ObjectKey(m, reader, (*corev1.ConfigMap)(nil)) })

	lw := &toolscache.ListWatch{}
	wantPanic(t, "NewListerWatcher(nil, ...)", "shard.NewListerWatcher: the ListerWatcher is nil", func() { NewListerWatcher(nil, m, nil) })
	wantPanic(t, "NewListerWatcher(lw, nil, ...)", "shard.NewListerWatcher: the member is nil", func() { NewListerWatcher(lw, nil, nil) })

	wantPanic(t, "Handovers(nil, ...)", "shard.Handovers: the member is nil", func() { Handovers(nil, reader, &corev1.ConfigMapList{}, key) })
	wantPanic(t, "Handovers(m, nil, ...)", "shard.Handovers: the reader is nil", func() { Handovers(m, nil, &corev1.ConfigMapList{}, key) })
	wantPanic(t, "Handovers(m, reader, nil, ...)", "shard.Handovers: the list is nil", func() { Handovers(m, reader, nil, key) })
	wantPanic(t, "Handovers(m, reader, list, nil)", "shard.Handovers: the key is nil", func() { Handovers(m, reader, &corev1.ConfigMapList{}, nil) })
	wantPanic(t, "Handovers(KeyUID member, ..., RequestName)", "RequestName", func() { Handovers(m, reader, &corev1.NamespaceList{}, RequestName) })
}

// New refuses a nil Lease client, typed or not, a nil option and an
// explicitly empty identity (an unset environment variable, most likely:
// the host name it would fall back to is the same for every process of a
// host, and two processes of one identity take each other's Lease over).
func TestNewRefusesUnusableArguments(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	for _, tc := range []struct {
		what   string
		leases coordinationclient.LeasesGetter
		opts   []Option
		want   string
	}{
		{"a nil Lease client", nil, nil, "a Lease client is required"},
		{"a typed nil Lease client", (*coordinationclient.CoordinationV1Client)(nil), nil, "a Lease client is required"},
		{"a nil option", leases, []Option{WithIdentity("a"), nil}, "option 1 is nil"},
		{"an empty identity", leases, []Option{WithIdentity("")}, `WithIdentity("")`},
		{"a zero lease duration", leases, []Option{WithIdentity("a"), WithLeaseDuration(0)}, "WithLeaseDuration(0s)"},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("New with %s panicked: %v", tc.what, r)
				}
			}()
			_, err := New(tc.leases, "ns", "ctl", tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New with %s: error %v, want one naming %q", tc.what, err, tc.want)
			}
		}()
	}
}

// checkKey recognises RequestName and RequestNamespace by their function
// pointers. What a user builds twice must not be taken for them: two
// closures of one constructor share their code, and two ObjectKeys are
// method values of one method (one code pointer), but neither is either
// function. RequestNamespace held in a variable is still recognised; a
// KeyFunc that calls it is not (it is the user's, placing requests as it
// likes).
func TestCheckKeyMatchesTheFunctionsOnly(t *testing.T) {
	m := idleMember(t)
	reader := crfake.NewClientBuilder().Build()
	inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	var held KeyFunc = RequestNamespace
	wantPanic(t, "Reconciler(KeyUID member, RequestNamespace held in a variable, ...)", "RequestNamespace", func() { Reconciler(m, held, inner) })

	byPrefix := func(prefix string) KeyFunc {
		return func(_ context.Context, req reconcile.Request) (string, bool, error) {
			return prefix + req.Name, true, nil
		}
	}
	static := func() KeyFunc {
		return func(_ context.Context, req reconcile.Request) (string, bool, error) { return req.Name, true, nil }
	}
	wrapper := func(ctx context.Context, req reconcile.Request) (string, bool, error) {
		v, ok, err := RequestNamespace(ctx, req)
		return v, ok, err
	}
	for _, tc := range []struct {
		what string
		key  KeyFunc
	}{
		{"a closure with a capture, built once", byPrefix("a/")},
		{"the same closure built again", byPrefix("b/")},
		{"a closure without captures", static()},
		{"the same closure built again", static()},
		{"an ObjectKey", ObjectKey(m, reader, &corev1.ConfigMap{})},
		{"another ObjectKey", ObjectKey(m, reader, &corev1.Secret{})},
		{"a KeyFunc that calls RequestNamespace", wrapper},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s was refused as a namespace key: %v", tc.what, r)
				}
			}()
			Reconciler(m, tc.key, inner)
			Handovers(m, reader, &corev1.ConfigMapList{}, tc.key)
		}()
	}
}
