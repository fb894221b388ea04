//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/example/myoperator/test/framework/testenv"
)

const roleLabel = "webapp.my.domain/role"

// activePods lists the failover Guestbook's (e2e) pods that carry the
// active label, as name/uid (the StatefulSet reuses names).
func activePods(cfg *envconf.Config) ([]string, error) {
	out, err := kubectl(cfg, "get", "pods", "-n", "guestbook", "-l", "app.kubernetes.io/instance=e2e,"+roleLabel+"=active",
		"-o", `jsonpath={range .items[*]}{.metadata.name}/{.metadata.uid}{" "}{end}`)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	return strings.Fields(out), nil
}

// guestbookFailover: a Guestbook of size 3 runs as StatefulSet pods with
// one active, on three nodes (the default Soft pod anti-affinity), while
// one of size 4 with antiAffinity Hard leaves a pod Pending on the three
// nodes; deleting the active pod promotes a standby, the Service's
// EndpointSlice points only at the new active pod, and status and an event
// say so. On the real node the pods run the Guestbook server and a failing
// readiness probe moves the active role too.
func guestbookFailover() features.Feature {
	var first string
	return features.New("guestbook failover").WithLabel("area", "guestbook").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if out, err := apply(cfg, "apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: e2e}\nspec: {size: 3, configMapName: e2e-conf, alias: Address}\n"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			return ctx
		}).
		Assess("Ready with one active pod of three Running", conditionTrueWithin("guestbook", "", "e2e", "Ready", 90*time.Second)).
		Assess("exactly one active pod", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			testenv.Eventually(t, 30*time.Second, func() string {
				active, err := activePods(cfg)
				if err != nil || len(active) != 1 {
					return fmt.Sprintf("active pods %v (%v)", active, err)
				}
				first = active[0]
				return ""
			})
			return ctx
		}).
		Assess("the three pods run on three nodes (the default Soft pod anti-affinity)", assessSpreadOverNodes).
		Assess("antiAffinity Hard, size 4, 3 nodes: one pod stays Pending", assessHardAntiAffinity).
		Assess("deleting the active pod promotes a standby", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			start := time.Now()
			firstName, _, _ := strings.Cut(first, "/")
			if out, err := kubectl(cfg, "delete", "pod", "-n", "guestbook", firstName, "--wait=false"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			var second string
			testenv.Eventually(t, 60*time.Second, func() string {
				active, err := activePods(cfg)
				if err != nil || len(active) != 1 || active[0] == first {
					return fmt.Sprintf("active pods %v (%v), previous %s", active, err, first)
				}
				second = active[0]
				secondName, _, _ := strings.Cut(second, "/")
				status, _ := kubectl(cfg, "get", "guestbook", "e2e", "-o", "jsonpath={.status.active}")
				if status != secondName {
					return fmt.Sprintf("status.active %q, want %s", status, secondName)
				}
				eps, _ := kubectl(cfg, "get", "endpointslices", "-n", "guestbook", "-l", "kubernetes.io/service-name=e2e",
					"-o", "jsonpath={.items[*].endpoints[*].targetRef.name}")
				if strings.TrimSpace(eps) != secondName {
					return fmt.Sprintf("EndpointSlice endpoints %q, want only %s", eps, secondName)
				}
				return ""
			})
			t.Logf("failover from %s to %s in %s", first, second, time.Since(start).Round(time.Millisecond))
			// This Guestbook's events only (by UID): an earlier run on the
			// same cluster left events of another Guestbook of the same name.
			uid, err := kubectl(cfg, "get", "guestbook", "e2e", "-o", "jsonpath={.metadata.uid}")
			if err != nil {
				t.Fatalf("%v: %s", err, uid)
			}
			testenv.Eventually(t, 30*time.Second, func() string {
				out, _ := kubectl(cfg, "get", "events.events.k8s.io", "-A", "--field-selector", "reason=Failover",
					"-o", fmt.Sprintf(`jsonpath={.items[?(@.regarding.uid=="%s")].note}`, uid))
				if !strings.Contains(out, "promoted to active") {
					return "no Failover event: " + out
				}
				return ""
			})
			return ctx
		}).
		Assess("the active pod's readiness probe fails: a standby is promoted within the probe's period plus one reconcile", assessProbeFailover).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "guestbook", "e2e", hardGuestbook)
			return ctx
		}).
		Feature()
}

// assessProbeFailover makes the active pod's readiness endpoint fail (the
// Guestbook server's POST /readyz/fail): the kubelet's probe marks it not
// Ready, and the operator promotes a standby within the probe's period
// (times its failure threshold) plus one reconcile. Made ready again, the
// old pod comes back as a standby: the active role does not move back.
func assessProbeFailover(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	if !mode.realNode {
		skip(t, "on kwok nodes a pod's readiness is kwok's, not a probe's: E2E_NODE=real runs the Guestbook server and its probe")
	}
	var active []string
	testenv.Eventually(t, 60*time.Second, func() string {
		var err error
		active, err = activePods(cfg)
		if err != nil || len(active) != 1 {
			return fmt.Sprintf("active pods %v (%v)", active, err)
		}
		if out, _ := kubectl(cfg, "get", "guestbook", "e2e", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`); out != "True" {
			return "Guestbook Ready " + out
		}
		return ""
	})
	old, _, _ := strings.Cut(active[0], "/")
	probe, err := kubectl(cfg, "get", "statefulset", "-n", "guestbook", "e2e", "-o",
		`jsonpath={.spec.template.spec.containers[0].readinessProbe.periodSeconds} {.spec.template.spec.containers[0].readinessProbe.failureThreshold}`)
	if err != nil {
		t.Fatalf("%v: %s", err, probe)
	}
	var period, threshold int
	if _, err := fmt.Sscan(probe, &period, &threshold); err != nil || period == 0 {
		t.Fatalf("the StatefulSet's readiness probe: %q (%v)", probe, err)
	}
	// One reconcile, with the kubelet's status write and the watch events
	// around it, is well under a second here; 2 s is its budget.
	budget := time.Duration(period*threshold)*time.Second + 2*time.Second
	ip, err := kubectl(cfg, "get", "pod", "-n", "guestbook", old, "-o", "jsonpath={.status.podIP}")
	if err != nil || ip == "" {
		t.Fatalf("pod %s IP %q: %v", old, ip, err)
	}
	guestbookServer(t, ip, "/readyz/fail")
	start := time.Now()
	var notReady time.Duration
	var promoted string
	testenv.Eventually(t, 60*time.Second, func() string {
		if notReady == 0 {
			if out, _ := kubectl(cfg, "get", "pod", "-n", "guestbook", old, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`); out == "False" {
				notReady = time.Since(start)
			}
		}
		now, err := activePods(cfg)
		if err != nil || len(now) != 1 || now[0] == active[0] {
			return fmt.Sprintf("active pods %v (%v), previous %s", now, err, active[0])
		}
		promoted, _, _ = strings.Cut(now[0], "/")
		return ""
	})
	took := time.Since(start)
	seen := "the suite's poll did not see it not Ready before the promotion"
	if notReady > 0 {
		seen = "the kubelet reported it not Ready after " + notReady.Round(time.Millisecond).String()
	}
	fmt.Printf("e2e: guestbook probe failover: %s made unready; %s; %s active after %s (probe period %ds x failure threshold %d, budget %s)\n",
		old, seen, promoted, took.Round(time.Millisecond), period, threshold, budget)
	if took > budget {
		t.Errorf("a standby became active %s after the probe started failing, want within %s", took.Round(time.Millisecond), budget)
	}
	guestbookServer(t, ip, "/readyz/ok")
	testenv.Eventually(t, 60*time.Second, func() string {
		role, _ := kubectl(cfg, "get", "pod", "-n", "guestbook", old, "-o", "jsonpath={.metadata.labels.webapp\\.my\\.domain/role}")
		if role != "standby" {
			return fmt.Sprintf("pod %s role %q, want standby once Ready again", old, role)
		}
		now, err := activePods(cfg)
		if err != nil || len(now) != 1 || !strings.HasPrefix(now[0], promoted+"/") {
			return fmt.Sprintf("active pods %v (%v), want only %s", now, err, promoted)
		}
		return ""
	})
	return ctx
}

// guestbookServer posts to a Guestbook pod's server (its failover drill).
func guestbookServer(t *testing.T, ip, path string) {
	t.Helper()
	resp, err := http.Post("http://"+ip+":8080"+path, "text/plain", nil)
	if err != nil {
		t.Fatalf("POST %s to %s: %v", path, ip, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s to %s: %s", path, ip, resp.Status)
	}
}
