package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/myoperator/test/framework/testutil"
)

// RenderWithComponents renders a kustomization under config/ (for example
// "config/default") with optional components added (for example
// "config/network-policy"), the way a user's overlay would, through a
// throw-away overlay outside the repository.
func RenderWithComponents(base string, components ...string) ([]*unstructured.Unstructured, error) {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "overlay-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	// kustomize loads files only below an overlay's root; a link to
	// config/ puts the repository's kustomizations there.
	if err := os.Symlink(filepath.Join(root, "config"), filepath.Join(dir, "config")); err != nil {
		return nil, err
	}
	var k strings.Builder
	fmt.Fprintf(&k, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\n", base)
	if len(components) > 0 {
		k.WriteString("components:\n")
		for _, c := range components {
			fmt.Fprintf(&k, "- %s\n", c)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k.String()), 0o600); err != nil {
		return nil, err
	}
	name := base + " + " + strings.Join(components, " + ")
	docs, err := kustomize(dir, name)
	if err != nil {
		return nil, err
	}
	return decode(name, docs)
}
