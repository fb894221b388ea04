package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

// releaseDrain is the leader's webhook drain in TestLeaseReleasedBeforeDrain:
// long enough that a handover waiting for it cannot be mistaken for one
// that did not.
const releaseDrain = 20 * time.Second

// warmDrinks are created before the handover, for the standby to queue.
const warmDrinks = 20

// TestLeaseReleasedBeforeDrain: a standby queues the Drinks it sees without
// reconciling them (controller warmup), and on SIGTERM the leader releases
// its Lease as soon as its reconcilers have stopped, while its webhook
// server still drains (internal/leaderlock). Two manager processes, the leader with its
// webhooks served and a 20 s drain: the standby takes the Lease and
// reconciles a new Drink well within the drain, while the old leader is
// still running; the old leader then exits cleanly once the drain is over.
// controller-runtime alone releases the Lease only after the webhook
// server has stopped, so the handover took the whole drain.
func TestLeaseReleasedBeforeDrain(t *testing.T) {
	// RELEASE_MANAGER runs another build (one without the early release,
	// to see this test fail).
	bin := testenv.ManagerBinary(t, "RELEASE_MANAGER")
	env, _, c := testenv.Start(t, testenv.Options{Webhooks: true, WebhookHost: "localhost"})
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "release"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.CertSecret}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	kubeconfig, cleanup, err := testenv.WriteKubeconfig(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	start := func(name string, webhookPort int, extra ...string) *bench.Manager {
		probe, err := testutil.FreeLoopbackPort()
		if err != nil {
			t.Fatal(err)
		}
		metrics, err := testutil.FreeLoopbackPort()
		if err != nil {
			t.Fatal(err)
		}
		m, err := bench.StartManager(bench.ManagerOptions{
			Binary: bin, Kubeconfig: kubeconfig, LogFile: filepath.Join(dir, name+".log"),
			WebhookPort: webhookPort, ProbePort: probe, MetricsPort: metrics, LeaderElect: true,
			ExtraArgs: append([]string{"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=1s"}, extra...),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Stop)
		return m
	}
	leader := start("leader", env.WebhookInstallOptions.LocalServingPort, "--webhook-drain-period="+releaseDrain.String())
	if err := leader.WaitReady(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	var held string
	testenv.Eventually(t, 30*time.Second, func() string {
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: names.LeaderElectionID}, l); err != nil {
			return err.Error()
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return "no holder yet"
		}
		held = *l.Spec.HolderIdentity
		return ""
	})
	// The standby serves its webhooks on a port of its own, with the same
	// certificate Secret: the API server calls the leader's, which must
	// keep answering through its drain.
	standbyPort, err := testutil.FreeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	standby := start("standby", standbyPort)
	if err := standby.WaitReady(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}

	// The standby warms up: its Drink controller's queue takes the Drinks
	// it sees while it does not lead (EnableWarmup), and it reconciles
	// none of them.
	for i := range warmDrinks {
		if err := c.Create(ctx, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "release", Name: fmt.Sprintf("before-%d", i)},
			Spec: drinksv1.DrinkSpec{DisplayName: "Before", Beverage: "tea"}}); err != nil {
			t.Fatal(err)
		}
	}
	drinkQueue := func(m map[string]string) bool { return m["name"] == "drink" || m["controller"] == "drink" }
	testenv.Eventually(t, 30*time.Second, func() string {
		mm, err := standby.Metrics(ctx)
		if err != nil {
			return err.Error()
		}
		if adds := mm.Sum("workqueue_adds_total", drinkQueue); adds < warmDrinks {
			return fmt.Sprintf("the standby's Drink queue took %v adds, want %d before it leads", adds, warmDrinks)
		}
		if r := mm.Sum("controller_runtime_reconcile_total", drinkQueue); r != 0 {
			return fmt.Sprintf("the standby reconciled %v Drinks", r)
		}
		return ""
	})

	signalled := time.Now()
	if err := leader.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var tookLease time.Duration
	testenv.Eventually(t, 2*releaseDrain, func() string {
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: names.LeaderElectionID}, l); err != nil {
			return err.Error()
		}
		if h := l.Spec.HolderIdentity; h == nil || *h == "" || *h == held {
			return "the Lease has not changed hands"
		}
		tookLease = time.Since(signalled)
		return ""
	})
	stillRunning := leader.Running()
	if tookLease >= releaseDrain/2 || !stillRunning {
		t.Fatalf("the Lease changed hands %s after SIGTERM (old leader still running: %t): the release waited for the %s webhook drain",
			tookLease.Round(time.Millisecond), stillRunning, releaseDrain)
	}
	// A Drink created now is admitted by the draining leader's webhooks and
	// reconciled by the new leader.
	if err := c.Create(ctx, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "release", Name: "after"},
		Spec: drinksv1.DrinkSpec{DisplayName: "After", Beverage: "tea"}}); err != nil {
		t.Fatalf("a Drink created during the drain: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		d := &drinksv1.Drink{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "release", Name: "after"}, d); err != nil {
			return err.Error()
		}
		if d.Status.ObservedGeneration != d.Generation {
			return "Drink after not reconciled"
		}
		return ""
	})
	reconciled := time.Since(signalled)
	exitErr := leader.Wait(2 * releaseDrain)
	exited := time.Since(signalled)
	t.Logf("SIGTERM to the leader (webhook drain %s): the standby took the Lease after %s (old leader still running: %t), "+
		"reconciled a new Drink after %s; the old leader exited after %s (%v)",
		releaseDrain, tookLease.Round(time.Millisecond), stillRunning, reconciled.Round(time.Millisecond), exited.Round(time.Millisecond), exitErr)
	if exitErr != nil {
		t.Errorf("the old leader did not exit cleanly after its drain: %v", exitErr)
	}
	if exited < releaseDrain {
		t.Errorf("the old leader exited %s after SIGTERM, before its %s drain was over", exited.Round(time.Millisecond), releaseDrain)
	}
}
