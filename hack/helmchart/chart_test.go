package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The chart in the tree, and the kustomizations it is generated from.
const (
	chartDir  = "../../charts/myoperator"
	configDir = "../../config"
	// release is the release name the tests install under; the chart's
	// objects name their namespaces themselves, so it changes nothing.
	release = "myoperator"
)

// helm returns the helm binary HELM names (make test builds it from
// helm.sh/helm/v4 and sets it). Unset (go test by hand) skips; set and not
// runnable fails.
func helm(t *testing.T) string {
	t.Helper()
	path := os.Getenv("HELM")
	if path == "" {
		t.Skip("HELM is not set: make test builds helm and sets it; by hand run make helm, then HELM=$PWD/bin/helm-<version> go test ./hack/helmchart/")
	}
	if _, err := exec.Command(path, "version").Output(); err != nil {
		t.Fatalf("HELM=%s does not run: %v", path, err)
	}
	return path
}

func runHelm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	// Helm's own folders (cache, config, plugins) stay in the test's.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// template renders the chart in the tree with the given --set values,
// without its test hooks (which only helm test creates: TestHelmTestHooks).
func template(t *testing.T, set ...string) map[string]object {
	t.Helper()
	return templateWith(t, []string{"--skip-tests"}, set...)
}

// templateWith renders the chart with more flags of helm template's (say
// --skip-tests) and the --set values.
func templateWith(t *testing.T, flags []string, set ...string) map[string]object {
	t.Helper()
	args := append([]string{"template", release, chartDir, "--namespace", "myoperator-system"}, flags...)
	for _, s := range set {
		args = append(args, "--set", s)
	}
	objs, err := decode([]byte(runHelm(t, args...)))
	if err != nil {
		t.Fatal(err)
	}
	return byKey(t, objs)
}

func byKey(t *testing.T, objs []object) map[string]object {
	t.Helper()
	m := map[string]object{}
	for _, o := range objs {
		if _, dup := m[o.key()]; dup {
			t.Fatalf("%s rendered twice", o.key())
		}
		m[o.key()] = o
	}
	return m
}

// helmOwn are the labels and annotations the chart or Helm adds that
// kubectl kustomize does not: the only differences the comparison allows.
// helm.sh/resource-policy is allowed only as "keep" and only where
// uninstalling would take users' data (keptKinds).
var (
	helmLabels      = []string{"helm.sh/chart", "app.kubernetes.io/managed-by"}
	helmAnnotations = []string{"meta.helm.sh/release-name", "meta.helm.sh/release-namespace"}
)

func kept(o object) bool {
	return o.kind() == "CustomResourceDefinition" || (o.kind() == "Namespace" && o.name() == "guestbook")
}

// stripHelm removes what helmOwn allows from a copy of o, and checks that
// the keep policy is where it belongs.
func stripHelm(t *testing.T, o object) object {
	t.Helper()
	var c object
	b, _ := yaml.Marshal(o)
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	md := c["metadata"].(map[string]any)
	for field, keys := range map[string][]string{"labels": helmLabels, "annotations": append(helmAnnotations, "helm.sh/resource-policy")} {
		m, _ := md[field].(map[string]any)
		if field == "annotations" {
			if got := m["helm.sh/resource-policy"]; kept(c) != (got == "keep") {
				t.Errorf("%s: helm.sh/resource-policy is %v; want keep exactly on the CRDs and the operand namespace", c.key(), got)
			}
		}
		for _, k := range keys {
			delete(m, k)
		}
		if m != nil && len(m) == 0 {
			delete(md, field)
		}
	}
	return c
}

// TestTemplateEqualsKustomize: helm template with the default values
// renders the objects kubectl kustomize config/default renders, and each
// component's value those of config/default with that component, object
// by object. It reads the chart in the tree, so a change under config/
// without make chart fails here (and in make verify).
func TestTemplateEqualsKustomize(t *testing.T) {
	cases := []struct {
		name  string
		comps []string
		set   []string
	}{{name: "config/default"}}
	for _, c := range haveComponents(configDir) {
		cases = append(cases, struct {
			name  string
			comps []string
			set   []string
		}{name: "config/default + config/" + c.dir, comps: []string{filepath.Join(configDir, c.dir)}, set: c.setArgs})
	}
	if len(cases) != 1+len(components) {
		t.Fatalf("%d cases, want the base and %d components", len(cases), len(components))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := render(filepath.Join(configDir, "default"), tc.comps...)
			if err != nil {
				t.Fatal(err)
			}
			wantBy := byKey(t, want)
			got := template(t, tc.set...)
			for k, w := range wantBy {
				g, ok := got[k]
				if !ok {
					t.Errorf("%s: in kubectl kustomize, not in helm template", k)
					continue
				}
				if d := diff(w, stripHelm(t, g)); d != "" {
					t.Errorf("%s differs (- kustomize, + helm template):\n%s", k, d)
				}
			}
			for k := range got {
				if _, ok := wantBy[k]; !ok {
					t.Errorf("%s: in helm template, not in kubectl kustomize", k)
				}
			}
			t.Logf("%d objects compared", len(wantBy))
		})
	}
}

// diff returns the lines of a and b's YAML that differ, "" when none do.
func diff(a, b object) string {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	if string(x) == string(y) {
		return ""
	}
	al, bl := strings.Split(string(x), "\n"), strings.Split(string(y), "\n")
	var out []string
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out = append(out, "+ "+l)
		}
	}
	if len(out) == 0 {
		out = append(out, "(same lines, another order)")
	}
	return strings.Join(out, "\n")
}

// TestLint: helm lint --strict passes with the default values and with
// each component on.
func TestLint(t *testing.T) {
	sets := [][]string{nil}
	for _, c := range haveComponents(configDir) {
		sets = append(sets, c.setArgs)
	}
	for _, set := range sets {
		args := []string{"lint", "--strict", chartDir}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		out := runHelm(t, args...)
		if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
			t.Errorf("helm %s:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestValues: each value a platform team sets reaches the objects it
// names, and nothing else changes with it.
func TestValues(t *testing.T) {
	const deploy = "apps/v1/Deployment/myoperator-system/myoperator-controller-manager"
	podSpec := func(objs map[string]object) map[string]any {
		return objs[deploy]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	}
	field := func(path ...string) func(map[string]object) any {
		return func(objs map[string]object) any {
			var v any = podSpec(objs)
			for _, p := range path {
				m, _ := v.(map[string]any)
				v = m[p]
			}
			return v
		}
	}
	container := func(list, name, f string) func(map[string]object) any {
		return func(objs map[string]object) any {
			for _, c := range podSpec(objs)[list].([]any) {
				if c.(map[string]any)["name"] == name {
					return c.(map[string]any)[f]
				}
			}
			return nil
		}
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := []struct {
		name string
		set  []string
		get  func(map[string]object) any
		want string // YAML of the value
	}{
		{"image by digest (manager)", []string{"image.repository=registry.example/team/myoperator", "image.digest=" + digest},
			container("containers", "manager", "image"), "registry.example/team/myoperator@" + digest},
		{"image by digest (bootstrap)", []string{"image.digest=" + digest},
			container("initContainers", "bootstrap", "image"), "ghcr.io/example/myoperator@" + digest},
		{"image tag", []string{"image.tag=v9.9.9"}, container("containers", "manager", "image"), "ghcr.io/example/myoperator:v9.9.9"},
		{"replicas", []string{"replicaCount=3"}, func(o map[string]object) any { return o[deploy]["spec"].(map[string]any)["replicas"] }, "3"},
		{"resources", []string{"resources.limits.memory=1Gi"}, container("containers", "manager", "resources"),
			"limits:\n  cpu: \"1\"\n  memory: 1Gi\nrequests:\n  cpu: 100m\n  memory: 64Mi"},
		{"bootstrap resources", []string{"bootstrap.resources.requests.cpu=20m"}, container("initContainers", "bootstrap", "resources"),
			"limits:\n  cpu: 100m\n  memory: 64Mi\nrequests:\n  cpu: 20m\n  memory: 32Mi"},
		{"nodeSelector", []string{"nodeSelector.pool=ops"}, field("nodeSelector"), "pool: ops"},
		{"tolerations", []string{"tolerations[0].key=dedicated", "tolerations[0].operator=Exists"}, field("tolerations"), "- key: dedicated\n  operator: Exists"},
		{"affinity", []string{"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=zone",
			"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists"},
			field("affinity"), "nodeAffinity:\n  requiredDuringSchedulingIgnoredDuringExecution:\n    nodeSelectorTerms:\n    - matchExpressions:\n      - key: zone\n        operator: Exists"},
		{"priorityClassName", []string{"priorityClassName=system-cluster-critical"}, field("priorityClassName"), "system-cluster-critical"},
		{"imagePullSecrets", []string{"imagePullSecrets[0].name=pull"}, field("imagePullSecrets"), "- name: pull"},
		{"podAnnotations add to the default one", []string{"podAnnotations.team=ops"},
			func(o map[string]object) any {
				return o[deploy]["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["annotations"]
			}, "kubectl.kubernetes.io/default-container: manager\nteam: ops"},
		{"operand namespace name", []string{"operandNamespace.name=apps"},
			func(o map[string]object) any {
				_, ns := o["v1/Namespace//apps"]
				_, rb := o["rbac.authorization.k8s.io/v1/RoleBinding/apps/myoperator-guestbook-operands"]
				_, old := o["v1/Namespace//guestbook"]
				return fmt.Sprintf("namespace %t, RoleBinding %t, guestbook %t", ns, rb, old)
			}, "namespace true, RoleBinding true, guestbook false"},
		{"operand namespace not created", []string{"operandNamespace.create=false"},
			func(o map[string]object) any {
				_, ns := o["v1/Namespace//guestbook"]
				_, rb := o["rbac.authorization.k8s.io/v1/RoleBinding/guestbook/myoperator-guestbook-operands"]
				return fmt.Sprintf("namespace %t, RoleBinding %t", ns, rb)
			}, "namespace false, RoleBinding true"},
	}
	defaults := template(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := template(t, tc.set...)
			b, _ := yaml.Marshal(tc.get(got))
			if g := strings.TrimSpace(string(b)); g != tc.want {
				t.Errorf("--set %s: got\n%s\nwant\n%s", strings.Join(tc.set, " --set "), g, tc.want)
			}
			before, _ := yaml.Marshal(tc.get(defaults))
			if string(before) == string(b) {
				t.Errorf("the default values render the same: the value changed nothing")
			}
			// Nothing but the Deployment and the operand namespace's
			// objects changes.
			for k, o := range got {
				if d, ok := defaults[k]; ok && k != deploy && diff(d, o) != "" {
					t.Errorf("--set %s also changed %s", strings.Join(tc.set, " "), k)
				}
			}
		})
	}
}

// TestRefusesWhatItCannotExpress: a component (other than certmanager)
// that patches an object of the base would be lost in the chart, so the
// generator refuses it.
func TestRefusesWhatItCannotExpress(t *testing.T) {
	tmp := t.TempDir()
	if out, err := exec.Command("cp", "-r", configDir, tmp).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cfg := filepath.Join(tmp, "config")
	k := filepath.Join(cfg, "network-policy", "kustomization.yaml")
	b, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	patch := "patches:\n- target: {kind: Deployment, name: myoperator-controller-manager}\n  patch: |-\n    - op: replace\n      path: /spec/replicas\n      value: 3\n"
	if err := os.WriteFile(k, append(b, patch...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = build(cfg, filepath.Join(cfg, "default"), "")
	if err == nil || !strings.Contains(err.Error(), "component network-policy changes apps/v1/Deployment/myoperator-system/myoperator-controller-manager") {
		t.Fatalf("build = %v, want the network-policy component's patch refused", err)
	}
	// And without the patch it builds.
	if err := os.WriteFile(k, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := build(cfg, filepath.Join(cfg, "default"), ""); err != nil {
		t.Fatal(err)
	}
}

// TestWatchNamespacesValue: the list in watchNamespaces reaches the
// manager's --watch-namespaces and puts one RoleBinding in each namespace
// it names, and only there; empty (the default), neither exists and the
// ClusterRole keeps the cluster-wide ConfigMap rights.
func TestWatchNamespacesValue(t *testing.T) {
	const deploy = "apps/v1/Deployment/myoperator-system/myoperator-controller-manager"
	binding := func(ns string) string {
		return "rbac.authorization.k8s.io/v1/RoleBinding/" + ns + "/" + servedBinding
	}
	summary := func(objs map[string]object) string {
		var args []string
		pod := objs[deploy]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		for _, c := range containers(pod, "containers") {
			for _, a := range c["args"].([]any) {
				if s := a.(string); strings.HasPrefix(s, watchArg) {
					args = append(args, s)
				}
			}
		}
		var bindings []string
		for k := range objs {
			if strings.HasPrefix(k, "rbac.authorization.k8s.io/v1/RoleBinding/") && strings.HasSuffix(k, "/"+servedBinding) {
				bindings = append(bindings, k)
			}
		}
		slices.Sort(bindings)
		role, _ := yaml.Marshal(objs["rbac.authorization.k8s.io/v1/ClusterRole//myoperator-manager-role"]["rules"])
		return fmt.Sprintf("args %q, bindings %q, cluster-wide configmaps %t", args, bindings, strings.Contains(string(role), "- configmaps\n"))
	}
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{nil, `args [], bindings [], cluster-wide configmaps true`},
		{[]string{"watchNamespaces={apps}"}, fmt.Sprintf(`args ["--watch-namespaces=apps"], bindings [%q], cluster-wide configmaps false`, binding("apps"))},
		{[]string{"watchNamespaces={x,y,z}"}, fmt.Sprintf(`args ["--watch-namespaces=x,y,z"], bindings [%q %q %q], cluster-wide configmaps false`,
			binding("x"), binding("y"), binding("z"))},
	} {
		if got := summary(template(t, tc.set...)); got != tc.want {
			t.Errorf("--set %v: got %s, want %s", tc.set, got, tc.want)
		}
	}
}

// TestSchemaRefuses: values.schema.json makes helm refuse, before it
// renders anything, a value the chart does not have, one outside its
// closed set or bounds, and options that cannot work together, each
// naming the value; helm lint --strict refuses them too.
func TestSchemaRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		set  []string
		// want is in helm's error.
		want string
	}{
		{"a certificates mode that is neither", []string{"certificates.mode=selfsigned"}, "at '/certificates/mode': value must be one of 'self', 'cert-manager'"},
		{"a misspelt value", []string{"certificate.mode=self"}, "additional properties 'certificate' not allowed"},
		{"a misspelt component switch", []string{"networkPolicy.enable=true"}, "at '/networkPolicy': additional properties 'enable' not allowed"},
		{"no replica", []string{"replicaCount=0"}, "at '/replicaCount': minimum: got 0, want 1"},
		{"a switch given a string", []string{"prometheus.enabled=yes"}, "at '/prometheus/enabled': got string, want boolean"},
		{"a digest without its algorithm", []string{"image.digest=0123abcd"}, "at '/image/digest': '0123abcd' does not match pattern"},
		{"a served namespace that is no name", []string{"watchNamespaces={Team_A}"}, "at '/watchNamespaces/0': 'Team_A' does not match pattern"},
		{"the leader fence with shared Drinks", []string{"shardDrinks.enabled=true", "replicaCount=3", "leaderFence.enabled=true"}, "at '/leaderFence/enabled': value must be false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, verb := range [][]string{{"template", release}, {"lint", "--strict"}} {
				args := append(append([]string{}, verb...), chartDir)
				for _, s := range c.set {
					args = append(args, "--set", s)
				}
				cmd := exec.Command(helm(t), args...)
				home := t.TempDir()
				cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
				out, err := cmd.CombinedOutput()
				if err == nil || !strings.Contains(string(out), c.want) {
					t.Errorf("helm %s: %v, want refused with %q:\n%s", strings.Join(args, " "), err, c.want, out)
				}
			}
		})
	}
}

// TestEveryValueDocumented: the chart's README and schema describe every
// value values.yaml has, and nothing it does not (hack/helmchart's
// valueDocs); the repository's chart has every component, so each of
// valueDocs is among them.
func TestEveryValueDocumented(t *testing.T) {
	values, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	have, err := valuePaths(values)
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, v := range valueDocs {
		documented = append(documented, v.path)
	}
	slices.Sort(documented)
	if !slices.Equal(have, documented) {
		t.Errorf("values.yaml has %v,\nvalueDocs describes %v", have, documented)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range have {
		if !strings.Contains(string(readme), "| `"+p+"` |") {
			t.Errorf("README.md has no row for %s", p)
		}
	}
}

// TestHelmTestHooks: helm template without --skip-tests adds exactly the
// objects of config/helm-test, each a test hook deleted when the test
// passes; the pod runs the plugin from the image the Deployment runs (by
// digest when the values give one), placed as the manager's pods are; and
// its ServiceAccount's rights only read.
func TestHelmTestHooks(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	all := templateWith(t, nil, "image.digest="+digest, "nodeSelector.pool=ops")
	without := template(t, "image.digest="+digest, "nodeSelector.pool=ops")
	want, err := render(filepath.Join(configDir, "helm-test"))
	if err != nil {
		t.Fatal(err)
	}
	var wantKeys []string
	for _, o := range want {
		wantKeys = append(wantKeys, o.key())
	}
	var hooks []string
	for k := range all {
		if _, ok := without[k]; !ok {
			hooks = append(hooks, k)
		}
	}
	slices.Sort(hooks)
	slices.Sort(wantKeys)
	if !slices.Equal(hooks, wantKeys) {
		t.Fatalf("test hooks %v, want config/helm-test's %v", hooks, wantKeys)
	}
	var deployImage string
	for _, o := range without {
		if o.kind() == "Deployment" {
			deployImage = containers(o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any), "containers")[0]["image"].(string)
		}
	}
	for _, k := range hooks {
		o := all[k]
		ann, _ := o["metadata"].(map[string]any)["annotations"].(map[string]any)
		if ann["helm.sh/hook"] != "test" || ann["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
			t.Errorf("%s: annotations %v, want a test hook deleted when it passes", k, ann)
		}
		switch o.kind() {
		case "Pod":
			spec := o["spec"].(map[string]any)
			c := containers(spec, "containers")[0]
			if c["image"] != deployImage || !strings.HasSuffix(deployImage, "@"+digest) {
				t.Errorf("test pod image %v, want the Deployment's %s", c["image"], deployImage)
			}
			if sel, _ := spec["nodeSelector"].(map[string]any); sel["pool"] != "ops" {
				t.Errorf("test pod nodeSelector %v, want the values' pool: ops", spec["nodeSelector"])
			}
			if spec["serviceAccountName"] != "myoperator-helm-test" || ann["helm.sh/hook-weight"] != "0" {
				t.Errorf("test pod: serviceAccountName %v, hook weight %v; want myoperator-helm-test, 0 (after its rights)", spec["serviceAccountName"], ann["helm.sh/hook-weight"])
			}
		case "ClusterRole", "Role":
			rules, _ := o["rules"].([]any)
			for _, r := range rules {
				for _, v := range r.(map[string]any)["verbs"].([]any) {
					if v != "get" && v != "list" && v != "watch" {
						t.Errorf("%s: verb %v; the test's ServiceAccount only reads", k, v)
					}
				}
			}
		}
	}
}
