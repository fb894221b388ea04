//go:build e2e

package e2e

import "testing"

// The features run in this order on one cluster: first what the install
// left, then the product's behaviour, then what disturbs the operator
// (leader kill, upgrade, make undeploy and make deploy), and last the
// uninstall, which also installs again. Each feature also runs alone
// (E2E_ARGS="--labels area=...").

func TestInstallAndBootstrap(t *testing.T) { suite.Test(t, installAndBootstrap()) }

func TestDrinkInEveryVersion(t *testing.T) { suite.Test(t, drinkInEveryVersion()) }

func TestBadInput(t *testing.T) { suite.Test(t, badInput()) }

func TestGuestbookFailover(t *testing.T) { suite.Test(t, guestbookFailover()) }

func TestLiveConfiguration(t *testing.T) { suite.Test(t, liveConfiguration()) }

func TestLeaderFailoverUnderLoad(t *testing.T) { suite.Test(t, leaderFailoverUnderLoad()) }

func TestUpgradeFromPreviousRelease(t *testing.T) { suite.Test(t, upgradeFromPreviousRelease()) }

func TestRemovalKeepsUsersData(t *testing.T) { suite.Test(t, removalKeepsUsersData()) }

func TestUninstallAndReinstall(t *testing.T) { suite.Test(t, uninstallAndReinstall()) }
