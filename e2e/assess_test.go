//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/example/myoperator/test/framework/testenv"
)

// apply pipes a manifest into kubectl apply (args added, for example
// --as) and returns its output.
func apply(cfg *envconf.Config, manifest string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command("kubectl", append(append([]string{"--kubeconfig", cfg.KubeconfigFile(), "apply"}, args...), "-f", "-")...)
	cmd.Stdin = bytes.NewBufferString(manifest)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// settle is how long an assessor waits for the operator to act on a
// change.
const settle = 30 * time.Second

// configMapHas is a reusable assessor: the ConfigMap holds exactly data
// within the settle time.
func configMapHas(ns, name string, data map[string]string) features.Func {
	return func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		testenv.Eventually(t, settle, func() string {
			out, err := kubectl(cfg, "get", "configmap", "-n", ns, name, "-o", "jsonpath={.data}")
			if err != nil {
				return fmt.Sprintf("ConfigMap %s/%s: %s", ns, name, out)
			}
			got := map[string]string{}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				return fmt.Sprintf("ConfigMap %s/%s data %q: %v", ns, name, out, err)
			}
			if !maps.Equal(got, data) {
				return fmt.Sprintf("ConfigMap %s/%s data %v, want %v", ns, name, got, data)
			}
			return ""
		})
		return ctx
	}
}

// conditionTrueWithin is a reusable assessor: the object's condition is
// True within the timeout.
func conditionTrueWithin(resource, ns, name, condition string, timeout time.Duration) features.Func {
	return func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		args := []string{"get", resource, name, "-o", fmt.Sprintf(`jsonpath={.status.conditions[?(@.type=="%s")].status}`, condition)}
		if ns != "" {
			args = append(args, "-n", ns)
		}
		testenv.Eventually(t, timeout, func() string {
			out, err := kubectl(cfg, args...)
			if err != nil || out != "True" {
				return fmt.Sprintf("%s %s condition %s = %q, want True", resource, name, condition, out)
			}
			return ""
		})
		return ctx
	}
}

// kstatusNotCurrent says why kstatus does not find the object Current, or
// "" when it does.
func kstatusNotCurrent(u *unstructured.Unstructured) string {
	res, err := status.Compute(u)
	if err != nil {
		return fmt.Sprintf("%s %s: kstatus: %v", u.GetKind(), u.GetName(), err)
	}
	if res.Status != status.CurrentStatus {
		return fmt.Sprintf("%s %s: kstatus %s: %s", u.GetKind(), u.GetName(), res.Status, res.Message)
	}
	return ""
}
