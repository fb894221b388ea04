//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/test/framework/testenv"
)

const uninstallNS = "e2e-uninstall"

// uninstallAndReinstall: both ways to remove everything, with Drinks
// present, complete: no namespace stuck terminating, no webhook
// configuration or CRD left, no custom resource stuck on a finalizer, the
// Drinks' ConfigMaps collected; a fresh install works after each.
//
// The documented way (make uninstall CONFIRM=yes, which deletes the custom
// resources before their CRDs and waits for the garbage collector, then the
// operator) must leave nothing at all. The raw kubectl delete -k deletes
// the CRDs and their objects at once; a ConfigMap it leaves is forgiven
// only when kube-controller-manager's log shows its garbage collector losing
// sight of Drinks after the delete began (collectorLostSight), the way the
// collector loses a deletion, and the test prints that line.
func uninstallAndReinstall() features.Feature {
	var deleteStart time.Time
	drinkUIDs := map[string]string{} // name -> UID of the Drinks the removal deletes
	return features.New("uninstall and reinstall").WithLabel("area", "uninstall").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			createUninstallDrinks(ctx, t, cfg, drinkUIDs)
			return ctx
		}).
		Assess("make uninstall CONFIRM=yes, then kubectl delete -k "+installedConfig()+": nothing left behind, nothing forgiven", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			deleteStart = time.Now()
			cmd := exec.Command(filepath.Join(root, "hack", "uninstall.sh"))
			cmd.Env = append(os.Environ(), "CONFIRM=yes", "KUBECTL=kubectl --kubeconfig "+cfg.KubeconfigFile())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make uninstall CONFIRM=yes: %v\n%s", err, out)
			}
			fmt.Printf("e2e: make uninstall CONFIRM=yes took %s; kubectl delete -k %s took %s\n", time.Since(deleteStart).Round(time.Millisecond),
				installedConfig(), uninstall(t, cfg).Round(time.Millisecond))
			checkNothingLeft(t, cfg, deleteStart, drinkUIDs, false)
			return ctx
		}).
		Assess("a fresh install works", reinstallWorks("again")).
		Assess("kubectl delete -k "+installedConfig()+" completes with Drinks present; nothing left but what the collector's log shows it lost", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			clear(drinkUIDs)
			createUninstallDrinks(ctx, t, cfg, drinkUIDs)
			deleteStart = time.Now()
			fmt.Printf("e2e: kubectl delete -k %s took %s\n", installedConfig(), uninstall(t, cfg).Round(time.Millisecond))
			checkNothingLeft(t, cfg, deleteStart, drinkUIDs, true)
			return ctx
		}).
		Assess("a fresh install works after it", reinstallWorks("again2")).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "namespace", uninstallNS)
			return ctx
		}).
		Feature()
}

// createUninstallDrinks creates the namespace, waits until the garbage
// collector watches Drinks, creates five Drinks, waits until they are
// Ready and keeps their UIDs.
func createUninstallDrinks(ctx context.Context, t *testing.T, cfg *envconf.Config, drinkUIDs map[string]string) {
	t.Helper()
	if out, err := apply(cfg, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+uninstallNS+"}\n"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	waitGCWatchesDrinks(t, cfg)
	var m strings.Builder
	for i := range 5 {
		fmt.Fprintf(&m, "---\napiVersion: example.com/v1\nkind: Drink\nmetadata: {name: d%d, namespace: %s}\nspec: {displayName: D%d, beverage: tea}\n", i, uninstallNS, i)
	}
	if out, err := apply(cfg, m.String()); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for i := range 5 {
		conditionTrueWithin("drink", uninstallNS, fmt.Sprintf("d%d", i), "Ready", 30*time.Second)(ctx, t, cfg)
	}
	out, err := kubectl(cfg, "get", "drinks.example.com", "-n", uninstallNS, "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{" "}{end}`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, f := range strings.Fields(out) {
		name, uid, _ := strings.Cut(f, "=")
		drinkUIDs[name] = uid
	}
}

// reinstallWorks installs the operator again and creates a Drink named
// name through v1beta1.
func reinstallWorks(name string) features.Func {
	return func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		installAndWait(ctx, t, cfg)
		conditionTrueWithin("operatorconfig", "", operatorv1alpha1.SingletonName, operatorv1alpha1.ConditionAvailable, 60*time.Second)(ctx, t, cfg)
		if out, err := apply(cfg, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+uninstallNS+"}\n---\napiVersion: example.com/v1beta1\nkind: Drink\nmetadata: {name: "+name+", namespace: "+uninstallNS+"}\nspec: {name: Again, drink: tea, size: Large, sugar: 1}\n"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return configMapHas(uninstallNS, name, map[string]string{"name": "Again", "drink": "tea", "size": "Large", "sugar": "1"})(ctx, t, cfg)
	}
}

// checkNothingLeft waits until nothing of the operator is left. What is
// left, when something is: a ConfigMap created or written after the delete
// began was written by a replica still running on a stale cache; one
// untouched since before it, owned by its deleted Drink, was missed by the
// garbage collector (gcMissed). With forgiveLost, one such ConfigMap is
// forgiven, and deleted by hand so that the reinstall starts clean, only
// when the collector's log shows it lost sight of Drinks after the
// delete began.
func checkNothingLeft(t *testing.T, cfg *envconf.Config, deleteStart time.Time, drinkUIDs map[string]string, forgiveLost bool) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			logLeftConfigMaps(t, cfg, deleteStart, drinkUIDs)
		}
	})
	var missed []string
	testenv.Eventually(t, 60*time.Second, func() string {
		var left []string
		var err error
		if missed, err = gcMissed(cfg, deleteStart, drinkUIDs); err != nil {
			return err.Error()
		}
		for _, q := range [][]string{
			{"get", "namespace", operatorNS, "--ignore-not-found", "-o", "name"},
			{"get", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "-o", "name"},
			{"get", "crd", "-o", "name"},
			{"get", "clusterroles,clusterrolebindings", "-o", "name"},
			{"get", "configmaps", "-n", uninstallNS, "-l", "app.kubernetes.io/managed-by=myoperator", "-o", "name"},
			{"get", "namespaces", "--field-selector", "status.phase=Terminating", "-o", "name"},
		} {
			out, err := kubectl(cfg, q...)
			if err != nil {
				return fmt.Sprintf("kubectl %v: %v: %s", q, err, out)
			}
			for _, name := range strings.Fields(out) {
				if forgiveLost && slices.Contains(missed, name) {
					continue
				}
				if strings.Contains(name, "myoperator") || strings.Contains(name, "example.com") || strings.Contains(name, "my.domain") ||
					strings.HasPrefix(name, "configmap/") || strings.HasPrefix(name, "namespace/") {
					left = append(left, name)
				}
			}
		}
		if len(left) > 0 {
			return "left behind: " + strings.Join(left, " ")
		}
		switch {
		case len(missed) > 1:
			return fmt.Sprintf("left behind: %v, untouched since before the delete and owned by their deleted Drinks: "+
				"more than the one a garbage collector's lost event explains", missed)
		case len(missed) == 1 && time.Since(deleteStart) < 45*time.Second:
			// The collector takes well under a second once it has the
			// Drink's delete event: wait long enough that a slow
			// collector is not taken for one that missed it.
			return "waiting for the garbage collector to delete " + missed[0]
		}
		return ""
	})
	if len(missed) != 1 || !forgiveLost {
		return
	}
	logLeftConfigMaps(t, cfg, deleteStart, drinkUIDs)
	proof := collectorLostDrinks(deleteStart)
	if proof == "" {
		t.Fatalf("%s was left, untouched since before the delete and owned by its deleted Drink, and kube-controller-manager's log shows "+
			"its garbage collector neither losing its watch of Drinks, nor dropping them at a discovery sync, nor failing to map them after the "+
			"delete began: nothing explains it. %s", missed[0], collectorLog(strings.TrimPrefix(missed[0], "configmap/"), drinkUIDs))
	}
	fmt.Printf("e2e: %s was missed by the garbage collector, which lost sight of Drinks after the delete began:\n  %s\n"+
		"e2e: the other %d were collected; deleted by hand\n", missed[0], proof, len(drinkUIDs)-1)
	if out, err := kubectl(cfg, "delete", "-n", uninstallNS, missed[0]); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// waitGCWatchesDrinks returns once the garbage collector has collected the
// ConfigMap of a deleted canary Drink. It starts watching a kind only at
// its next resync after the kind appears (every 30 s): right after a
// feature that reinstalled the CRDs, the deletion of a Drink can go unseen
// and its ConfigMap is never collected, which says nothing about the
// operator. A canary the collector missed is removed by hand and tried
// again.
func waitGCWatchesDrinks(t *testing.T, cfg *envconf.Config) {
	t.Helper()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		if out, err := apply(cfg, "apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: gc-canary, namespace: "+uninstallNS+"}\nspec: {displayName: Canary, beverage: tea}\n"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		testenv.Eventually(t, 30*time.Second, func() string {
			if out, err := kubectl(cfg, "get", "configmap", "-n", uninstallNS, "gc-canary", "-o", "name"); err != nil {
				return "canary ConfigMap: " + out
			}
			return ""
		})
		if out, err := kubectl(cfg, "delete", "drink", "-n", uninstallNS, "gc-canary", "--wait=true"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if out, _ := kubectl(cfg, "get", "configmap", "-n", uninstallNS, "gc-canary", "--ignore-not-found", "-o", "name"); strings.TrimSpace(out) == "" {
				fmt.Printf("e2e: the garbage collector watches Drinks (canary collected, attempt %d, %s)\n", attempt, time.Since(start).Round(time.Millisecond))
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("the garbage collector collected no canary ConfigMap in %s", time.Since(start).Round(time.Second))
		}
		if out, err := kubectl(cfg, "delete", "configmap", "-n", uninstallNS, "gc-canary", "--ignore-not-found"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
}

// gcMissed names the Drink ConfigMaps ("configmap/<name>") left for a
// reason that is not the operator's: each was created and last written
// before the delete began, and its one owner is its Drink as the operator
// makes it (example.com/v1 Drink, controller, blocking owner deletion),
// under the UID the Drink had, which the delete removed. A ConfigMap the
// operator restored or touched on a stale cache was written after the
// delete began, and one with a wrong owner reference is the operator's
// fault too; neither is named. What is left then is kube-controller-
// manager's garbage collector missing the Drink's delete event: seen in
// CI for one Drink of five (once the last one the CRD's removal deleted,
// once the one created a second before it), never in 6 runs of the
// feature alone. The collector can stop hearing of Drinks in three ways
// while their CRD goes (collectorLostSight); the Drink then stays in its
// graph and no later event brings it out. checkNothingLeft forgives such a
// ConfigMap only on the raw path and only with the collector's log line
// that shows one of them (collectorLostDrinks).
func gcMissed(cfg *envconf.Config, deleteStart time.Time, drinkUIDs map[string]string) ([]string, error) {
	// kubectl leaves managedFields out unless asked: without them every
	// ConfigMap would look untouched since its creation.
	out, err := kubectl(cfg, "get", "configmaps", "-n", uninstallNS, "-l", "app.kubernetes.io/managed-by=myoperator", "--show-managed-fields", "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	var list corev1.ConfigMapList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, err
	}
	began := deleteStart.Truncate(time.Second) // the API server's times are in whole seconds
	var missed []string
	for _, cm := range list.Items {
		untouched := cm.CreationTimestamp.Time.Before(began)
		for _, m := range cm.ManagedFields {
			untouched = untouched && m.Time != nil && m.Time.Time.Before(began)
		}
		if len(cm.OwnerReferences) != 1 || !untouched {
			continue
		}
		o := cm.OwnerReferences[0]
		if o.APIVersion == "example.com/v1" && o.Kind == "Drink" && o.Name == cm.Name && drinkUIDs[o.Name] == string(o.UID) &&
			ptr.Deref(o.Controller, false) && ptr.Deref(o.BlockOwnerDeletion, false) {
			missed = append(missed, "configmap/"+cm.Name)
		}
	}
	return missed, nil
}

// logLeftConfigMaps says, a line each (the failure summary keeps only a
// message's first line), when each ConfigMap left in the namespace was
// created and by whom, and whether its owner is the Drink the uninstall
// deleted: one created after the delete began was written on a stale
// cache; one created before it, owned by the deleted Drink, was missed by
// the garbage collector.
func logLeftConfigMaps(t *testing.T, cfg *envconf.Config, deleteStart time.Time, drinkUIDs map[string]string) {
	t.Helper()
	out, err := kubectl(cfg, "get", "configmaps", "-n", uninstallNS, "--show-managed-fields", "-o", "json")
	if err != nil {
		t.Logf("ConfigMaps left: %v: %s", err, out)
		return
	}
	var list corev1.ConfigMapList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Logf("ConfigMaps left: %v", err)
		return
	}
	t.Logf("the delete began at %s; %d ConfigMaps left in %s", deleteStart.UTC().Format(time.RFC3339Nano), len(list.Items), uninstallNS)
	for _, cm := range list.Items {
		var owners, writers []string
		for _, o := range cm.OwnerReferences {
			owners = append(owners, fmt.Sprintf("%s/%s uid %s (the deleted Drink's: %t)", o.Kind, o.Name, o.UID, drinkUIDs[o.Name] == string(o.UID)))
		}
		for _, m := range cm.ManagedFields {
			writers = append(writers, fmt.Sprintf("%s/%s at %s", m.Manager, m.Operation, m.Time.UTC().Format(time.RFC3339)))
		}
		t.Logf("left: configmap/%s created %s (after the delete began: %t), owners %v, writers %v",
			cm.Name, cm.CreationTimestamp.UTC().Format(time.RFC3339), !cm.CreationTimestamp.Time.Before(deleteStart.Truncate(time.Second)), owners, writers)
	}
}

// collectorLog returns what kube-controller-manager logged about the
// Drink and its ConfigMap, and about the garbage collector losing sight of
// Drinks, when the suite made the cluster: what there is to read when a
// leftover has no explanation. The lines go into the failure's message, so
// that they reach the summary a CI log keeps.
func collectorLog(name string, drinkUIDs map[string]string) string {
	if !mode.created() || mode.realNode {
		return ""
	}
	path := filepath.Join(kwokDir(), "clusters", clusterName, "logs", "kube-controller-manager.log")
	data, err := os.ReadFile(path)
	if err != nil {
		return "kube-controller-manager's log: " + err.Error()
	}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "name: "+name+",") && strings.Contains(line, uninstallNS) ||
			strings.Contains(line, drinkUIDs[name]) || collectorLostSight(line) {
			lines = append(lines, line)
		}
	}
	const keep = 40 // the last ones: the delete is at the end of the log
	if len(lines) > keep {
		lines = append([]string{fmt.Sprintf("(%d earlier lines left out)", len(lines)-keep)}, lines[len(lines)-keep:]...)
	}
	return fmt.Sprintf("%s, the lines naming %s/%s, its Drink's UID or Drinks' watch, discovery or mapping:\n%s", path, uninstallNS, name, strings.Join(lines, "\n"))
}

// collectorLostDrinks returns kube-controller-manager's log line that shows
// the garbage collector losing sight of Drinks after the delete began, or
// "". Only a cluster the suite made has the log at hand.
func collectorLostDrinks(deleteStart time.Time) string {
	if !mode.created() || mode.realNode {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(kwokDir(), "clusters", clusterName, "logs", "kube-controller-manager.log"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !collectorLostSight(line) {
			continue
		}
		if at, ok := klogTime(line, deleteStart); ok && !at.Before(deleteStart.Add(-time.Second)) {
			return line
		}
	}
	return ""
}

// collectorLostSight tells whether a line of kube-controller-manager's log
// is one of the three ways its garbage collector stops hearing of Drinks
// when their CRD goes, each of which drops a deletion it has not handled
// yet: its watch of Drinks fails (the CRD's storage gone under it, the
// events not yet sent lost); its discovery sync (every 30 s) removes
// Drinks and stops their informer, dropping the events it still held; or,
// after that sync reset its REST mapper, it can no longer look a Drink up,
// so a dependent it examines stays until Drinks return.
func collectorLostSight(line string) bool {
	switch {
	case strings.Contains(line, "Failed to watch") && strings.Contains(line, "drinks"):
		return true
	case strings.Contains(line, "syncing garbage collector with updated resources from discovery"):
		_, removed, _ := strings.Cut(line, "removed: ")
		return strings.Contains(removed, "Group:example.com ") && strings.Contains(removed, "Resource:drinks}")
	default:
		return strings.Contains(line, "unable to get REST mapping for example.com/") && strings.Contains(line, "/Drink")
	}
}

// klogTime reads the time of a klog line ("E1202 05:47:58.123456 ..."),
// in the year and time zone of ref (klog writes neither).
func klogTime(line string, ref time.Time) (time.Time, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || len(f[0]) != 5 {
		return time.Time{}, false
	}
	at, err := time.ParseInLocation("0102 15:04:05.000000", f[0][1:]+" "+f[1], time.Local)
	if err != nil {
		return time.Time{}, false
	}
	return at.AddDate(ref.Year(), 0, 0), true
}
