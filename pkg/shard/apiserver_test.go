package shard

import (
	"encoding/json"
	"errors"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// serveLeasesLikeTheAPIServer makes client's Leases behave as the API
// server's do where client-go's fake clientset does not: every write gives
// the Lease a new resourceVersion, a write or delete that names a stale one
// fails with a 409, and a Lease with finalizers is only marked for deletion
// (it goes once its last finalizer is removed). The fake's reactions run
// one at a time, so each of these is atomic.
func serveLeasesLikeTheAPIServer(client *fake.Clientset) {
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	tracker := client.Tracker()
	rv := 0
	nextRV := func() string { rv++; return strconv.Itoa(rv) }
	conflict := func(name string) error {
		return apierrors.NewConflict(gvr.GroupResource(), name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	get := func(ns, name string) (*coordinationv1.Lease, error) {
		o, err := tracker.Get(gvr, ns, name)
		if err != nil {
			return nil, err
		}
		return o.(*coordinationv1.Lease).DeepCopy(), nil
	}
	// store writes l, its resourceVersion checked, under a new one; a Lease
	// marked for deletion goes with its last finalizer.
	store := func(l *coordinationv1.Lease) (runtime.Object, error) {
		if l.DeletionTimestamp != nil && len(l.Finalizers) == 0 {
			return l, tracker.Delete(gvr, l.Namespace, l.Name)
		}
		l.ResourceVersion = nextRV()
		return l, tracker.Update(gvr, l, l.Namespace)
	}
	client.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		l.Namespace, l.ResourceVersion = a.GetNamespace(), nextRV()
		l.DeletionTimestamp = nil
		return true, l, tracker.Create(gvr, l, l.Namespace)
	})
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		cur, err := get(a.GetNamespace(), l.Name)
		if err != nil {
			return true, nil, err
		}
		if l.ResourceVersion != "" && l.ResourceVersion != cur.ResourceVersion {
			return true, nil, conflict(l.Name)
		}
		l.Namespace, l.DeletionTimestamp = cur.Namespace, cur.DeletionTimestamp
		out, err := store(l)
		return true, out, err
	})
	client.PrependReactor("patch", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		cur, err := get(a.GetNamespace(), pa.GetName())
		if err != nil {
			return true, nil, err
		}
		var precondition struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if json.Unmarshal(pa.GetPatch(), &precondition) == nil && precondition.Metadata.ResourceVersion != "" &&
			precondition.Metadata.ResourceVersion != cur.ResourceVersion {
			return true, nil, conflict(cur.Name)
		}
		if _, _, err := k8stesting.ObjectReaction(tracker)(a); err != nil { // applies the patch
			return true, nil, err
		}
		l, err := get(a.GetNamespace(), pa.GetName())
		if err != nil {
			return true, nil, err
		}
		l.DeletionTimestamp = cur.DeletionTimestamp
		out, err := store(l)
		return true, out, err
	})
	client.PrependReactor("delete", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		da := a.(k8stesting.DeleteAction)
		cur, err := get(a.GetNamespace(), da.GetName())
		if err != nil {
			return true, nil, err
		}
		if pre := da.GetDeleteOptions().Preconditions; pre != nil && pre.ResourceVersion != nil && *pre.ResourceVersion != cur.ResourceVersion {
			return true, nil, conflict(cur.Name)
		}
		if len(cur.Finalizers) == 0 {
			return true, nil, tracker.Delete(gvr, cur.Namespace, cur.Name)
		}
		if cur.DeletionTimestamp == nil {
			now := metav1.Now()
			cur.DeletionTimestamp = &now
			_, err = store(cur)
		}
		return true, nil, err
	})
}
