//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/test/framework/testenv"
)

const configNS = "e2e-config"

// liveConfiguration: editing OperatorConfig cluster changes the running
// operator's log level (on every replica) and management state, without a
// container restart. The log lines are read where the suite can read them
// (its pod runner's files), and restarts counted where they can be counted;
// the leader's Lease identity (pod and process) must not change either.
// The OperatorConfig's log level and management state are set back to what
// they were.
func liveConfiguration() features.Feature {
	var restarts int32
	var marks map[string]int
	var leader string
	var was operatorv1alpha1.OperatorConfigSpec
	return features.New("live configuration").WithLabel("area", "config").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			restarts = totalRestarts(ctx, t)
			oc := &operatorv1alpha1.OperatorConfig{}
			if err := kc.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
				t.Fatal(err)
			}
			was = oc.Spec
			l, err := leaseOf(ctx)
			if err != nil || l.Spec.HolderIdentity == nil {
				t.Fatalf("no leader: %v", err)
			}
			leader = *l.Spec.HolderIdentity
			if out, err := apply(cfg, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+configNS+"}\n---\n"+
				"apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: live, namespace: "+configNS+"}\nspec: {displayName: Live, beverage: tea}\n"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			return ctx
		}).
		Assess("Drink ready", conditionTrueWithin("drink", configNS, "live", "Ready", 30*time.Second)).
		Assess("logLevel Debug: every replica logs debug lines", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			marks = managerLogMarks(ctx)
			patchConfig(t, cfg, `{"spec":{"logLevel":"Debug","managementState":"Managed"}}`)
			configInEffect(ctx, t, operatorv1alpha1.LogDebug, operatorv1alpha1.Managed)
			if why := noLogs(); why != "" {
				skip(t, "logLevel Debug is in effect (OperatorConfig status), its log lines not checked: "+why)
			}
			testenv.Eventually(t, 30*time.Second, func() string {
				for pod, lines := range managerLogsSince(marks) {
					if !strings.Contains(lines, `"level":"debug"`) {
						return "no debug line from " + pod + " since logLevel Debug"
					}
				}
				return ""
			})
			return ctx
		}).
		Assess("logLevel Info: no debug lines, even for a new Drink", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			patchConfig(t, cfg, `{"spec":{"logLevel":"Info"}}`)
			configInEffect(ctx, t, operatorv1alpha1.LogInfo, operatorv1alpha1.Managed)
			// The standby applies the level from its own watch; give it
			// the same moment the leader had.
			time.Sleep(2 * time.Second)
			marks = managerLogMarks(ctx)
			if out, err := apply(cfg, "apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: quiet, namespace: "+configNS+"}\nspec: {displayName: Quiet, beverage: tea}\n"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			conditionTrueWithin("drink", configNS, "quiet", "Ready", 30*time.Second)(ctx, t, cfg)
			if why := noLogs(); why != "" {
				skip(t, "logLevel Info is in effect (OperatorConfig status), its log lines not checked: "+why)
			}
			for pod, lines := range managerLogsSince(marks) {
				if strings.Contains(lines, `"level":"debug"`) {
					t.Errorf("%s logged debug lines at logLevel Info:\n%s", pod, lines)
				}
			}
			return ctx
		}).
		Assess("Unmanaged: a deleted ConfigMap stays deleted, the Drink says why", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			patchConfig(t, cfg, `{"spec":{"managementState":"Unmanaged"}}`)
			configInEffect(ctx, t, operatorv1alpha1.LogInfo, operatorv1alpha1.Unmanaged)
			if out, err := kubectl(cfg, "delete", "configmap", "-n", configNS, "live"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			testenv.Eventually(t, 30*time.Second, func() string {
				out, _ := kubectl(cfg, "get", "drink", "-n", configNS, "live", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`)
				if out != "Unmanaged" {
					return "Drink Ready reason " + out + ", want Unmanaged"
				}
				return ""
			})
			time.Sleep(3 * time.Second)
			err := kc.Get(ctx, client.ObjectKey{Namespace: configNS, Name: "live"}, &corev1.ConfigMap{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("ConfigMap live while Unmanaged: %v, want NotFound", err)
			}
			return ctx
		}).
		Assess("Managed again: the ConfigMap comes back", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			patchConfig(t, cfg, `{"spec":{"managementState":"Managed"}}`)
			configInEffect(ctx, t, operatorv1alpha1.LogInfo, operatorv1alpha1.Managed)
			configMapHas(configNS, "live", map[string]string{"displayName": "Live", "beverage": "tea", "size": "Medium", "sugarCubes": "0", "extras": ""})(ctx, t, cfg)
			return conditionTrueWithin("drink", configNS, "live", "Ready", 30*time.Second)(ctx, t, cfg)
		}).
		Assess("no container restarted", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			l, err := leaseOf(ctx)
			if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != leader {
				t.Errorf("the Lease is held by %v (%v), was %s: the leader restarted or changed", l.Spec.HolderIdentity, err, leader)
			}
			if why := restartsInvisible(ctx); why != "" {
				skip(t, "the leader's process is the same (Lease holder "+leader+"), the containers' restart counts not checked: "+why)
			}
			if got := totalRestarts(ctx, t); got != restarts {
				t.Errorf("operator containers restarted %d times during the feature", got-restarts)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// What the spec held before, a field it did not set removed
			// again (null), not set to "".
			jsonOrNull := func(v string) string {
				if v == "" {
					return "null"
				}
				return strconv.Quote(v)
			}
			patchConfig(t, cfg, fmt.Sprintf(`{"spec":{"logLevel":%s,"managementState":%s}}`,
				jsonOrNull(string(was.LogLevel)), jsonOrNull(string(was.ManagementState))))
			cleanUp(t, cfg, "namespace", configNS)
			return ctx
		}).
		Feature()
}

func patchConfig(t *testing.T, cfg *envconf.Config, patch string) {
	t.Helper()
	if out, err := kubectl(cfg, "patch", "operatorconfig", operatorv1alpha1.SingletonName, "--type=merge", "-p", patch); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// configInEffect waits until OperatorConfig's status says the operator
// runs with the log level and management state, for the current spec.
func configInEffect(ctx context.Context, t *testing.T, level operatorv1alpha1.LogLevel, state operatorv1alpha1.ManagementState) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		oc := &operatorv1alpha1.OperatorConfig{}
		if err := kc.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
			return err.Error()
		}
		e := oc.Status.Effective
		if oc.Status.ObservedGeneration != oc.Generation || e == nil || e.LogLevel != level || e.ManagementState != state {
			return fmt.Sprintf("status (generation %d of %d) effective %+v, want %s and %s", oc.Status.ObservedGeneration, oc.Generation, e, level, state)
		}
		return ""
	})
}

// totalRestarts counts the restarts of every operator container.
func totalRestarts(ctx context.Context, t *testing.T) int32 {
	t.Helper()
	pods, err := operatorPodList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, p := range pods {
		n += p.restarts
	}
	return n
}

// managerLogMarks records how long each running pod's manager log is
// (nothing when the suite cannot read the logs: noLogs).
func managerLogMarks(ctx context.Context) map[string]int {
	marks := map[string]int{}
	if noLogs() != "" {
		return marks
	}
	pods, _ := operatorPodList(ctx)
	for _, p := range pods {
		marks[p.name] = len(managerLog(p.name))
	}
	return marks
}

// managerLogsSince returns what each pod's manager logged after the mark.
func managerLogsSince(marks map[string]int) map[string]string {
	out := map[string]string{}
	for pod, n := range marks {
		if data := managerLog(pod); len(data) >= n {
			out[pod] = data[n:]
		}
	}
	return out
}

// managerLog is the manager container's log of an operator pod: the
// suite's runner's file, or on the real node the kubelet's (kubectl logs).
func managerLog(pod string) string {
	if runner != nil {
		data, _ := os.ReadFile(runner.LogFile(pod, "manager"))
		return string(data)
	}
	out, _ := containerLog(pod, "manager")
	return out
}
