//go:build e2e

package e2e

import "testing"

// The features run in this order on one cluster: first what the install
// left, then the product's behaviour, then what disturbs the operator
// (leader kill, upgrade, make undeploy and make deploy, an install with
// cert-manager), and last the uninstall, which also installs again. Each
// feature also runs alone (E2E_ARGS="--labels area=..."). On a cluster the
// suite did not create, the features that delete cluster-wide objects run
// only with E2E_ALLOW_DESTRUCTIVE=1, and those that install the operator
// again not with E2E_SKIP_INSTALL=1; each says why when it is skipped.

func TestInstallAndBootstrap(t *testing.T) { runFeature(t, installAndBootstrap()) }

func TestRolesForNamespaceUsers(t *testing.T) { runFeature(t, rolesForNamespaceUsers()) }

func TestDrinkInEveryVersion(t *testing.T) { runFeature(t, drinkInEveryVersion()) }

func TestBadInput(t *testing.T) { runFeature(t, badInput()) }

func TestGuestbookFailover(t *testing.T) { runFeature(t, guestbookFailover()) }

func TestGuestbookStalledRollout(t *testing.T) {
	runFeature(t, guestbookStalledRollout(), pullsForReal())
}

func TestLiveConfiguration(t *testing.T) { runFeature(t, liveConfiguration()) }

func TestLeaderFailoverUnderLoad(t *testing.T) { runFeature(t, leaderFailoverUnderLoad()) }

func TestOperatorRollingRestart(t *testing.T) {
	runFeature(t, operatorRollingRestart())
}

func TestLeaderNodeDrain(t *testing.T) {
	runFeature(t, leaderNodeDrain(),
		destructive("it drains a node of the cluster (kubectl drain: every pod on it evicted) and uncordons it after"))
}

func TestNamespaceScope(t *testing.T) {
	runFeature(t, namespaceScope(),
		ownCluster("it applies config/namespace-scope-default over the install and config/default back, which fits only the install the suite made"))
}

func TestSharing(t *testing.T) {
	runFeature(t, sharing(),
		ownCluster("it applies config/sharding-default over the install and config/default back, which fits only the install the suite made"))
}

func TestRetireV1alpha1(t *testing.T) {
	runFeature(t, retireV1alpha1(),
		destructive("it stops serving example.com/v1alpha1 Drink for every client of the cluster, then removes it from the CRD, before serving it again"),
		reinstalls())
}

func TestUpgradeFromPreHistory(t *testing.T) {
	runFeature(t, upgradeFromPreviousRelease(),
		destructive("it deletes the operator and its CRDs (kubectl delete -k), and with them every Drink, Guestbook and OperatorConfig in the cluster"),
		reinstalls())
}

func TestUpgradeFromCourse(t *testing.T) {
	runFeature(t, courseUpgrade(),
		destructive("it deletes the operator and its CRDs (kubectl delete -k), and with them every Drink, Guestbook and OperatorConfig in the cluster"),
		reinstalls())
}

func TestReleaseUpgrade(t *testing.T) {
	needs := []string{
		ownCluster("it builds the release's image and runs its pods with the suite's pod runner"),
		destructive("it deletes the operator and its CRDs (kubectl delete -k), and with them every Drink, Guestbook and OperatorConfig in the cluster"),
		reinstalls(),
	}
	// From the newest release, as most users upgrade, then from the
	// oldest one supported, as a user who skipped releases does.
	var newest string
	runFeature(t, releaseUpgrade("", &newest), needs...)
	if oldestUpgradeFrom == "" {
		return
	}
	oldest := releaseUpgrade(oldestUpgradeFrom, nil)
	if oldestUpgradeFrom == newest {
		record(featureResult{oldest.Name(), "skipped", newest + " is the newest release: the upgrade from it ran above"})
		return
	}
	runFeature(t, oldest, needs...)
}

func TestRemovalKeepsUsersData(t *testing.T) {
	runFeature(t, removalKeepsUsersData(),
		destructive("make undeploy deletes the operator's namespace, webhook configurations, ClusterRoles and bindings"),
		reinstalls())
}

func TestCertManager(t *testing.T) {
	runFeature(t, certManagerIssues(),
		ownCluster("it runs cert-manager's controllers as a process beside the cluster it created, and the operator's pods with its pod runner"),
		destructive("it deletes the operator and its CRDs (kubectl delete -k), and with them every Drink, Guestbook and OperatorConfig in the cluster"),
		reinstalls())
}

func TestUninstallAndReinstall(t *testing.T) {
	runFeature(t, uninstallAndReinstall(),
		destructive("it deletes the operator and its CRDs (kubectl delete -k), and with them every Drink, Guestbook and OperatorConfig in the cluster"),
		reinstalls())
}

func TestHelmLifecycle(t *testing.T) {
	why := ""
	if mode.install != installHelm {
		why = "it upgrades and uninstalls the helm release the suite installs with E2E_INSTALL=helm"
	}
	runFeature(t, helmLifecycle(), why)
}

func TestHelmUpgrade(t *testing.T) {
	why := ""
	if mode.install != installHelm {
		why = "it upgrades to the chart of the release's files the suite installs with E2E_INSTALL=helm"
	}
	runFeature(t, helmUpgrade(), why, ownCluster("it builds the previous release's image and runs its pods with the suite's pod runner"))
}
