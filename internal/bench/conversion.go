package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Lists is the median time of a LIST of every Drink of a namespace through
// the storage version and through v1alpha1, which the API server converts
// by calling the operator's conversion webhook.
type Lists struct {
	V1, V1alpha1 float64 // seconds
}

// ListDrinks LISTs the Drinks of ns reps times through each version,
// alternating so that both see the same machine, and checks that each LIST
// returned all n.
func ListDrinks(ctx context.Context, cp *ControlPlane, ns string, n, reps int) (Lists, error) {
	var v1, alpha []float64
	for range reps {
		for _, version := range []string{"v1", "v1alpha1"} {
			path := "/apis/example.com/" + version + "/namespaces/" + ns + "/drinks"
			start := time.Now()
			raw, err := cp.Clientset.RESTClient().Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(ctx)
			took := time.Since(start).Seconds()
			if err != nil {
				return Lists{}, fmt.Errorf("LIST %s: %w", path, err)
			}
			var list struct {
				Items []struct {
					APIVersion string `json:"apiVersion"`
				} `json:"items"`
			}
			if err := json.Unmarshal(raw, &list); err != nil {
				return Lists{}, fmt.Errorf("LIST %s: %w", path, err)
			}
			if len(list.Items) != n || list.Items[0].APIVersion != "example.com/"+version {
				return Lists{}, fmt.Errorf("LIST %s returned %d Drinks, want %d in %s", path, len(list.Items), n, version)
			}
			if version == "v1" {
				v1 = append(v1, took)
			} else {
				alpha = append(alpha, took)
			}
		}
	}
	return Lists{V1: SpreadOf(v1).Median, V1alpha1: SpreadOf(alpha).Median}, nil
}
