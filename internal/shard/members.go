package shard

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/internal/names"
)

const (
	// MemberLabel marks the member Leases, one per replica.
	MemberLabel = "example.com/shard-member"
	// memberPrefix starts a member Lease's name; the replica's identity
	// ends it.
	memberPrefix = "myoperator-member-"
)

// Members keeps this replica's member Lease renewed and reports the live
// members whenever the set changes. A member is live while its Lease
// changes: a Lease not renewed for Duration, as this replica's clock
// counts from when it saw the last change (as client-go's leader election
// does, so clocks need not agree), is a member gone without saying so; a
// replica that stops deletes its Lease, and the others drop it at once.
type Members struct {
	// Client reads and writes Leases in Namespace, uncached: the
	// members' view must not lag the API server by a cache.
	Client    client.Client
	Namespace string
	// Identity is this replica's name among the members (its pod's name).
	Identity string
	// Duration is how long a Lease counts without a change; Renew how
	// often this replica renews its own. It reads the others' every
	// lookPeriod (or every Renew, when that is shorter).
	Duration, Renew time.Duration
	// OnChange is called with the live members, sorted, on the first
	// read and after every change; never concurrently.
	OnChange func(members []string)
	// KeepOnStop leaves the Lease in place when Start returns, as a crash
	// would (tests).
	KeepOnStop bool

	mu       sync.Mutex
	observed map[string]observation
	last     []string
	reported bool
}

type observation struct {
	resourceVersion string
	at              time.Time
}

// LeaseName is the name of identity's member Lease.
func LeaseName(identity string) string { return memberPrefix + identity }

// Start renews and reads until ctx ends, then deletes this replica's
// Lease. It returns an error only for an identity that cannot name a
// Lease.
func (m *Members) Start(ctx context.Context) error {
	if errs := validation.IsDNS1123Subdomain(LeaseName(m.Identity)); len(errs) > 0 {
		return fmt.Errorf("shard member %q: %v", m.Identity, errs)
	}
	if !m.KeepOnStop {
		defer m.release()
	}
	renew := time.NewTicker(m.Renew)
	defer renew.Stop()
	var look <-chan time.Time
	if p := lookEvery(m.Renew); p < m.Renew {
		t := time.NewTicker(p)
		defer t.Stop()
		look = t.C
	}
	renewed := false
	for {
		// A failed renewal is tried again at the next look (the others
		// drop this replica only after Duration without a change); a
		// failed read, at the next look too.
		if !renewed {
			renewed = m.renew(ctx) == nil
		}
		_, _ = m.Live(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-renew.C:
			renewed = false
		case <-look:
		}
	}
}

// lookPeriod is how often a replica reads the member Leases (and the
// Coordinator the bucket Leases, while a handover is under way), apart
// from renewing its own every Renew. A member that stopped renewing is
// dropped by each of the others when Duration has passed since it saw
// the member's last renewal: seen and checked only at each renewal, every
// replica would see the renewal up to Renew late and the expiry up to
// Renew late again, so one survivor could take its part of a dead
// replica's buckets a whole Renew after another (5 s at the defaults,
// measured at 200,000 Drinks: docs/sharding.md). A read costs the API
// server one LIST of the members' Leases, a handful of objects.
const lookPeriod = time.Second

// lookEvery is how often a replica renewing every renew reads the Leases.
func lookEvery(renew time.Duration) time.Duration { return min(renew, lookPeriod) }

// Live reads the member Leases now and returns the live members, sorted
// (reporting a change to OnChange too). A decision that a member is gone
// must rest on a read made after whatever it is compared with: a replica
// that has just started writes its member Lease before anything else, so
// a Lease it holds, read before, has its member Lease in this read.
func (m *Members) Live(ctx context.Context) ([]string, error) {
	list := &coordinationv1.LeaseList{}
	if err := m.Client.List(ctx, list, client.InNamespace(m.Namespace), client.HasLabels{MemberLabel}); err != nil {
		return nil, err
	}
	return m.observe(list.Items, time.Now()), nil
}

// renew creates this replica's Lease or moves its renewTime.
func (m *Members) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{}
	err := m.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: LeaseName(m.Identity)}, lease)
	switch {
	case apierrors.IsNotFound(err):
		// leaseDurationSeconds is for whoever reads the Lease; members
		// time each other by their own Duration.
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: LeaseName(m.Identity),
				Labels: map[string]string{MemberLabel: "true", names.NameLabel: names.AppName}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(m.Identity),
				LeaseDurationSeconds: ptr.To(int32(math.Ceil(m.Duration.Seconds()))), AcquireTime: &now, RenewTime: &now},
		}
		return m.Client.Create(ctx, lease)
	case err != nil:
		return err
	}
	lease.Spec.HolderIdentity = ptr.To(m.Identity)
	lease.Spec.RenewTime = &now
	return m.Client.Update(ctx, lease)
}

// observe records which Leases changed, reports the live members if the
// set differs from the last report, and returns them.
func (m *Members) observe(leases []coordinationv1.Lease, now time.Time) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.observed == nil {
		m.observed = map[string]observation{}
	}
	seen := map[string]bool{}
	var live []string
	for _, l := range leases {
		id := ptr.Deref(l.Spec.HolderIdentity, "")
		if id == "" || l.Name != LeaseName(id) || l.DeletionTimestamp != nil {
			continue
		}
		seen[id] = true
		o, ok := m.observed[id]
		if !ok || o.resourceVersion != l.ResourceVersion {
			o = observation{resourceVersion: l.ResourceVersion, at: now}
			m.observed[id] = o
		}
		// This replica counts itself while its Lease exists, even when its
		// renewals fail: the others drop it after Duration, and the
		// handover's fence, not this view, keeps two replicas from
		// writing one object.
		if id == m.Identity || now.Sub(o.at) < m.Duration {
			live = append(live, id)
		}
	}
	for id := range m.observed {
		if !seen[id] {
			delete(m.observed, id)
		}
	}
	slices.Sort(live)
	if m.reported && slices.Equal(live, m.last) {
		return live
	}
	m.last, m.reported = live, true
	if m.OnChange != nil {
		m.OnChange(slices.Clone(live))
	}
	return live
}

// release deletes this replica's Lease, so that the others drop it now
// rather than after Duration.
func (m *Members) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: LeaseName(m.Identity)}}
	_ = client.IgnoreNotFound(m.Client.Delete(ctx, lease))
}
