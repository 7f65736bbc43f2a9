package shard

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Lease metadata members read and write. Everything a member tells the
// others is in its own Lease; nothing else is shared.
const (
	// LabelController is the label on every member Lease, its value the
	// sharded controller's name: members find each other by it.
	LabelController = "shard.leaninformer.io/controller"
	// AnnotationRange holds the Range the member serves or is about to
	// serve, in Range.String's form. Others never take a hash in it while
	// the Lease is live.
	AnnotationRange = "shard.leaninformer.io/range"
	// AnnotationBuckets and AnnotationKey hold the member's bucket count and
	// hash key, so that members can tell when they disagree.
	AnnotationBuckets = "shard.leaninformer.io/buckets"
	AnnotationKey     = "shard.leaninformer.io/key"
	// Finalizer keeps a member's Lease while the member may serve: a Lease
	// deleted by hand stays (terminating, still renewed and still read)
	// until its member stops cleanly or, dead for long, is collected, so a
	// replica that starts later still sees the range it publishes. The
	// member and its peers remove it; if every replica of a group is gone,
	// remove it by hand to delete the Leases or their namespace.
	Finalizer = "shard.leaninformer.io/member"
)

// leaseRecord is what a member learns from one Lease of its group.
type leaseRecord struct {
	name string
	rv   string
	// version changes with every write of the Lease: its resourceVersion
	// and its renewTime, compared for equality only (never with a clock),
	// so that a renewal is seen even by a client that keeps no
	// resourceVersions, as client-go's fake clientset.
	version string
	// renewed is the Lease's renewTime alone, as version has it.
	renewed string
	holder  string
	// controller is the Lease's LabelController: a Lease of this name may
	// belong to another controller's member (name-identity can collide).
	controller string
	duration   time.Duration
	// published is the range the Lease's holder claims; a Lease whose range
	// cannot be read, or whose key differs from ours, claims everything.
	published Range
	problem   error // why published was widened to everything, if it was
	buckets   int
	key       Key
}

// recordOf reads a Lease. key is the reader's hash key: a range over
// another key's hashes says nothing about the reader's hash space.
func recordOf(l *coordinationv1.Lease, key Key, fallbackDuration time.Duration) leaseRecord {
	r := leaseRecord{name: l.Name, rv: l.ResourceVersion, duration: fallbackDuration, key: Key(l.Annotations[AnnotationKey]), controller: l.Labels[LabelController]}
	if l.Spec.RenewTime != nil {
		r.renewed = l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	r.version = l.ResourceVersion + "/" + r.renewed
	if l.Spec.HolderIdentity != nil {
		r.holder = *l.Spec.HolderIdentity
	}
	if s := l.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		r.duration = time.Duration(*s) * time.Second
	}
	r.buckets, _ = strconv.Atoi(l.Annotations[AnnotationBuckets])
	published, err := ParseRange(l.Annotations[AnnotationRange])
	switch {
	case err != nil:
		r.published, r.problem = FullRange(), fmt.Errorf("lease %s: %w", l.Name, err)
	case !published.Empty() && r.key != key:
		r.published, r.problem = FullRange(), fmt.Errorf("lease %s hashes %q, this member %q", l.Name, r.key, key)
	default:
		r.published = published
	}
	return r
}

// leaseSeconds is d in whole seconds for a Lease's spec, rounded up so
// that the Lease never promises less than the member keeps to.
func leaseSeconds(d time.Duration) int32 {
	s := math.Ceil(d.Seconds())
	return int32(min(s, math.MaxInt32))
}

// buildLease is the member's Lease publishing published, renewed at now
// (wall-clock time, for people reading it: members never compare it with
// their clocks), written onto base, the member's last read of its Lease
// (nil to create it). What the member writes is authoritative: its label,
// annotations and finalizer, the holder, duration and renewal. Everything
// else on base (labels, annotations and finalizers other tools put there,
// owner references, spec fields of coordinated leader election) is kept,
// so that an update, which replaces the whole object, does not wipe it.
//
// acquireTime and leaseTransitions are what the Lease API says of them:
// when this holder (this process) acquired the Lease, kept while it renews;
// 0 transitions when the Lease is created, one more each time another
// holder takes it over. Members never read them.
func (c *config) buildLease(base *coordinationv1.Lease, rv string, published Range, now time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{}
	if base != nil {
		l = base.DeepCopy()
	}
	l.Name, l.Namespace, l.ResourceVersion = c.leaseName, c.namespace, rv
	if l.Labels == nil {
		l.Labels = make(map[string]string, 1)
	}
	l.Labels[LabelController] = c.name
	if l.Annotations == nil {
		l.Annotations = make(map[string]string, 3)
	}
	l.Annotations[AnnotationRange] = published.String()
	l.Annotations[AnnotationBuckets] = strconv.Itoa(c.buckets)
	l.Annotations[AnnotationKey] = string(c.key)
	if !slices.Contains(l.Finalizers, Finalizer) {
		l.Finalizers = append(l.Finalizers, Finalizer)
	}

	renew := metav1.NewMicroTime(now)
	switch {
	case base == nil:
		var transitions int32
		l.Spec.AcquireTime, l.Spec.LeaseTransitions = &renew, &transitions
	case base.Spec.HolderIdentity == nil || *base.Spec.HolderIdentity != c.holder:
		var transitions int32
		if base.Spec.LeaseTransitions != nil {
			transitions = *base.Spec.LeaseTransitions
		}
		if transitions < math.MaxInt32 {
			transitions++
		}
		l.Spec.AcquireTime, l.Spec.LeaseTransitions = &renew, &transitions
	}
	holder := c.holder
	seconds := leaseSeconds(c.leaseDuration)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &seconds, &renew
	return l
}
