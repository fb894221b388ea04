package bench

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/myoperator/test/framework/manifests"
)

// ManifestMemoryLimit is the memory limit of the manager container in
// config/manager, in bytes: the bench holds the manager's RSS against the
// limit users get, read from the manifest so that a changed limit is
// measured, not remembered.
func ManifestMemoryLimit() (float64, error) {
	objs, err := manifests.Render("config/manager")
	if err != nil {
		return 0, err
	}
	for _, d := range manifests.OfKind(objs, "Deployment") {
		containers, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if err != nil {
			return 0, err
		}
		for _, c := range containers {
			c, _ := c.(map[string]any)
			if c["name"] != "manager" {
				continue
			}
			limit, found, err := unstructured.NestedString(c, "resources", "limits", "memory")
			if err != nil {
				return 0, fmt.Errorf("config/manager: the manager container's memory limit: %w", err)
			}
			if !found {
				return 0, fmt.Errorf("config/manager: the manager container has no memory limit")
			}
			q, err := resource.ParseQuantity(limit)
			if err != nil {
				return 0, fmt.Errorf("config/manager: memory limit %q: %w", limit, err)
			}
			return float64(q.Value()), nil
		}
	}
	return 0, fmt.Errorf("config/manager: no Deployment with a container named manager")
}
