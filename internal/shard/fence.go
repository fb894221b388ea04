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
// The Lease reads are shared among the reviews that wait on them and
// bounded in rate (internal/freshread): the endpoint answers anyone who
// reaches the webhook port, and a read per review would let forged reviews
// drive the operator's requests. They are LISTs of one Lease by name, not
// GETs: as quorum reads they see the same, and FlowSchemas, which match a
// request by verb but not by object name, then put them in a level of
// their own (config/manager/flowschema.yaml), where a flood of them cannot
// queue ahead of the leader's and the members' renewals (get, update).
type Fence struct {
	// Reader reads Leases in Namespace, uncached.
	Reader    client.Reader
	Namespace string

	once  sync.Once
	reads *freshread.Group[*coordinationv1.Lease]
}

// The bounds of the fence's Lease reads (exported for the test that floods
// it): the writes of a replica that
// shares the Drinks are fenced one by one, and reads of one bucket's Lease
// are shared among the writes waiting on it, so a few hundred reads a
// second serve the benchmark's write rates (docs/BENCHMARKS.md); the
// webhook's timeout is 5 s.
const (
	FenceReadsPerSecond = 200
	FenceReadBurst      = 50
	fenceReadTimeout    = 4 * time.Second
)

// lease reads the Lease name in Namespace, nil when there is none, through
// the shared reads.
func (f *Fence) lease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	f.once.Do(func() {
		f.reads = freshread.New[*coordinationv1.Lease](FenceReadsPerSecond, FenceReadBurst, fenceReadTimeout)
	})
	return f.reads.Do(ctx, name, func(ctx context.Context) (*coordinationv1.Lease, error) {
		list := &coordinationv1.LeaseList{}
		if err := f.Reader.List(ctx, list, client.InNamespace(f.Namespace), client.MatchingFields{"metadata.name": name}); err != nil {
			return nil, err
		}
		if len(list.Items) == 0 {
			return nil, nil
		}
		return &list.Items[0], nil
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
	holder, err := f.holder(ctx, BucketLeaseName(b))
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if holder == pod {
		return admission.Allowed("")
	}
	member, err := f.lease(ctx, LeaseName(pod))
	switch {
	case err != nil:
		return admission.Errored(http.StatusInternalServerError, err)
	case member == nil:
		return admission.Allowed("not a shard member")
	}
	if holder == "" {
		holder = "none: it is changing hands"
	}
	return admission.Denied(fmt.Sprintf("pod %s does not hold bucket %d of the Drinks (Lease %s/%s, holder: %s), which %s is in: "+
		"a replica that lost its share of the Drinks may not write to them", pod, b, f.Namespace, BucketLeaseName(b), holder, what))
}

// holder reads the holder of the Lease name ("" when there is none).
func (f *Fence) holder(ctx context.Context, name string) (string, error) {
	l, err := f.lease(ctx, name)
	if err != nil || l == nil {
		return "", err
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), nil
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
