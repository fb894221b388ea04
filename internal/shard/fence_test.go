package shard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/shard"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestFence decides requests against Leases on a real API server: the
// holder of the Drink's bucket is admitted, another member refused with
// the bucket named, and what is not a shard member's write to a Drink's
// object is admitted.
func TestFence(t *testing.T) {
	_, _, c := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: membersNS}}); err != nil {
		t.Fatal(err)
	}
	const uid = types.UID("3f1e2d4c-5b6a-4978-8a1b-2c3d4e5f6a7b")
	b := shard.BucketOf(uid)
	now := metav1.NewMicroTime(time.Now())
	for _, l := range []*coordinationv1.Lease{
		{ObjectMeta: metav1.ObjectMeta{Name: shard.BucketLeaseName(b), Labels: map[string]string{shard.BucketLabel: shard.BucketValue(b), names.NameLabel: names.AppName}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-holder")}},
		{ObjectMeta: metav1.ObjectMeta{Name: shard.LeaseName("pod-holder"), Labels: map[string]string{shard.MemberLabel: "true", names.NameLabel: names.AppName}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-holder"), RenewTime: &now}},
		{ObjectMeta: metav1.ObjectMeta{Name: shard.LeaseName("pod-other"), Labels: map[string]string{shard.MemberLabel: "true", names.NameLabel: names.AppName}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-other"), RenewTime: &now}},
	} {
		l.Namespace = membersNS
		if err := c.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	drink := &drinksv1.Drink{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Drink"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "cafe", Name: "latte", UID: uid}}
	owned := func(kind, apiVersion string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "cafe", Name: "latte", UID: "cm-uid",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "latte", UID: uid, Controller: ptr.To(true)}}}}
	}
	raw := func(o runtime.Object) []byte {
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	req := func(pod string, op admissionv1.Operation, resource metav1.GroupVersionResource, sub string, obj, old []byte) admission.Request {
		r := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: op, Resource: resource, SubResource: sub, Namespace: "cafe", Name: "latte",
			Object: runtime.RawExtension{Raw: obj}, OldObject: runtime.RawExtension{Raw: old},
			UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:myoperator-system:myoperator-controller-manager"},
		}}
		if pod != "" {
			r.UserInfo.Extra = map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {pod}}
		}
		return r
	}
	drinks := metav1.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "drinks"}
	configmaps := metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	f := &shard.Fence{Reader: c, Namespace: membersNS}
	for _, tt := range []struct {
		name    string
		req     admission.Request
		allowed bool
		code    int32  // for an error, not a denial
		message string // in a denial
	}{
		{name: "the holder writes the Drink's status", req: req("pod-holder", admissionv1.Update, drinks, "status", raw(drink), raw(drink)), allowed: true},
		{name: "the holder writes its ConfigMap", req: req("pod-holder", admissionv1.Update, configmaps, "", raw(owned("Drink", "example.com/v1")), nil), allowed: true},
		{name: "another member writes the Drink's status", req: req("pod-other", admissionv1.Update, drinks, "status", raw(drink), raw(drink)),
			message: "pod pod-other does not hold bucket " + shard.BucketValue(b) + " of the Drinks"},
		{name: "another member creates its ConfigMap", req: req("pod-other", admissionv1.Create, configmaps, "", raw(owned("Drink", "example.com/v1alpha1")), nil),
			message: "holder: pod-holder"},
		{name: "another member deletes its ConfigMap", req: req("pod-other", admissionv1.Delete, configmaps, "", nil, raw(owned("Drink", "example.com/v1"))),
			message: "configmaps cafe/latte"},
		{name: "a pod that is no member (no sharding)", req: req("pod-leader", admissionv1.Update, drinks, "status", raw(drink), raw(drink)), allowed: true},
		{name: "a token bound to no pod", req: req("", admissionv1.Update, drinks, "status", raw(drink), raw(drink)), allowed: true},
		{name: "a ConfigMap another kind controls", req: req("pod-other", admissionv1.Update, configmaps, "", raw(owned("Guestbook", "webapp.my.domain/v1")), nil), allowed: true},
		{name: "a Drink of another group", req: req("pod-other", admissionv1.Update, configmaps, "", raw(owned("Drink", "other.io/v1")), nil), allowed: true},
		{name: "an object that is not JSON", req: req("pod-other", admissionv1.Update, drinks, "status", []byte("{"), nil), code: 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.Handle(ctx, tt.req)
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed %v, want %v: %+v", resp.Allowed, tt.allowed, resp.Result)
			}
			if tt.code != 0 && (resp.Result == nil || resp.Result.Code != tt.code) {
				t.Errorf("result %+v, want code %d", resp.Result, tt.code)
			}
			if tt.message != "" && (resp.Result == nil || !strings.Contains(resp.Result.Message, tt.message)) {
				t.Errorf("result %+v, want a message with %q", resp.Result, tt.message)
			}
		})
	}

	// Released (holder ""), the bucket admits no member.
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: membersNS, Name: shard.BucketLeaseName(b)}, l); err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = ptr.To("")
	if err := c.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	resp := f.Handle(ctx, req("pod-holder", admissionv1.Update, drinks, "status", raw(drink), raw(drink)))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "changing hands") {
		t.Errorf("a released bucket: %+v, want a denial saying it is changing hands", resp.Result)
	}
}

// countingReader counts the LISTs it passes to a real API server, each
// held for a while, as a loaded API server would.
type countingReader struct {
	client.Reader
	lists atomic.Int32
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.lists.Add(1)
	time.Sleep(200 * time.Millisecond)
	return r.Reader.List(ctx, list, opts...)
}

// TestFenceSharesReadsAcrossBuckets: reviews of writes to Drinks in many
// buckets, all waiting at once, are answered from a few reads of the
// Leases, not one per review or per bucket, and each is decided by its own
// bucket's holder.
func TestFenceSharesReadsAcrossBuckets(t *testing.T) {
	_, _, c := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: membersNS}}); err != nil {
		t.Fatal(err)
	}
	const reviews = 64
	uids := make([]types.UID, reviews)
	for i := range uids {
		// The digits that differ come first: FNV-1a mixes a byte into the
		// top bits, which pick the bucket, only over the bytes after it.
		uids[i] = types.UID(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i))
	}
	now := metav1.NewMicroTime(time.Now())
	leases := []*coordinationv1.Lease{
		{ObjectMeta: metav1.ObjectMeta{Name: shard.LeaseName("pod-even"), Labels: map[string]string{shard.MemberLabel: "true", names.NameLabel: names.AppName}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-even"), RenewTime: &now}},
	}
	for b := range shard.Buckets {
		holder := "pod-even"
		if b%2 == 1 {
			holder = "pod-odd"
		}
		leases = append(leases, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: shard.BucketLeaseName(b), Labels: map[string]string{shard.BucketLabel: shard.BucketValue(b), names.NameLabel: names.AppName}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)}})
	}
	for _, l := range leases {
		l.Namespace = membersNS
		if err := c.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	r := &countingReader{Reader: c}
	f := &shard.Fence{Reader: r, Namespace: membersNS}
	var wg sync.WaitGroup
	allowed := make([]bool, reviews)
	for i, uid := range uids {
		wg.Go(func() {
			d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "cafe", Name: "latte", UID: uid}}
			raw, err := json.Marshal(d)
			if err != nil {
				t.Error(err)
				return
			}
			resp := f.Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Update, SubResource: "status", Namespace: "cafe", Name: "latte",
				Resource: metav1.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "drinks"},
				Object:   runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: raw},
				UserInfo: authenticationv1.UserInfo{Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"pod-even"}}},
			}})
			allowed[i] = resp.Allowed
		})
	}
	wg.Wait()
	buckets := map[int]bool{}
	for i, uid := range uids {
		b := shard.BucketOf(uid)
		buckets[b] = true
		if want := b%2 == 0; allowed[i] != want {
			t.Errorf("a write to a Drink of bucket %d by pod-even: allowed %v, want %v", b, allowed[i], want)
		}
	}
	if len(buckets) < reviews/4 {
		t.Fatalf("the reviews' Drinks are in %d buckets, want many", len(buckets))
	}
	// The first review starts a read; the others, arriving while it
	// runs, wait for one more, which begins after they arrived.
	if got := r.lists.Load(); got > 3 {
		t.Errorf("%d reviews of %d buckets made %d reads of the Leases, want at most 3", reviews, len(buckets), got)
	}
	t.Logf("%d reviews of %d buckets: %d reads", reviews, len(buckets), r.lists.Load())
}

// heldReader answers LISTs with no Leases, holding the first until
// release is closed: a read the API server is slow to answer.
type heldReader struct {
	client.Reader
	lists   atomic.Int32
	release chan struct{}
}

func (r *heldReader) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	if r.lists.Add(1) == 1 {
		select {
		case <-r.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// TestFenceReadsOverlap: a review that arrives while a slow read of the
// Leases runs gets a read of its own that begins without waiting for the
// slow one to end, and is answered while it still runs. Reads that wait
// for one another made every fenced write wait for the read before its
// own (docs/sharding.md), and one slow read held up every write behind it.
func TestFenceReadsOverlap(t *testing.T) {
	r := &heldReader{release: make(chan struct{})}
	f := &shard.Fence{Reader: r, Namespace: membersNS}
	raw, err := json.Marshal(&drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "cafe", Name: "latte", UID: "3f1e2d4c-5b6a-4978-8a1b-2c3d4e5f6a7b"}})
	if err != nil {
		t.Fatal(err)
	}
	review := func() <-chan admission.Response {
		out := make(chan admission.Response, 1)
		go func() {
			out <- f.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Update, SubResource: "status", Namespace: "cafe", Name: "latte",
				Resource: metav1.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "drinks"},
				Object:   runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: raw},
				UserInfo: authenticationv1.UserInfo{Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"pod-a"}}},
			}})
		}()
		return out
	}
	// Within 2 s, half the fence's read timeout: a read that waited for
	// the slow one would begin only when that one gave up.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}
	first := review()
	waitFor("the first review read no Leases", func() bool { return r.lists.Load() == 1 })
	// Later than a read may follow the one before (fenceReadEvery).
	time.Sleep(100 * time.Millisecond)
	second := review()
	waitFor("a review that arrived while a slow read ran got no read of its own until that read ended: the reads do not overlap",
		func() bool { return r.lists.Load() == 2 })
	select {
	case <-second:
	case <-time.After(2 * time.Second):
		t.Fatal("the second review was not answered while the first read still ran")
	}
	close(r.release)
	select {
	case <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("the first review was not answered once its read ended")
	}
}
