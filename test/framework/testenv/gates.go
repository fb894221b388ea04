package testenv

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// gateSince is the Kubernetes minor from which kube-apiserver knows each
// feature gate the tests turn on. An older kube-apiserver refuses to
// start with a gate it does not know ("unrecognized feature gate"), so a
// test that needs one skips there instead of failing before it runs.
var gateSince = map[string]int{
	// The sharded list and watch (alpha), which --shard-drinks relies on.
	"ShardedListAndWatch": 36,
}

// SkipUnlessGates skips t, before any API server starts, when the
// kube-apiserver in BinaryDir is older than a gate of gates (Options'
// FeatureGates form, "A=true,B=false") exists in, and says which.
func SkipUnlessGates(t testing.TB, gates string) {
	t.Helper()
	if gates == "" {
		return
	}
	dir, err := BinaryDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(dir, "kube-apiserver"), "--version").Output()
	if err != nil {
		t.Fatalf("kube-apiserver --version: %v", err)
	}
	minor, err := kubeMinor(string(out))
	if err != nil {
		t.Fatal(err)
	}
	if missing := missingGates(gates, minor); len(missing) > 0 {
		t.Skipf("kube-apiserver %s lacks the feature gates %s this test needs", strings.TrimSpace(string(out)), strings.Join(missing, ", "))
	}
}

var versionRE = regexp.MustCompile(`v1\.(\d+)\.`)

// kubeMinor reads the minor version from kube-apiserver --version's
// "Kubernetes v1.37.2".
func kubeMinor(version string) (int, error) {
	m := versionRE.FindStringSubmatch(version)
	if m == nil {
		return 0, fmt.Errorf("no Kubernetes version in %q", version)
	}
	return strconv.Atoi(m[1])
}

// missingGates returns each gate of gates, with the minor it came in,
// that a kube-apiserver of the given minor does not know. A gate
// missing from gateSince is taken as known: the API server then says
// itself if it is not.
func missingGates(gates string, minor int) []string {
	var missing []string
	for _, g := range strings.Split(gates, ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(g), "=")
		if since, ok := gateSince[name]; ok && minor < since {
			missing = append(missing, fmt.Sprintf("%s (from 1.%d)", name, since))
		}
	}
	return missing
}
