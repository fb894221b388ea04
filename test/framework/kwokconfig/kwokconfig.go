package kwokconfig

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
)

// ServicePath is how the cluster's API server reaches a webhook Service.
type ServicePath string

const (
	// Aggregator is the path where the API server calls the Service's
	// ready endpoints itself (--enable-aggregator-routing), which needs
	// nothing on the nodes.
	Aggregator ServicePath = "aggregator"
	// ClusterIP is the path where the API server calls the Service's
	// ClusterIP, as in a cluster without aggregator routing; something
	// must route it, as kube-proxy does (test/kubeproxy on kwok nodes).
	ClusterIP ServicePath = "clusterip"
)

// ParseServicePath checks a ServicePath given as text.
func ParseServicePath(s string) (ServicePath, error) {
	switch p := ServicePath(s); p {
	case Aggregator, ClusterIP:
		return p, nil
	}
	return "", fmt.Errorf("service path %q: want %q or %q", s, Aggregator, ClusterIP)
}

// Arg is one more command-line argument of a component.
type Arg struct {
	Component, Key, Value string
}

// Options say what the configuration holds.
type Options struct {
	// Base is hack/kwok/aggregator-routing.yaml: the components' settings.
	Base string
	// Kwokctl is the kwokctl binary; its version names the kwok module
	// whose default stages are used.
	Kwokctl string
	// RunnerPods is a kwok selector's query (jq) that is true for the pods
	// a pod runner runs. Empty: kwok's default stages, unchanged.
	RunnerPods string
	// ServicePath is how the API server reaches Services (Aggregator when
	// empty).
	ServicePath ServicePath
	// Args are added to the components' command lines.
	Args []Arg
	// AuditPolicy, when set, is the API server's audit policy file.
	AuditPolicy string
}

// Render returns the kwokctl configuration.
//
// kwok marks a pod Ready (its pod-ready stage) as soon as it is
// scheduled, whether or not anything answers; for the pods a runner
// really runs, that would put a pod that serves nothing yet among a
// Service's ready endpoints, and let a Deployment rollout take it as
// available and stop an old one that does serve. So for the runner's
// pods the stage marks the pod Running but not Ready, and the runner
// writes Ready and the containers' states from what really runs, as a
// kubelet does. Likewise kwok removes a deleted pod at once (pod-delete),
// which would revoke the ServiceAccount token bound to it while its
// containers still stop (a manager could not release its Lease), and
// would take the pod off the endpoints before its preStop hook: the
// runner removes its deleted pods once their containers have stopped.
// Every other pod keeps kwok's stages as they are. (Given any stage,
// kwokctl adds none of its defaults, hence all of them here.)
func Render(o Options) ([]byte, error) {
	var out bytes.Buffer
	if o.RunnerPods != "" {
		stages, err := stages(o.Kwokctl, o.RunnerPods)
		if err != nil {
			return nil, err
		}
		out.Write(stages)
	}
	base, err := os.ReadFile(o.Base)
	if err != nil {
		return nil, err
	}
	conf := map[string]any{}
	if err := yaml.Unmarshal(base, &conf); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Base, err)
	}
	patches, _ := conf["componentsPatches"].([]any)
	routing := "true"
	switch o.ServicePath {
	case Aggregator, "":
	case ClusterIP:
		routing = "false"
	default:
		return nil, fmt.Errorf("service path %q: want %q or %q", o.ServicePath, Aggregator, ClusterIP)
	}
	if err := setArg(patches, "kube-apiserver", "enable-aggregator-routing", routing); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Base, err)
	}
	for _, a := range o.Args {
		if err := addArg(patches, a); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Base, err)
		}
	}
	if o.AuditPolicy != "" {
		options, _ := conf["options"].(map[string]any)
		if options == nil {
			options = map[string]any{}
		}
		options["kubeAuditPolicy"] = o.AuditPolicy
		conf["options"] = options
	}
	b, err := yaml.Marshal(conf)
	if err != nil {
		return nil, err
	}
	out.WriteString("---\n")
	out.Write(b)
	return out.Bytes(), nil
}

// Write renders the configuration into path.
func Write(path string, o Options) error {
	data, err := Render(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// stages are kwok's default node and pod stages, with the runner's pods'
// readiness and removal left to the runner (see Render).
func stages(kwokctl, runnerPods string) ([]byte, error) {
	stagesDir, err := stagesDir(kwokctl)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	found := 0
	for _, sub := range []string{"node/fast", "node/heartbeat-with-lease", "pod/fast"} {
		kust, err := os.ReadFile(filepath.Join(stagesDir, sub, "kustomization.yaml"))
		if err != nil {
			return nil, err
		}
		var k struct {
			Resources []string `json:"resources"`
		}
		if err := yaml.Unmarshal(kust, &k); err != nil {
			return nil, err
		}
		for _, f := range k.Resources {
			data, err := os.ReadFile(filepath.Join(stagesDir, sub, f))
			if err != nil {
				return nil, err
			}
			stage := map[string]any{}
			if err := yaml.Unmarshal(data, &stage); err != nil {
				return nil, fmt.Errorf("%s/%s: %w", sub, f, err)
			}
			stages := []map[string]any{stage}
			switch name, _ := stage["metadata"].(map[string]any)["name"].(string); {
			case sub == "pod/fast" && name == "pod-ready":
				found++
				if stages, err = splitPodReady(stage, runnerPods); err != nil {
					return nil, err
				}
			case sub == "pod/fast" && name == "pod-delete":
				// The runner removes its pods once their containers
				// stopped (podrunner's finishDeletion), as a kubelet does.
				found++
				if err := addRunnerRequirement(stage, runnerPods, "NotIn"); err != nil {
					return nil, err
				}
			}
			for _, s := range stages {
				b, err := yaml.Marshal(s)
				if err != nil {
					return nil, err
				}
				out.WriteString("---\n")
				out.Write(b)
			}
		}
	}
	if found != 2 {
		return nil, fmt.Errorf("kwok's pod stages in %s lack pod-ready or pod-delete", stagesDir)
	}
	return out.Bytes(), nil
}

// setArg sets an argument a component's patch already has.
func setArg(patches []any, component, key, value string) error {
	for _, p := range patches {
		m, _ := p.(map[string]any)
		if m["name"] != component {
			continue
		}
		args, _ := m["extraArgs"].([]any)
		for _, a := range args {
			if am, _ := a.(map[string]any); am["key"] == key {
				am["value"] = value
				return nil
			}
		}
		return fmt.Errorf("the %s patch has no argument %s", component, key)
	}
	return fmt.Errorf("no %s patch", component)
}

// addArg adds an argument to a component's patch.
func addArg(patches []any, a Arg) error {
	for _, p := range patches {
		m, _ := p.(map[string]any)
		if m["name"] != a.Component {
			continue
		}
		args, _ := m["extraArgs"].([]any)
		m["extraArgs"] = append(args, map[string]any{"key": a.Key, "value": a.Value})
		return nil
	}
	return fmt.Errorf("no %s patch", a.Component)
}

// addRunnerRequirement narrows a stage to the pod runner's pods (op In)
// or to the others (NotIn). kwok matches a query's boolean result as the
// value "true".
func addRunnerRequirement(s map[string]any, runnerPods, op string) error {
	spec, _ := s["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	exprs, ok := sel["matchExpressions"].([]any)
	if !ok {
		return fmt.Errorf("kwok's stage %v has no spec.selector.matchExpressions", s["metadata"])
	}
	sel["matchExpressions"] = append(exprs, map[string]any{"key": runnerPods, "operator": op, "values": []any{"true"}})
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
func splitPodReady(stage map[string]any, runnerPods string) ([]map[string]any, error) {
	data, err := yaml.Marshal(stage)
	if err != nil {
		return nil, err
	}
	probed := map[string]any{}
	if err := yaml.Unmarshal(data, &probed); err != nil {
		return nil, err
	}
	if err := addRunnerRequirement(stage, runnerPods, "NotIn"); err != nil {
		return nil, err
	}
	if err := addRunnerRequirement(probed, runnerPods, "In"); err != nil {
		return nil, err
	}
	probed["metadata"] = map[string]any{"name": "pod-ready-probed-by-runner"}
	spec := probed["spec"].(map[string]any)
	next, _ := spec["next"].(map[string]any)
	tmpl, _ := next["statusTemplate"].(string)
	if n := len(readyTrue.FindAllString(tmpl, -1)); n != 2 {
		return nil, fmt.Errorf("kwok's pod-ready template sets %d of Ready and ContainersReady True, want 2: review test/framework/kwokconfig", n)
	}
	tmpl = readyTrue.ReplaceAllString(tmpl, `status: "False"${1}type: ${2}`+"\n")
	// The containers' statuses come first, then the initContainers'; only
	// the containers' ready flag is the probe's.
	c, r, i := strings.Index(tmpl, "containerStatuses:"), strings.Index(tmpl, "ready: true"), strings.Index(tmpl, "initContainerStatuses:")
	if c < 0 || r < c || (i >= 0 && r > i) {
		return nil, fmt.Errorf("kwok's pod-ready template has no containers' ready flag where expected: review test/framework/kwokconfig")
	}
	tmpl = tmpl[:r] + "ready: false" + tmpl[r+len("ready: true"):]
	// kwok also sets every readiness gate's condition True; a kubelet sets
	// none (they are other controllers' to set), and the runner counts them
	// in Ready: a pod held by a gate nobody sets stays not Ready.
	if n := len(readinessGatesTrue.FindAllStringIndex(tmpl, -1)); n != 1 {
		return nil, fmt.Errorf("kwok's pod-ready template sets the readiness gates' conditions %d times, want 1: review test/framework/kwokconfig", n)
	}
	next["statusTemplate"] = readinessGatesTrue.ReplaceAllString(tmpl, "")
	return []map[string]any{stage, probed}, nil
}

// stagesDir is kwok's stages in the module cache, of the version kwokctl
// says it is (hack/build-k8s.sh installed it from that module, so the
// module is there).
func stagesDir(kwokctl string) (string, error) {
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
