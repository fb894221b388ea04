package shard

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/internal/names"
)

// Coordinator hands the buckets between the replicas. Each replica runs
// one: it keeps its member Lease (Members), computes the assignment from
// the live members (Assign) and serves exactly the buckets whose Leases
// it holds, through Serve.
//
// A bucket changes hands in two steps, each a write to its Lease. The old
// holder first stops serving it (Serve's context ends and Serve returns
// only after its last write) and then clears the holder; only then does
// the new owner take the Lease and start serving. A holder that is no
// longer a live member (it stopped renewing its member Lease: crashed,
// paused or cut off) is replaced without its consent; should it come back
// and write, the API server refuses it, because the fence (Fence) admits
// a write to a Drink or its ConfigMap only from the holder of the Drink's
// bucket. Nothing is written while nothing changes hands: the bucket
// Leases are not renewed (the member Leases say who is alive).
type Coordinator struct {
	// Client reads and writes Leases in Namespace, uncached.
	Client    client.Client
	Namespace string
	// Identity is this replica's name (its pod's), the holder it writes.
	Identity string
	// Duration and Renew time the member Leases (Members). The buckets
	// are looked at after every change of the members, and every Renew;
	// every lookPeriod while this replica does not yet serve all it
	// should (a bucket it is to take from a survivor is free once that
	// one has let it go, which only a look sees).
	Duration, Renew time.Duration
	// Serve serves the buckets of served until ctx ends, and returns only
	// when nothing more is written for them. The buckets taken in one step
	// are served by one call, with one cache: the API server goes through
	// every Drink it holds for each list and watch of a selector however
	// few it selects, so a takeover of k buckets costs it one pass rather
	// than k. A bucket given up later is dropped from its call's Served
	// (Served.Drop), and the call goes on for the rest: the buckets kept
	// go on without a pause and are not listed again, unless their call
	// would then hold dropped buckets (whose Drinks and ConfigMaps its
	// cache goes on receiving until it ends, keeping only their names:
	// Served.IdentityOfDropped) more than a quarter of those it serves: it
	// is restarted to shed them (maxDroppedPerServed).
	Serve func(ctx context.Context, served *Served) error
	Log   logr.Logger
	// OnHeld, when set, is told all the buckets served after every change.
	OnHeld func(buckets []int)
	// KeepOnStop leaves the Leases in place when ctx ends, as a crash
	// would (tests); a replica that stops releases its buckets and its
	// member Lease, so that the others take over at once.
	KeepOnStop bool

	mu      sync.Mutex
	m       *Members
	members []string
	changed chan struct{}
	// serving are the running Serve calls.
	serving []*run
}

// run is one Serve call.
type run struct {
	served *Served
	cancel context.CancelFunc
	done   chan struct{}
}

// Start coordinates until ctx ends, then stops serving and releases.
func (c *Coordinator) Start(ctx context.Context) error {
	c.changed = make(chan struct{}, 1)
	members := &Members{Client: c.Client, Namespace: c.Namespace, Identity: c.Identity,
		Duration: c.Duration, Renew: c.Renew, OnChange: c.setMembers, KeepOnStop: c.KeepOnStop}
	c.m = members
	membersCtx, stopMembers := context.WithCancel(context.WithoutCancel(ctx))
	var membersErr error
	membersDone := make(chan struct{})
	go func() {
		defer close(membersDone)
		membersErr = members.Start(membersCtx)
	}()
	defer func() {
		stopMembers()
		<-membersDone
	}()
	next := time.NewTimer(c.Renew)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			c.stopServing()
			if !c.KeepOnStop {
				c.releaseAll()
			}
			return nil
		case <-membersDone:
			// Only an identity that cannot name a Lease ends it early.
			c.stopServing()
			return membersErr
		case <-c.changed:
		case <-next.C:
		}
		settled, err := c.step(ctx)
		if err != nil && ctx.Err() == nil {
			c.Log.Error(err, "shard handover step failed; retrying", "serving", c.current())
		}
		wait := c.Renew
		if !settled || err != nil {
			wait = lookEvery(c.Renew)
		}
		next.Reset(wait)
	}
}

// setMembers is Members' OnChange: it wakes the loop.
func (c *Coordinator) setMembers(ms []string) {
	c.mu.Lock()
	c.members = ms
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// step moves toward the assignment: it stops serving what it lost or must
// give up, releases what it must give up, takes what is free or whose
// holder is gone, and serves what it holds. settled says that this
// replica serves exactly its part of the assignment.
func (c *Coordinator) step(ctx context.Context) (settled bool, err error) {
	c.mu.Lock()
	started := c.members != nil
	c.mu.Unlock()
	if !started {
		return false, nil // this replica's member Lease is not written yet
	}
	leases, err := c.bucketLeases(ctx)
	if err != nil {
		return false, err
	}
	// The members read after the bucket Leases (Members.Live): a holder
	// missing from this read is gone, not merely new.
	members, err := c.m.Live(ctx)
	if err != nil {
		return false, err
	}
	if !slices.Contains(members, c.Identity) {
		return false, nil
	}
	want := Assign(members)[c.Identity]
	// What the API server says this replica holds: a bucket taken over
	// while this replica was away is no longer served from this moment.
	var mine []int
	for b, l := range leases {
		if l != nil && ptr.Deref(l.Spec.HolderIdentity, "") == c.Identity {
			mine = append(mine, b)
		}
	}
	release := without(mine, want)
	kept := without(mine, release)
	// Each run serving something lost or to be given up stops before the
	// Lease says so; what it served and keeps is served again below.
	changed := c.stopLosing(kept)
	var errs []error
	for _, b := range release {
		// A failed release is tried again at the next step; the bucket is
		// not served meanwhile.
		l := leases[b]
		l.Spec.HolderIdentity = ptr.To("")
		if err := c.Client.Update(ctx, l); err != nil {
			errs = append(errs, err)
			continue
		}
		c.Log.V(1).Info("released a bucket", "bucket", b)
	}
	live := map[string]bool{}
	for _, m := range members {
		live[m] = true
	}
	for _, b := range without(want, mine) {
		l := leases[b]
		holder := ""
		if l != nil {
			holder = ptr.Deref(l.Spec.HolderIdentity, "")
		}
		if holder != "" && live[holder] {
			continue // its holder has not let it go yet
		}
		if err := c.take(ctx, b, l); err != nil {
			if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, err)
			}
			continue
		}
		if holder != "" {
			c.Log.Info("took over a bucket from a replica that is gone", "bucket", b, "from", holder)
		}
		kept = append(kept, b)
	}
	if add := without(kept, c.current()); len(add) > 0 {
		slices.Sort(add)
		c.Log.Info("serving the Drinks of buckets", "added", add, "selector", Selector(add))
		c.startServing(ctx, add)
		changed = true
	}
	serving := c.current()
	if changed && c.OnHeld != nil {
		c.OnHeld(serving)
	}
	want = slices.Sorted(slices.Values(want))
	return slices.Equal(serving, want), errors.Join(errs...)
}

// take writes this replica as bucket b's holder: a create, or an update
// of l that fails if l changed since it was read.
func (c *Coordinator) take(ctx context.Context, b int, l *coordinationv1.Lease) error {
	now := metav1.NewMicroTime(time.Now())
	if l == nil {
		return c.Client.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: BucketLeaseName(b),
				Labels: map[string]string{BucketLabel: BucketValue(b), names.NameLabel: names.AppName}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(c.Identity), AcquireTime: &now},
		})
	}
	l.Spec.HolderIdentity = ptr.To(c.Identity)
	l.Spec.AcquireTime = &now
	l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	return c.Client.Update(ctx, l)
}

// bucketLeases reads the bucket Leases, indexed by bucket (nil: none).
func (c *Coordinator) bucketLeases(ctx context.Context) ([]*coordinationv1.Lease, error) {
	list := &coordinationv1.LeaseList{}
	if err := c.Client.List(ctx, list, client.InNamespace(c.Namespace), client.HasLabels{BucketLabel}); err != nil {
		return nil, err
	}
	out := make([]*coordinationv1.Lease, Buckets)
	for i := range list.Items {
		l := &list.Items[i]
		if b, ok := ParseBucket(l.Labels[BucketLabel]); ok && l.Name == BucketLeaseName(b) {
			out[b] = l
		}
	}
	return out, nil
}

// current is the buckets being served, sorted (nil: none). A Serve that
// returned on its own (it failed) serves nothing: the step starts its
// buckets again.
func (c *Coordinator) current() []int {
	var out []int
	c.serving = slices.DeleteFunc(c.serving, func(r *run) bool {
		select {
		case <-r.done:
			return true
		default:
			out = append(out, r.served.Buckets()...)
			return false
		}
	})
	slices.Sort(out)
	return out
}

// startServing runs one Serve for buckets.
func (c *Coordinator) startServing(ctx context.Context, buckets []int) {
	runCtx, cancel := context.WithCancel(ctx)
	r := &run{served: NewServed(buckets), cancel: cancel, done: make(chan struct{})}
	c.serving = append(c.serving, r)
	go func() {
		defer close(r.done)
		if err := c.Serve(runCtx, r.served); err != nil && runCtx.Err() == nil {
			c.Log.Error(err, "serving buckets failed; restarting at the next step", "buckets", buckets)
		}
	}()
}

// maxDroppedPerServed bounds what a Serve call may hold for nothing: it is
// restarted once its dropped buckets exceed 1/maxDroppedPerServed of those
// it serves. Restarting lists the buckets it keeps again (one more pass
// over the API server's cache, and their Drinks unserved until it ends),
// so the few buckets that move between the survivors when a replica
// leaves (at most 4 with up to 4 members: Assign) are dropped, not
// relisted, while a replica that gives up most of a call's buckets (when
// others join, which at an install's start is before there are Drinks)
// lists the rest again, and its cache holds at most a quarter more than
// its share.
const maxDroppedPerServed = 4

// stopLosing stops serving every bucket outside keep, and says whether
// there was one. Each Serve drops what it loses; one left with none of
// keep ends, and so does one that would hold too many dropped buckets
// (maxDroppedPerServed; the step starts its kept buckets again in a call
// of their own). Every drop and end happens at once, and it returns once
// the reconciles of what was dropped and the ended calls have returned.
func (c *Coordinator) stopLosing(keep []int) bool {
	var stop []*run
	var waits []func()
	changed := false
	c.serving = slices.DeleteFunc(c.serving, func(r *run) bool {
		now := r.served.Buckets()
		lost := without(now, keep)
		if len(lost) == 0 {
			return false
		}
		changed = true
		waits = append(waits, r.served.Drop(lost))
		left := len(now) - len(lost)
		if dropped := len(r.served.Started()) - left; left == 0 || dropped*maxDroppedPerServed > left {
			stop = append(stop, r)
			return true
		}
		return false
	})
	for _, r := range stop {
		r.cancel()
	}
	for _, wait := range waits {
		wait()
	}
	for _, r := range stop {
		<-r.done
	}
	return changed
}

// stopServing ends every run and waits until they returned.
func (c *Coordinator) stopServing() {
	c.stopLosing(nil)
}

// releaseAll clears the holder of every bucket Lease this replica holds,
// once it serves none.
func (c *Coordinator) releaseAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	leases, err := c.bucketLeases(ctx)
	if err != nil {
		c.Log.Error(err, "could not release the buckets; the others take them when this replica's member Lease is gone")
		return
	}
	for _, l := range leases {
		if l != nil && ptr.Deref(l.Spec.HolderIdentity, "") == c.Identity {
			l.Spec.HolderIdentity = ptr.To("")
			_ = c.Client.Update(ctx, l)
		}
	}
}

// without is a minus b, in a's order.
func without(a, b []int) []int {
	var out []int
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
