//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/example/myoperator/test/framework/testenv"
)

// hardGuestbook is the Guestbook of assessHardAntiAffinity.
const hardGuestbook = "e2e-hard"

// podPlacement lists the pods of Guestbook instance as name=node, sorted;
// a pod not scheduled has node "".
func podPlacement(cfg *envconf.Config, instance string) ([]string, error) {
	out, err := kubectl(cfg, "get", "pods", "-n", "guestbook", "-l", "app.kubernetes.io/instance="+instance,
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{" "}{end}`)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	pods := strings.Fields(out)
	slices.Sort(pods)
	return pods, nil
}

// nodesOf counts the distinct nodes of placements, and the pods not
// scheduled.
func nodesOf(placements []string) (nodes, pending int) {
	seen := map[string]bool{}
	for _, p := range placements {
		_, node, _ := strings.Cut(p, "=")
		if node == "" {
			pending++
			continue
		}
		seen[node] = true
	}
	return len(seen), pending
}

// kwokNodes skips an assessment that needs the suite's three kwok nodes
// (the real node mode has one; an existing cluster has its own).
func kwokNodes(t *testing.T, cfg *envconf.Config) {
	t.Helper()
	if mode.realNode {
		skip(t, "the real node mode has one node: pods cannot spread")
	}
	out, err := kubectl(cfg, "get", "nodes", "-l", "type=kwok", "-o", "name")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if n := len(strings.Fields(out)); n != 3 {
		skip(t, fmt.Sprintf("the cluster has %d kwok nodes, not the suite's 3", n))
	}
}

// assessSpreadOverNodes: the failover Guestbook's three pods carry the
// default (Soft) pod anti-affinity and run on three different nodes: the
// active pod and each standby on a node of its own. (On three empty nodes
// the scheduler spreads three pods without it too; the Hard assessment
// shows that it follows the term.)
func assessSpreadOverNodes(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	kwokNodes(t, cfg)
	testenv.Eventually(t, 30*time.Second, func() string {
		placed, err := podPlacement(cfg, "e2e")
		if err != nil {
			return err.Error()
		}
		if nodes, pending := nodesOf(placed); len(placed) != 3 || nodes != 3 || pending != 0 {
			return fmt.Sprintf("pods %v: want 3 on 3 nodes", placed)
		}
		terms, err := kubectl(cfg, "get", "pods", "-n", "guestbook", "-l", "app.kubernetes.io/instance=e2e", "-o",
			`jsonpath={range .items[*]}{.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight}/`+
				`{.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey}/`+
				`{.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector.matchLabels.app\.kubernetes\.io/instance}{" "}{end}`)
		if err != nil {
			return fmt.Sprintf("%v: %s", err, terms)
		}
		if want := strings.Repeat("100/kubernetes.io/hostname/e2e ", 3); terms != want {
			return fmt.Sprintf("the pods' preferred anti-affinity %q, want %q", terms, want)
		}
		return ""
	})
	return ctx
}

// assessHardAntiAffinity: with antiAffinity Hard, a Guestbook of size 4 on
// the 3 nodes gets 3 pods on 3 nodes and one Pending, which the scheduler
// says it cannot place for the anti-affinity, and the Guestbook says so.
func assessHardAntiAffinity(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	kwokNodes(t, cfg)
	start := time.Now()
	if out, err := apply(cfg, "apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: "+hardGuestbook+"}\n"+
		"spec: {size: 4, configMapName: e2e-hard-conf, pod: {antiAffinity: Hard}}\n"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		placed, err := podPlacement(cfg, hardGuestbook)
		if err != nil {
			return err.Error()
		}
		if nodes, pending := nodesOf(placed); len(placed) != 4 || nodes != 3 || pending != 1 {
			return fmt.Sprintf("pods %v: want 3 on 3 nodes and 1 Pending", placed)
		}
		why, _ := kubectl(cfg, "get", "pods", "-n", "guestbook", "-l", "app.kubernetes.io/instance="+hardGuestbook,
			"-o", `jsonpath={.items[*].status.conditions[?(@.reason=="Unschedulable")].message}`)
		if !strings.Contains(why, "anti-affinity") {
			return fmt.Sprintf("the Pending pod's PodScheduled condition %q does not name the anti-affinity", why)
		}
		// The Guestbook says which pod cannot run, and why, in its
		// conditions (kstatus Failed), its active pod still serving.
		said, _ := kubectl(cfg, "get", "guestbook", hardGuestbook,
			"-o", `jsonpath={.status.conditions[?(@.type=="Stalled")].reason} {.status.conditions[?(@.type=="Ready")].message}`)
		if !strings.HasPrefix(said, "PodCannotRun ") || !strings.Contains(said, "cannot be scheduled") ||
			!strings.Contains(said, "anti-affinity") || !strings.Contains(said, "is active and serves") {
			return fmt.Sprintf("the Guestbook says %q, want Stalled PodCannotRun naming the pod the scheduler cannot place, and the active pod", said)
		}
		return ""
	})
	t.Logf("3 of 4 pods placed on 3 nodes, 1 Pending for the anti-affinity, after %s", time.Since(start).Round(time.Millisecond))
	return ctx
}
