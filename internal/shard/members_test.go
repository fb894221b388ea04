package shard_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/internal/shard"
	"github.com/example/myoperator/test/framework/testenv"
)

const membersNS = "myoperator-system"

// views records each member's reports: the last, and every member it
// ever reported.
type views struct {
	mu   sync.Mutex
	last map[string][]string
	had  map[string]map[string]bool
	// dropped lists reports that lacked a member that never stopped
	// renewing (replica-a, replica-b) after having it.
	dropped []string
}

func (v *views) report(member string) func([]string) {
	return func(ms []string) {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.had[member] == nil {
			v.had[member] = map[string]bool{}
		}
		for _, renewing := range []string{"replica-a", "replica-b"} {
			if v.had[member][renewing] && !slices.Contains(ms, renewing) {
				v.dropped = append(v.dropped, member+" dropped "+renewing)
			}
		}
		for _, m := range ms {
			v.had[member][m] = true
		}
		v.last[member] = ms
	}
}

func (v *views) of(member string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.last[member]
}

func (v *views) hadEver(member, other string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.had[member][other]
}

// waitView waits until every one of members reports want.
func waitView(t *testing.T, v *views, want []string, members ...string) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, func() string {
		for _, m := range members {
			if got := v.of(m); !slices.Equal(got, want) {
				return m + " reports " + strings.Join(got, ",") + ", want " + strings.Join(want, ",")
			}
		}
		return ""
	})
}

// membersEnv starts an API server with the operator's namespace, and a
// context that ends with the test (or at cancel).
func membersEnv(t *testing.T) (context.Context, context.CancelFunc, client.Client) {
	t.Helper()
	_, _, c := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: membersNS}}); err != nil {
		t.Fatal(err)
	}
	return ctx, cancel, c
}

// TestMembers: three replicas see each other; one that stops is dropped
// at once by the others, long before its Lease's duration, because it
// deletes its Lease; a Lease that is never renewed (a replica that died)
// counts for its duration and is then dropped, while the renewing members
// are never dropped.
func TestMembers(t *testing.T) {
	ctx, _, c := membersEnv(t)
	v := &views{last: map[string][]string{}, had: map[string]map[string]bool{}}
	start := func(id string, duration time.Duration) (context.CancelFunc, chan error) {
		mctx, stop := context.WithCancel(ctx)
		m := &shard.Members{Client: c, Namespace: membersNS, Identity: id, Duration: duration, Renew: 200 * time.Millisecond, OnChange: v.report(id)}
		done := make(chan error, 1)
		go func() { done <- m.Start(mctx) }()
		return stop, done
	}
	// A duration far beyond the waits below: only a release explains a
	// member dropped within them.
	long := time.Minute
	_, _ = start("replica-a", long)
	_, _ = start("replica-b", long)
	stopC, doneC := start("replica-c", long)
	all := []string{"replica-a", "replica-b", "replica-c"}
	waitView(t, v, all, all...)

	stopC()
	if err := <-doneC; err != nil {
		t.Fatal(err)
	}
	waitView(t, v, []string{"replica-a", "replica-b"}, "replica-a", "replica-b")
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: membersNS, Name: shard.LeaseName("replica-c")}, lease); err == nil {
		t.Errorf("replica-c stopped and its Lease is still there")
	}

	// A member that died: its Lease stays and is never renewed. replica-d
	// runs with a short duration (25 of its renewals), so it drops the
	// ghost.
	_, _ = start("replica-d", 5*time.Second)
	now := metav1.NewMicroTime(time.Now())
	ghost := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: membersNS, Name: shard.LeaseName("ghost"), Labels: map[string]string{shard.MemberLabel: "true"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("ghost"), LeaseDurationSeconds: ptr.To[int32](2), RenewTime: &now},
	}
	if err := c.Create(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, func() string {
		if !v.hadEver("replica-d", "ghost") {
			return "replica-d never reported the ghost's fresh Lease"
		}
		return ""
	})
	waitView(t, v, []string{"replica-a", "replica-b", "replica-d"}, "replica-d")

	// A Lease that names another holder, or whose name is not its
	// holder's, is no member.
	if err := c.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: membersNS, Name: shard.LeaseName("impostor"), Labels: map[string]string{shard.MemberLabel: "true"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("replica-a"), RenewTime: &now},
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if got := v.of("replica-d"); !slices.Equal(got, []string{"replica-a", "replica-b", "replica-d"}) || v.hadEver("replica-a", "impostor") {
		t.Errorf("after the impostor Lease replica-d reports %v, replica-a %v", got, v.of("replica-a"))
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.dropped) > 0 {
		t.Errorf("renewing members were dropped: %v", v.dropped)
	}
}

// TestMembersReadBetweenRenewals: a member renewing once a minute still
// drops a dead member's Lease soon after its duration, because it reads
// the Leases every second; read only at each renewal, the dead member
// would count for a minute.
func TestMembersReadBetweenRenewals(t *testing.T) {
	ctx, cancel, c := membersEnv(t)
	v := &views{last: map[string][]string{}, had: map[string]map[string]bool{}}
	m := &shard.Members{Client: c, Namespace: membersNS, Identity: "replica-a", Duration: 2 * time.Second, Renew: time.Minute, OnChange: v.report("replica-a")}
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	waitView(t, v, []string{"replica-a"}, "replica-a")
	now := metav1.NewMicroTime(time.Now())
	if err := c.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: membersNS, Name: shard.LeaseName("ghost"), Labels: map[string]string{shard.MemberLabel: "true"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("ghost"), RenewTime: &now},
	}); err != nil {
		t.Fatal(err)
	}
	waitView(t, v, []string{"ghost", "replica-a"}, "replica-a")
	waitView(t, v, []string{"replica-a"}, "replica-a")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestMembersRefusesABadIdentity(t *testing.T) {
	m := &shard.Members{Identity: "Not_A_Name", Duration: time.Second, Renew: time.Second}
	err := m.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Not_A_Name") {
		t.Errorf("Start with identity Not_A_Name: %v, want an error naming it", err)
	}
}
