//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/test/framework/shardaudit"
)

// runnersPods is a kwok selector's query that is true for the pods the
// suite's pod runner runs, whose readiness and containers' states it
// reports as a kubelet does: the operator's, and the Guestbook
// pulledGuestbook's (stalled_test.go).
var runnersPods = fmt.Sprintf(`(.metadata.namespace == %q) or (.metadata.namespace == "guestbook" and .metadata.labels["app.kubernetes.io/instance"] == %q)`,
	operatorNS, pulledGuestbook)

// writeKwokConfig writes the kwokctl configuration of the suite's cluster
// into dir and returns its path: the API server's aggregator routing, and
// the stages kwokctl uses by default, read
// from the kwok module the project built kwokctl from (node-initialize,
// node-heartbeat-with-lease and the fast pod stages), with one change.
// kwok marks a pod Ready (its pod-ready stage) as soon as it is scheduled,
// whether or not anything answers; for the operator's pods, whose
// containers the suite's pod runner really runs, that would let a
// Deployment rollout take a pod that serves nothing yet as available and
// stop an old one that does. So for the runner's pods (runnersPods) the
// stage marks the pod Running but not Ready, and the pod runner writes
// Ready and the containers' states from what really runs, as a kubelet
// does. Likewise kwok removes a deleted pod at once, which would revoke
// the ServiceAccount token bound to it while its manager still stops (and
// so cannot release its Lease): the runner removes its deleted pods once
// their containers have stopped. Every other pod (the other Guestbooks')
// keeps kwok's stages as they are. (Given any stage, kwokctl adds none of
// its defaults, hence all of them here.)
func writeKwokConfig(dir, kwokctl string) (string, error) {
	stagesDir, err := kwokStagesDir(kwokctl)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	found := 0
	for _, sub := range []string{"node/fast", "node/heartbeat-with-lease", "pod/fast"} {
		kust, err := os.ReadFile(filepath.Join(stagesDir, sub, "kustomization.yaml"))
		if err != nil {
			return "", err
		}
		var k struct {
			Resources []string `json:"resources"`
		}
		if err := yaml.Unmarshal(kust, &k); err != nil {
			return "", err
		}
		for _, f := range k.Resources {
			data, err := os.ReadFile(filepath.Join(stagesDir, sub, f))
			if err != nil {
				return "", err
			}
			stage := map[string]any{}
			if err := yaml.Unmarshal(data, &stage); err != nil {
				return "", fmt.Errorf("%s/%s: %w", sub, f, err)
			}
			stages := []map[string]any{stage}
			switch name, _ := stage["metadata"].(map[string]any)["name"].(string); {
			case sub == "pod/fast" && name == "pod-ready":
				found++
				if stages, err = splitPodReady(stage); err != nil {
					return "", err
				}
			case sub == "pod/fast" && name == "pod-delete":
				// The runner removes its pods once their containers
				// stopped (Runner.finishDeletion), as a kubelet does.
				found++
				if err := addRunnerRequirement(stage, "NotIn"); err != nil {
					return "", err
				}
			}
			for _, s := range stages {
				b, err := yaml.Marshal(s)
				if err != nil {
					return "", err
				}
				out.WriteString("---\n")
				out.Write(b)
			}
		}
	}
	if found != 2 {
		return "", fmt.Errorf("kwok's pod stages in %s lack pod-ready or pod-delete", stagesDir)
	}
	// The API server's aggregator routing (see the file).
	routing, err := os.ReadFile(filepath.Join(root, "hack", "kwok", "aggregator-routing.yaml"))
	if err != nil {
		return "", err
	}
	// The garbage collector's log names every item it processes
	// (verbosity 5 in its file only): what uninstall_test.go's gcMissed
	// looks for when a Drink's ConfigMap outlives its CRD.
	conf := map[string]any{}
	if err := yaml.Unmarshal(routing, &conf); err != nil {
		return "", err
	}
	patches, _ := conf["componentsPatches"].([]any)
	// The API server sends a replica only its share of the Drinks
	// (sharing_test.go), as a cluster with the alpha feature would.
	if err := addArg(patches, "kube-apiserver", "feature-gates", "ShardedListAndWatch=true"); err != nil {
		return "", err
	}
	if err := addArg(patches, "kube-controller-manager", "vmodule", "garbagecollector=5"); err != nil {
		return "", err
	}
	// The audit log of the writes the sharing feature replays.
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(policy, []byte(shardaudit.Policy(operatorNS)), 0o644); err != nil {
		return "", err
	}
	options, _ := conf["options"].(map[string]any)
	if options == nil {
		options = map[string]any{}
	}
	options["kubeAuditPolicy"] = policy
	conf["options"] = options
	if routing, err = yaml.Marshal(conf); err != nil {
		return "", err
	}
	out.WriteString("---\n")
	out.Write(routing)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kwokctl-stages.yaml")
	return path, os.WriteFile(path, out.Bytes(), 0o644)
}

// addArg adds an argument to a component's patch of
// hack/kwok/aggregator-routing.yaml.
func addArg(patches []any, component, key, value string) error {
	for _, p := range patches {
		m, _ := p.(map[string]any)
		if m["name"] != component {
			continue
		}
		args, _ := m["extraArgs"].([]any)
		m["extraArgs"] = append(args, map[string]any{"key": key, "value": value})
		return nil
	}
	return fmt.Errorf("hack/kwok/aggregator-routing.yaml has no %s patch", component)
}

// addRunnerRequirement narrows a stage to the pod runner's pods
// (runnersPods; op In) or to the others (NotIn).
func addRunnerRequirement(s map[string]any, op string) error {
	spec, _ := s["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	exprs, ok := sel["matchExpressions"].([]any)
	if !ok {
		return fmt.Errorf("kwok's stage %v has no spec.selector.matchExpressions", s["metadata"])
	}
	sel["matchExpressions"] = append(exprs, map[string]any{"key": runnersPods, "operator": op, "values": []any{"true"}})
	return nil
}

// readyTrue matches the Ready and ContainersReady conditions that kwok's
// pod-ready template sets True.
var readyTrue = regexp.MustCompile(`status: "True"(\s+)type: (Ready|ContainersReady)\n`)

// readinessGatesTrue is the part of kwok's pod-ready template that sets
// the condition of every readiness gate True.
var readinessGatesTrue = regexp.MustCompile(`(?s)\{\{ range \.spec\.readinessGates \}\}.*?\{\{ end \}\}\n`)

// splitPodReady turns kwok's pod-ready stage into two: the stage as it is
// for pods the runner does not run, and for its pods the same stage
// that leaves Ready, ContainersReady and the containers' ready flags
// False and sets no readiness gate's condition.
func splitPodReady(stage map[string]any) ([]map[string]any, error) {
	data, err := yaml.Marshal(stage)
	if err != nil {
		return nil, err
	}
	probed := map[string]any{}
	if err := yaml.Unmarshal(data, &probed); err != nil {
		return nil, err
	}
	if err := addRunnerRequirement(stage, "NotIn"); err != nil {
		return nil, err
	}
	if err := addRunnerRequirement(probed, "In"); err != nil {
		return nil, err
	}
	probed["metadata"] = map[string]any{"name": "pod-ready-probed-by-runner"}
	spec := probed["spec"].(map[string]any)
	next, _ := spec["next"].(map[string]any)
	tmpl, _ := next["statusTemplate"].(string)
	if n := len(readyTrue.FindAllString(tmpl, -1)); n != 2 {
		return nil, fmt.Errorf("kwok's pod-ready template sets %d of Ready and ContainersReady True, want 2: review writeKwokConfig", n)
	}
	tmpl = readyTrue.ReplaceAllString(tmpl, `status: "False"${1}type: ${2}`+"\n")
	// The containers' statuses come first, then the initContainers'; only
	// the containers' ready flag is the probe's.
	c, r, i := strings.Index(tmpl, "containerStatuses:"), strings.Index(tmpl, "ready: true"), strings.Index(tmpl, "initContainerStatuses:")
	if c < 0 || r < c || (i >= 0 && r > i) {
		return nil, fmt.Errorf("kwok's pod-ready template has no containers' ready flag where expected: review writeKwokConfig")
	}
	tmpl = tmpl[:r] + "ready: false" + tmpl[r+len("ready: true"):]
	// kwok also sets every readiness gate's condition True; a kubelet sets
	// none (they are other controllers' to set), and the runner counts them
	// in Ready: a pod held by a gate nobody sets stays not Ready.
	if n := len(readinessGatesTrue.FindAllStringIndex(tmpl, -1)); n != 1 {
		return nil, fmt.Errorf("kwok's pod-ready template sets the readiness gates' conditions %d times, want 1: review writeKwokConfig", n)
	}
	next["statusTemplate"] = readinessGatesTrue.ReplaceAllString(tmpl, "")
	return []map[string]any{stage, probed}, nil
}

// kwokStagesDir is kwok's stages in the module cache, of the
// version kwokctl says it is (hack/build-k8s.sh installed it from that
// module, so the module is there).
func kwokStagesDir(kwokctl string) (string, error) {
	out, err := exec.Command(kwokctl, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", kwokctl, err)
	}
	f := strings.Fields(string(out))
	i := slices.Index(f, "version")
	if i < 0 || i+1 >= len(f) {
		return "", fmt.Errorf("%s --version printed %q", kwokctl, out)
	}
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(cache)), "sigs.k8s.io", "kwok@"+f[i+1], "kustomize", "stage")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("kwok's stages: %w (make k8s-binaries installs kwok from its module)", err)
	}
	return dir, nil
}
