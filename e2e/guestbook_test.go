//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/example/myoperator/internal/testenv"
)

const roleLabel = "webapp.my.domain/role"

// activePods lists the Guestbook's pods that carry the active label, as
// name/uid (the StatefulSet reuses names).
func activePods(cfg *envconf.Config, name string) ([]string, error) {
	out, err := kubectl(cfg, "get", "pods", "-n", "guestbook", "-l", "app.kubernetes.io/instance="+name+","+roleLabel+"=active",
		"-o", `jsonpath={range .items[*]}{.metadata.name}/{.metadata.uid}{" "}{end}`)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	return strings.Fields(out), nil
}

// guestbookFailover: a Guestbook of size 3 runs as StatefulSet pods on
// kwok nodes with one active; deleting the active pod promotes a standby,
// the Service's EndpointSlice points only at the new active pod, and status
// and an event say so.
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
				active, err := activePods(cfg, "e2e")
				if err != nil || len(active) != 1 {
					return fmt.Sprintf("active pods %v (%v)", active, err)
				}
				first = active[0]
				return ""
			})
			return ctx
		}).
		Assess("deleting the active pod promotes a standby", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			start := time.Now()
			firstName, _, _ := strings.Cut(first, "/")
			if out, err := kubectl(cfg, "delete", "pod", "-n", "guestbook", firstName, "--wait=false"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			var second string
			testenv.Eventually(t, 60*time.Second, func() string {
				active, err := activePods(cfg, "e2e")
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
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "guestbook", "e2e")
			return ctx
		}).
		Feature()
}
