package olmbundle

import (
	"os"
	"regexp"
	"testing"
)

// TestMinKubeVersionIsTested ties the CSV's claim to what is run: the
// oldest Kubernetes that make test-k8s-oldest builds and tests must be of
// MinKubeVersion's minor, so the claim can neither fall below what is
// tested nor stay above it once an older version is.
func TestMinKubeVersionIsTested(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^KUBE_OLDEST_VERSION \?= v(\d+\.\d+)\.\d+$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile sets no KUBE_OLDEST_VERSION ?= vX.Y.Z")
	}
	claimed := regexp.MustCompile(`^(\d+\.\d+)\.\d+$`).FindStringSubmatch(MinKubeVersion)
	if claimed == nil || claimed[1] != string(m[1]) {
		t.Errorf("the CSV claims minKubeVersion %s, make test-k8s-oldest tests v%s", MinKubeVersion, m[1])
	}
}
