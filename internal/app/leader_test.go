package app_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/test/framework/certstest"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

// lockedBuffer collects a process's output while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const acquired = "Successfully acquired lease"

// leaderElectionLost is what the manager's exit error says when
// controller-runtime stopped it for a Lease it could not renew.
const leaderElectionLost = "leader election lost"

// TestLeaderHandover: two manager processes against one API server; exactly
// one holds the Lease and reconciles. SIGTERM to the leader makes it
// release the Lease and exit 0; the other takes over, and the time from the
// signal to its first reconcile is measured.
func TestLeaderHandover(t *testing.T) {
	bin := buildManager(t)
	env, _, c := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	for _, ns := range []string{operatorNS, "handover"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}

	type replica struct {
		cmd  *exec.Cmd
		out  *lockedBuffer
		done chan error
	}
	start := func() *replica {
		r := &replica{out: &lockedBuffer{}, done: make(chan error, 1)}
		r.cmd = exec.Command(bin, append([]string{"--kubeconfig", kubeconfig, "--namespace", operatorNS, "--leader-elect",
			"--metrics-bind-address=0", "--health-probe-bind-address=0", "--zap-devel"}, ownWebhookArgs(t)...)...)
		r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { r.done <- r.cmd.Wait() }()
		t.Cleanup(func() { _ = r.cmd.Process.Kill() })
		return r
	}
	replicas := []*replica{start(), start()}

	// Exactly one leads.
	var leader, follower *replica
	testenv.Eventually(t, 30*time.Second, func() string {
		var leaders []*replica
		for _, r := range replicas {
			if strings.Contains(r.out.String(), acquired) {
				leaders = append(leaders, r)
			}
		}
		if len(leaders) != 1 {
			return fmt.Sprintf("%d replicas hold the lease", len(leaders))
		}
		leader = leaders[0]
		return ""
	})
	for _, r := range replicas {
		if r != leader {
			follower = r
		}
	}
	// Only the leader reconciles: a Drink gets status from it alone.
	createDrink := func(name string) {
		if err := c.Create(ctx, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "handover", Name: name},
			Spec: drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea"}}); err != nil {
			t.Fatal(err)
		}
	}
	reconciled := func(name string) func() string {
		return func() string {
			d := &drinksv1.Drink{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "handover", Name: name}, d); err != nil {
				return err.Error()
			}
			if d.Status.ObservedGeneration != d.Generation {
				return "Drink " + name + " not reconciled"
			}
			return ""
		}
	}
	createDrink("before")
	testenv.Eventually(t, 20*time.Second, reconciled("before"))
	// Controllers start their workers only in the leader.
	startedDrinkWorkers := func(r *replica) bool {
		for _, line := range strings.Split(r.out.String(), "\n") {
			if strings.Contains(line, "Starting workers") && strings.Contains(line, `"controller": "drink"`) {
				return true
			}
		}
		return false
	}
	if !startedDrinkWorkers(leader) || startedDrinkWorkers(follower) {
		t.Errorf("want Drink workers in the leader only (leader %v, follower %v)", startedDrinkWorkers(leader), startedDrinkWorkers(follower))
	}

	// SIGTERM to the leader.
	signalled := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	createDrink("after")
	testenv.Eventually(t, 30*time.Second, func() string {
		if !strings.Contains(follower.out.String(), acquired) {
			return "the follower has not taken the lease"
		}
		return ""
	})
	tookLease := time.Since(signalled)
	testenv.Eventually(t, 30*time.Second, reconciled("after"))
	firstReconcile := time.Since(signalled)
	select {
	case err := <-leader.done:
		if err != nil {
			t.Errorf("the old leader did not exit cleanly on SIGTERM: %v\n%s", err, leader.out.String())
		}
	case <-time.After(45 * time.Second):
		t.Errorf("the old leader did not exit within 45s of SIGTERM")
	}
	t.Logf("SIGTERM to the leader: lease taken over after %s, first reconcile by the new leader after %s",
		tookLease.Round(time.Millisecond), firstReconcile.Round(time.Millisecond))
}

// ownWebhookArgs give a manager process of a test its own webhook port on
// loopback and a serving certificate from files (as OLM mounts one), so
// that several run on this host; the API server calls none of them.
func ownWebhookArgs(t *testing.T) []string {
	t.Helper()
	dir, err := certstest.ServingDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		"--webhook-host=127.0.0.1", "--webhook-port=" + strconv.Itoa(testutil.FreePort(t)),
		"--manage-webhook-certs=false", "--webhook-cert-secret=", "--webhook-cert-dir=" + dir,
	}
}
