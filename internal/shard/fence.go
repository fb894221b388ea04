package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/example/myoperator/internal/freshread"
	"github.com/example/myoperator/internal/names"
)

const (
	// FencePath is where the webhook server serves Fence.
	FencePath = "/fence-drink-writes"
	// podNameExtra is where the API server puts the pod of a token bound
	// to one.
	podNameExtra = "authentication.kubernetes.io/pod-name"
	drinkGroup   = "example.com"
)

// Fence is the admission webhook that keeps a replica off the Drinks it
// no longer serves: a write of the operator's ServiceAccount, from a
// pod-bound token, to a Drink's status or to a Drink's ConfigMap is
// admitted only when that pod holds the Lease of the Drink's bucket. The
// webhook configuration (config/sharding) sends it only those requests.
//
// Why a webhook and not a ValidatingAdmissionPolicy, as the leader's
// fence (config/leader-fence) is: CEL has no hash function, so a policy
// could find the bucket only in a label, and the API server sets a
// Drink's UID after mutating admission, so no label could be set at
// create; the operator would have to write a label on every user's Drink.
// And the policy's Lease parameters come from an informer of the API
// server that, in Kubernetes up to at least v1.37.2, freezes once its
// binding is deleted and made again. The webhook reads the Lease from the
// API server (a quorum read begun after the request arrived) for every
// request it decides.
//
// A pod that is not a shard member (it has no member Lease: the single
// leader of an install without sharding) is admitted: its fence is the
// leader's.
//
// One read answers every review waiting at the moment it starts, whatever
// their buckets: a LIST of the operator's Leases in Namespace (by its name
// label: the bucket Leases and the member Leases), which gives every
// bucket's holder and every member at once. A read per review, or per
// bucket, cost the API server about a millisecond of CPU for each fenced
// write (docs/sharding.md); shared, a read begins at most every
// fenceReadEvery, however many writes wait on them. They are bounded in rate too
// (internal/freshread): the endpoint answers anyone who reaches the
// webhook port, and forged reviews must not drive the operator's requests.
// A LIST, not a GET, is also what FlowSchemas, which match a request by
// verb but not by object name, put in a level of their own
// (config/manager/flowschema.yaml), where a flood of them cannot queue
// ahead of the leader's and the members' renewals (get, update).
type Fence struct {
	// Reader reads Leases in Namespace, uncached.
	Reader    client.Reader
	Namespace string

	once  sync.Once
	reads *freshread.Group[*leaseView]
}

// leaseView is what one read of the operator's Leases says: the holder of
// each bucket ("" for none) and the members, by Lease name.
type leaseView struct {
	holders [Buckets]string
	members map[string]bool
}

// The bounds of the fence's Lease reads (exported for the test that floods
// it): every write of a replica that shares the Drinks is fenced, and one
// read serves all the writes waiting on it, so reads come at most one
// after another and a few hundred a second is more than the benchmark's
// write rates need (docs/BENCHMARKS.md); the webhook's timeout is 5 s.
const (
	FenceReadsPerSecond = 200
	FenceReadBurst      = 50
	fenceReadTimeout    = 4 * time.Second
	// fenceReadEvery spaces the reads' starts: a fenced write waits for
	// the next read to begin and for that read, not for the end of the
	// one running first. Measured at 200,000 Drinks, a read took 0.17 s on
	// average and reads that could not overlap made each fenced write wait
	// 0.4 s (docs/sharding.md). At most two run at once
	// (freshread.Overlapping), so a loaded API server, whose reads are
	// slow, gets fewer of them, each shared by more writes; an idle one
	// answers a review within about 10 ms more than a read of its own. A
	// replica makes at most 50 reads a second however many writes, or
	// forged reviews, arrive.
	fenceReadEvery = 20 * time.Millisecond
)

// leases reads the operator's Leases in Namespace, through the shared
// reads: the result of a read that began after the call.
func (f *Fence) leases(ctx context.Context) (*leaseView, error) {
	f.once.Do(func() {
		f.reads = freshread.New[*leaseView](FenceReadsPerSecond, FenceReadBurst, fenceReadTimeout).Overlapping(fenceReadEvery)
	})
	return f.reads.Do(ctx, "leases", func(ctx context.Context) (*leaseView, error) {
		list := &coordinationv1.LeaseList{}
		if err := f.Reader.List(ctx, list, client.InNamespace(f.Namespace), client.MatchingLabels{names.NameLabel: names.AppName}); err != nil {
			return nil, err
		}
		v := &leaseView{members: map[string]bool{}}
		for i := range list.Items {
			l := &list.Items[i]
			if b, ok := ParseBucket(l.Labels[BucketLabel]); ok && l.Name == BucketLeaseName(b) {
				v.holders[b] = ptr.Deref(l.Spec.HolderIdentity, "")
			}
			if _, ok := l.Labels[MemberLabel]; ok {
				v.members[l.Name] = true
			}
		}
		return v, nil
	})
}

var _ admission.Handler = (*Fence)(nil)

// Handle decides one request.
func (f *Fence) Handle(ctx context.Context, req admission.Request) admission.Response {
	pods := req.UserInfo.Extra[podNameExtra]
	if len(pods) != 1 || pods[0] == "" {
		return admission.Allowed("not a pod's token")
	}
	pod := pods[0]
	uid, what, err := drinkOf(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if uid == "" {
		return admission.Allowed("not a Drink's ConfigMap")
	}
	b := BucketOf(uid)
	v, err := f.leases(ctx)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	holder := v.holders[b]
	if holder == pod {
		return admission.Allowed("")
	}
	if !v.members[LeaseName(pod)] {
		return admission.Allowed("not a shard member")
	}
	if holder == "" {
		holder = "none: it is changing hands"
	}
	return admission.Denied(fmt.Sprintf("pod %s does not hold bucket %d of the Drinks (Lease %s/%s, holder: %s), which %s is in: "+
		"a replica that lost its share of the Drinks may not write to them", pod, b, f.Namespace, BucketLeaseName(b), holder, what))
}

// drinkOf finds the Drink a request writes: the Drink itself, or the
// ConfigMap's controller when that is a Drink ("" otherwise). what names
// the object for the denial.
func drinkOf(req admission.Request) (types.UID, string, error) {
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete || len(raw) == 0 {
		raw = req.OldObject.Raw
	}
	var obj metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", "", fmt.Errorf("reading the object's metadata: %w", err)
	}
	what := fmt.Sprintf("%s %s/%s", req.Resource.Resource, req.Namespace, req.Name)
	if req.Resource.Group == drinkGroup && req.Resource.Resource == "drinks" {
		return obj.UID, what, nil
	}
	ref := metav1.GetControllerOf(&obj)
	if ref == nil || ref.Kind != "Drink" {
		return "", what, nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != drinkGroup {
		return "", what, nil //nolint:nilerr // another group's Drink is not ours to fence
	}
	return ref.UID, what, nil
}
