package leaderlock_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/internal/leaderlock"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestReleaseThenNeverWrite: against a real API server, a released lock
// gives the Lease up once and then never writes it again, so that neither
// the elector's next renewal nor controller-runtime's own release at the
// very end can take the Lease back from (or clear it under) the replica
// that took over; a replica that does not hold the Lease releases nothing.
func TestReleaseThenNeverWrite(t *testing.T) {
	_, cfg, c := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	const ns, name = "lock", "lease"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	newLock := func(pod string) *leaderlock.Lock {
		l, err := leaderlock.New(cfg, ns, name, pod, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b, c3 := newLock("pod-a"), newLock("pod-b"), newLock("")
	host, _ := os.Hostname()
	for l, prefix := range map[*leaderlock.Lock]string{a: "pod-a_", b: "pod-b_", c3: host + "_"} {
		if !strings.HasPrefix(l.Identity(), prefix) {
			t.Errorf("identity %q, want the prefix %q", l.Identity(), prefix)
		}
	}
	record := func(l *leaderlock.Lock) resourcelock.LeaderElectionRecord {
		now := metav1.Now()
		return resourcelock.LeaderElectionRecord{HolderIdentity: l.Identity(), LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now}
	}
	holder := func() (string, int32) {
		t.Helper()
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, l); err != nil {
			t.Fatal(err)
		}
		var h string
		if l.Spec.HolderIdentity != nil {
			h = *l.Spec.HolderIdentity
		}
		return h, *l.Spec.LeaseDurationSeconds
	}
	check := func(step, wantHolder string, wantDuration int32) {
		t.Helper()
		if h, d := holder(); h != wantHolder || d != wantDuration {
			t.Errorf("%s: Lease held by %q for %ds, want %q for %ds", step, h, d, wantHolder, wantDuration)
		}
	}
	must := func(step string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}

	must("a creates the Lease", a.Create(ctx, record(a)))
	check("a leads", a.Identity(), 15)
	// The elector's events about the Lease reach the API server (through
	// the lock's recorder and client-go's scheme).
	a.RecordEvent("became leader")
	testenv.Eventually(t, 10*time.Second, func() string {
		events := &corev1.EventList{}
		if err := c.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Lease" && e.InvolvedObject.Name == name && e.Reason == "LeaderElection" && strings.Contains(e.Message, "became leader") {
				return ""
			}
		}
		return fmt.Sprintf("no LeaderElection event about Lease %s/%s among %d events", ns, name, len(events.Items))
	})
	if _, _, err := b.Get(ctx); err != nil {
		t.Fatal(err)
	}
	released, err := b.Release(ctx)
	must("b releases", err)
	if released {
		t.Error("b released a Lease it does not hold")
	}
	check("after b's release", a.Identity(), 15)

	released, err = a.Release(ctx)
	must("a releases", err)
	if !released {
		t.Error("a did not release the Lease it holds")
	}
	check("after a's release", "", 1)

	_, _, err = c3.Get(ctx)
	must("c reads", err)
	must("c takes the Lease", c3.Update(ctx, record(c3)))
	check("c leads", c3.Identity(), 15)

	// a's elector renews on its fast path, with the record it last wrote,
	// and controller-runtime releases at the end: neither may land.
	must("a renews after its release", a.Update(ctx, record(a)))
	check("after a's renewal", c3.Identity(), 15)
	must("a creates after its release", a.Create(ctx, record(a)))
	// client-go's own release, which controller-runtime runs last, reads
	// the Lease (so its write would carry the current resourceVersion),
	// checks only the holder it last observed (itself) and writes an
	// empty record.
	_, _, err = a.Get(ctx)
	must("a reads", err)
	now := metav1.Now()
	must("client-go's release through a", a.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1, AcquireTime: now, RenewTime: now}))
	check("after client-go's release through a", c3.Identity(), 15)
	released, err = a.Release(ctx)
	must("a releases again", err)
	if released {
		t.Error("a released twice")
	}
	check("after a's second release", c3.Identity(), 15)
	// b was released too (holding nothing): it never writes again either.
	must("b renews after its release", b.Update(ctx, record(b)))
	check("after b's write", c3.Identity(), 15)
	h, d := holder()
	t.Logf("the Lease after every write of the released locks: held by %s for %ds", h, d)
}
