package bootstrap_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/example/myoperator/bootstrap"
	"github.com/example/myoperator/test/framework/testutil"
)

// TestE2EUpgradesFromTheLastReleaseThatWroteDefaults: make test-e2e's
// E2E_UPGRADE_FROM (make/test.mk) names the oldest release the e2e upgrade
// starts from, which is the last one whose bootstrap wrote its defaults
// into the spec: the one whose values this bootstrap must still release.
// The Makefile needs the name as text (its modules download before the
// suite enters the network namespace), so this keeps the two in step: a
// release added to EarlierDefaults without the e2e upgrading from it, or
// the e2e starting from a release this bootstrap knows nothing of, fails
// here.
func TestE2EUpgradesFromTheLastReleaseThatWroteDefaults(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "make", "test.mk"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^E2E_UPGRADE_FROM \?= *(\S*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("make/test.mk sets no E2E_UPGRADE_FROM ?= <release>")
	}
	last := bootstrap.EarlierDefaults[len(bootstrap.EarlierDefaults)-1].Release
	if got := string(m[1]); got != last {
		t.Errorf("make/test.mk: E2E_UPGRADE_FROM ?= %s, want %s, the last release of bootstrap.EarlierDefaults", got, last)
	}
}
