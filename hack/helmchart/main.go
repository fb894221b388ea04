// Command helmchart writes the Helm chart charts/myoperator from the
// kustomize manifests under config/, so that the chart and the manifests
// can never disagree: make chart runs it, make verify fails when the chart
// in the tree differs from what it writes, and the chart's tests
// (chart_test.go) compare helm template with kubectl kustomize object by
// object for every optional component.
//
// How a kustomization becomes a chart:
//   - config/default (or -base) rendered by kubectl kustomize is the chart
//     with its default values; each object is one template file.
//   - Each optional component (config/certmanager, network-policy,
//     prometheus, leader-fence, namespace-scope) is rendered as an overlay
//     of the base. Objects only the overlay has are wrapped in the value
//     that turns the component on. The cert-manager component also changes
//     objects (an argument, annotations, the Secret it drops): those get
//     both forms, chosen by certificates.mode. The namespace-scope
//     component changes the ClusterRole (both forms, chosen by
//     watchNamespaces) and adds the manager's --watch-namespaces, which
//     the Deployment's template renders from the list; its RoleBinding per
//     served namespace becomes one template that ranges over the list. The
//     sharding component adds the manager's --shard-drinks, rendered from
//     shardDrinks.enabled, and sets the replicas, which replicaCount sets
//     in the chart. Any
//     other component that changes an object of the base is refused, since
//     the chart could not express it.
//   - A few fields become values (image, replicas, resources, placement,
//     pod annotations, the operand namespace); their defaults in
//     values.yaml are what config/ has, so the default values render
//     exactly config/default.
//   - config/helm-test becomes the chart's test hooks (templates/tests/):
//     helm test runs kubectl myoperator doctor from the manager's image, as
//     a ServiceAccount that only reads.
//   - The CRDs and the operand namespace carry helm.sh/resource-policy:
//     keep, so helm uninstall leaves them and every custom resource. They
//     are templates, not files in crds/, because Helm never upgrades what
//     sits in crds/.
//
// Usage:
//
//	go run ./hack/helmchart [-config config] [-base config/default] [-out charts/myoperator] [-version X.Y.Z]
//
// -base may be any kustomization built on config/default, such as make
// dist's overlay that names the release's images by digest.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "helmchart:", err)
		os.Exit(1)
	}
}

func run() error {
	configDir := flag.String("config", "config", "The folder of the kustomizations (its components are the chart's optional parts).")
	base := flag.String("base", "", "The kustomization the default values render (default: <config>/default).")
	out := flag.String("out", "charts/myoperator", "The chart's folder; it is replaced.")
	version := flag.String("version", "", "The chart's version (default: the manager image's tag, without the v).")
	flag.Parse()
	if *base == "" {
		*base = filepath.Join(*configDir, "default")
	}
	c, err := build(*configDir, *base, *version)
	if err != nil {
		return err
	}
	return c.write(*out)
}

// A component is an optional part of config/ that a value turns on.
type component struct {
	dir   string // under config/
	value string // the value that turns it on
	// setArgs are helm template's --set arguments that turn it on.
	setArgs []string
}

// components are the optional parts, in the order values.yaml lists them.
// certmanager is the only one that changes objects of the base; the others
// only add objects.
var components = []component{
	{dir: "certmanager", value: `eq .Values.certificates.mode "cert-manager"`, setArgs: []string{"certificates.mode=cert-manager"}},
	{dir: "network-policy", value: ".Values.networkPolicy.enabled", setArgs: []string{"networkPolicy.enabled=true"}},
	{dir: "prometheus", value: ".Values.prometheus.enabled", setArgs: []string{"prometheus.enabled=true"}},
	{dir: "leader-fence", value: ".Values.leaderFence.enabled", setArgs: []string{"leaderFence.enabled=true"}},
	{dir: "namespace-scope", value: ".Values.watchNamespaces", setArgs: []string{"watchNamespaces={team-a,team-b}"}},
	{dir: "sharding", value: ".Values.shardDrinks.enabled", setArgs: []string{"shardDrinks.enabled=true", "replicaCount=3"}},
}

// The namespace-scope component's parts that become templates of a list.
const (
	// servedBinding is the RoleBinding in each served namespace.
	servedBinding = "myoperator-served-namespace"
	// watchArg is the manager's flag that names them.
	watchArg = "--watch-namespaces="
)

// shardArg is the sharding component's flag of the manager.
const shardArg = "--shard-drinks"

// withoutWatchArg returns a copy of a Deployment without the manager's
// --watch-namespaces argument.
func withoutWatchArg(o object) object {
	return withoutArg(o, func(s string) bool { return strings.HasPrefix(s, watchArg) })
}

// withoutShardArg returns a copy of a Deployment without --shard-drinks
// and with replicas as base has them (replicaCount sets them).
func withoutShardArg(o, base object) object {
	c := withoutArg(o, func(s string) bool { return s == shardArg })
	c["spec"].(map[string]any)["replicas"] = base["spec"].(map[string]any)["replicas"]
	return c
}

// withoutArg returns a copy of a Deployment without the containers'
// arguments drop matches.
func withoutArg(o object, drop func(string) bool) object {
	var c object
	b, _ := yaml.Marshal(o)
	_ = yaml.Unmarshal(b, &c)
	pod := c["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	for _, ctr := range containers(pod, "containers") {
		args, _ := ctr["args"].([]any)
		ctr["args"] = slices.DeleteFunc(args, func(a any) bool { s, _ := a.(string); return drop(s) })
	}
	return c
}

// haveComponents returns the optional parts the chart has for a config folder
// (a previous release's may lack some): each with the --set arguments that
// turn it on. The chart's tests render each this way.
func haveComponents(configDir string) []component {
	var have []component
	for _, c := range components {
		if _, err := os.Stat(filepath.Join(configDir, c.dir, "kustomization.yaml")); err == nil {
			have = append(have, c)
		}
	}
	return have
}

// object is one rendered Kubernetes object.
type object map[string]any

func (o object) key() string {
	md, _ := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	return fmt.Sprintf("%s/%s/%s/%s", o["apiVersion"], o["kind"], ns, md["name"])
}

func (o object) kind() string { s, _ := o["kind"].(string); return s }

func (o object) name() string {
	md, _ := o["metadata"].(map[string]any)
	s, _ := md["name"].(string)
	return s
}

// render runs kubectl kustomize on the kustomization dir with the given
// components added (none: dir itself), through a throw-away overlay that
// reaches both through a symbolic link, since kustomize refuses absolute
// paths.
func render(dir string, comps ...string) ([]object, error) {
	tmp, err := os.MkdirTemp("", "helmchart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	d, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.Symlink(d, filepath.Join(tmp, "base")); err != nil {
		return nil, err
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- base\n"
	if len(comps) > 0 {
		k += "components:\n"
	}
	for i, c := range comps {
		a, err := filepath.Abs(c)
		if err != nil {
			return nil, err
		}
		link := fmt.Sprintf("component%d", i)
		if err := os.Symlink(a, filepath.Join(tmp, link)); err != nil {
			return nil, err
		}
		k += "- " + link + "\n"
	}
	if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("kubectl", "kustomize", tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s %v: %w: %s", dir, comps, err, stderr.String())
	}
	return decode(b)
}

// decode splits a multi-document YAML stream into objects.
func decode(b []byte) ([]object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var objs []object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			return nil, err
		}
		if len(o) > 0 {
			objs = append(objs, o)
		}
	}
}

// chart is what write puts on disk.
type chart struct {
	version, appVersion string
	values              []byte
	// schema is values.schema.json, which helm checks the values against.
	schema []byte
	// readme is README.md: each value, its default and what it does.
	readme []byte
	files  map[string][]byte // templates/<name> -> text
}

// defaults are the values config/ gives, read from the rendered base.
type defaults struct {
	repository, tag, digest string
	replicas                any
	resources, bootstrapRes any
	placement               map[string]any // nodeSelector, tolerations, ...
	podAnnotations          map[string]any
	operandNamespace        string
	comps                   []component
	// scoped: the chart has the namespace-scope component, whose flag the
	// Deployment's template renders from watchNamespaces.
	scoped bool
	// sharded: the chart has the sharding component, whose flag the
	// Deployment's template renders from shardDrinks.enabled.
	sharded bool
}

// placementFields are the pod spec fields a value sets as a whole.
var placementFields = []string{"nodeSelector", "tolerations", "affinity", "priorityClassName", "imagePullSecrets"}

func build(configDir, base, version string) (*chart, error) {
	objs, err := render(base)
	if err != nil {
		return nil, err
	}
	nsObjs, err := render(filepath.Join(configDir, "operand-namespace"))
	if err != nil {
		return nil, err
	}
	if len(nsObjs) != 1 || nsObjs[0].kind() != "Namespace" {
		return nil, fmt.Errorf("%s/operand-namespace: want one Namespace, got %d objects", configDir, len(nsObjs))
	}
	d := defaults{operandNamespace: nsObjs[0].name(), placement: map[string]any{}, comps: haveComponents(configDir)}
	for _, c := range d.comps {
		d.scoped = d.scoped || c.dir == "namespace-scope"
		d.sharded = d.sharded || c.dir == "sharding"
	}

	// Each object's forms: in the base, and under each component.
	type form struct {
		cond string // a template condition, "" for always
		obj  object
		// served: the object is rendered once per served namespace.
		served bool
	}
	baseKeys := map[string]object{}
	var order []string
	for _, o := range objs {
		baseKeys[o.key()] = o
		order = append(order, o.key())
	}
	forms := map[string][]form{}
	for _, k := range order {
		forms[k] = []form{{obj: baseKeys[k]}}
	}
	for _, c := range d.comps {
		with, err := render(base, filepath.Join(configDir, c.dir))
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		servedKey := ""
		for _, o := range with {
			k := o.key()
			seen[k] = true
			b, inBase := baseKeys[k]
			switch {
			case c.dir == "namespace-scope" && !inBase && o.kind() == "RoleBinding" && o.name() == servedBinding:
				// One template for every served namespace: the first
				// binding stands for all, which differ only in it.
				if servedKey == "" {
					servedKey = k
					forms[k] = []form{{obj: o, served: true}}
					order = append(order, k)
				}
			case c.dir == "namespace-scope" && inBase && o.kind() == "Deployment":
				if !equal(b, withoutWatchArg(o)) {
					return nil, fmt.Errorf("component %s changes %s beyond %s, which the chart cannot express", c.dir, k, watchArg)
				}
			case c.dir == "sharding" && inBase && o.kind() == "Deployment":
				if !equal(b, withoutShardArg(o, b)) {
					return nil, fmt.Errorf("component %s changes %s beyond %s and the replicas, which the chart cannot express", c.dir, k, shardArg)
				}
			case !inBase:
				forms[k] = []form{{cond: c.value, obj: o}}
				order = append(order, k)
			case !equal(b, o):
				if c.dir != "certmanager" && c.dir != "namespace-scope" {
					return nil, fmt.Errorf("component %s changes %s, which the chart cannot express (only certmanager and namespace-scope may change objects)", c.dir, k)
				}
				if len(forms[k]) > 1 {
					return nil, fmt.Errorf("component %s changes %s, which another component changes too: the chart cannot express both", c.dir, k)
				}
				forms[k] = []form{{cond: c.value, obj: o}, {cond: "not (" + c.value + ")", obj: b}}
			}
		}
		for k := range baseKeys {
			if !seen[k] {
				if c.dir != "certmanager" {
					return nil, fmt.Errorf("component %s removes %s, which the chart cannot express", c.dir, k)
				}
				forms[k] = []form{{cond: "not (" + c.value + ")", obj: baseKeys[k]}}
			}
		}
	}

	// The manager's image, as config/ names it, gives the image values.
	for _, o := range objs {
		if o.kind() == "Deployment" {
			d.readDeployment(o)
		}
	}
	if d.repository == "" {
		return nil, errors.New("the base has no Deployment with a manager container")
	}
	if version == "" {
		version = strings.TrimPrefix(d.tag, "v")
	}
	if version == "" {
		return nil, errors.New("-version is needed when the manager image has no tag")
	}
	c := &chart{version: strings.TrimPrefix(version, "v"), appVersion: "v" + strings.TrimPrefix(version, "v"), files: map[string][]byte{}}
	if d.tag != "" {
		c.appVersion = d.tag
	}

	names := map[string]bool{}
	for _, k := range order {
		fs := forms[k]
		var text strings.Builder
		for i, f := range fs {
			body, err := d.template(f.obj)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if f.served {
				// Inside range, . is the namespace: the labels take the
				// root context.
				body = strings.ReplaceAll(body, `include "myoperator.labels" .`, `include "myoperator.labels" $`)
				text.WriteString("{{- range .Values.watchNamespaces }}\n---\n" + body + "{{- end }}\n")
				continue
			}
			switch {
			case f.cond == "":
			case i == 0:
				text.WriteString("{{- if " + f.cond + " }}\n")
			default:
				text.WriteString("{{- else }}\n")
			}
			text.WriteString(body)
			if f.cond != "" && i == len(fs)-1 {
				text.WriteString("{{- end }}\n")
			}
		}
		o := fs[0].obj
		if o.kind() == "Namespace" && o.name() == d.operandNamespace {
			t := "{{- if .Values.operandNamespace.create }}\n" + text.String() + "{{- end }}\n"
			text.Reset()
			text.WriteString(t)
		}
		name := fileName(o)
		if names[name] {
			return nil, fmt.Errorf("two objects would be written to templates/%s", name)
		}
		names[name] = true
		c.files[name] = []byte("# Generated by hack/helmchart from config/; never edit it (make chart).\n" + text.String())
	}
	if err := d.addTests(c, filepath.Join(configDir, "helm-test")); err != nil {
		return nil, err
	}
	c.files["_helpers.tpl"] = []byte(helpers)
	c.files["NOTES.txt"] = []byte(notes)
	c.values = d.valuesYAML()
	if c.schema, err = d.valuesSchema(); err != nil {
		return nil, err
	}
	if c.readme, err = readme(c.values, c.version); err != nil {
		return nil, err
	}
	return c, nil
}

func equal(a, b object) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return bytes.Equal(x, y)
}

var unsafeName = regexp.MustCompile(`[^a-z0-9.-]+`)

func fileName(o object) string {
	return unsafeName.ReplaceAllString(strings.ToLower(o.kind()+"-"+o.name()), "-") + ".yaml"
}

// readDeployment reads the values' defaults from the manager's Deployment.
func (d *defaults) readDeployment(o object) {
	spec := o["spec"].(map[string]any)
	tmpl := spec["template"].(map[string]any)
	pod := tmpl["spec"].(map[string]any)
	for _, c := range containers(pod, "containers") {
		if c["name"] != "manager" {
			continue
		}
		img, _ := c["image"].(string)
		d.repository, d.tag, d.digest = splitImage(img)
		d.resources = c["resources"]
	}
	for _, c := range containers(pod, "initContainers") {
		if c["name"] == "bootstrap" {
			d.bootstrapRes = c["resources"]
		}
	}
	d.replicas = spec["replicas"]
	for _, f := range placementFields {
		if v, ok := pod[f]; ok {
			d.placement[f] = v
		}
	}
	if md, ok := tmpl["metadata"].(map[string]any); ok {
		d.podAnnotations, _ = md["annotations"].(map[string]any)
	}
}

func containers(pod map[string]any, field string) []map[string]any {
	list, _ := pod[field].([]any)
	var cs []map[string]any
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			cs = append(cs, m)
		}
	}
	return cs
}

// splitImage splits repo[:tag][@digest].
func splitImage(img string) (repo, tag, digest string) {
	repo, digest, _ = strings.Cut(img, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo, tag = repo[:i], repo[i+1:]
	}
	return repo, tag, digest
}

// Placeholders: template puts one where a value goes, marshals the object,
// and then replaces the line that holds it (see expand).
const ph = "__helm_"

var placeholderLine = regexp.MustCompile(`^( *)(- )?([A-Za-z]+)?:? ?'?` + ph + `([A-Za-z]+)__'?(: x)?$`)

// template turns one object into its template text.
func (d *defaults) template(src object) (string, error) {
	// Deep copy: the forms share the base's objects.
	var o object
	b, _ := yaml.Marshal(src)
	if err := yaml.Unmarshal(b, &o); err != nil {
		return "", err
	}
	md := o["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	labels[ph+"labels__"] = "x"
	if o.kind() == "CustomResourceDefinition" || (o.kind() == "Namespace" && o.name() == d.operandNamespace) {
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			md["annotations"] = ann
		}
		// Users' data: helm uninstall leaves it.
		ann["helm.sh/resource-policy"] = "keep"
	}
	switch {
	case o.kind() == "RoleBinding" && o.name() == servedBinding:
		md["namespace"] = ph + "servedNamespace__"
	case o.kind() == "Namespace" && o.name() == d.operandNamespace:
		md["name"] = ph + "operandNamespace__"
	case md["namespace"] == d.operandNamespace:
		md["namespace"] = ph + "operandNamespace__"
	}
	if o.kind() == "Pod" {
		// A test hook's pod (addTests): the manager's image, placed as
		// the manager's pods are (a private registry's pull secret, a
		// node pool's selector and tolerations).
		pod := o["spec"].(map[string]any)
		for _, f := range placementFields {
			pod[f] = ph + f + "__"
		}
		for _, c := range containers(pod, "containers") {
			if r, _, _ := splitImage(fmt.Sprint(c["image"])); r == d.repository {
				c["image"] = ph + "image__"
			}
		}
	}
	if o.kind() == "Deployment" {
		spec := o["spec"].(map[string]any)
		spec["replicas"] = ph + "replicas__"
		tmpl := spec["template"].(map[string]any)
		pod := tmpl["spec"].(map[string]any)
		tmd, _ := tmpl["metadata"].(map[string]any)
		if tmd == nil {
			tmd = map[string]any{}
			tmpl["metadata"] = tmd
		}
		tmd["annotations"] = map[string]any{ph + "podAnnotations__": "x"}
		for _, f := range placementFields {
			pod[f] = ph + f + "__"
		}
		img := d.repository
		for _, field := range []string{"containers", "initContainers"} {
			for _, c := range containers(pod, field) {
				if r, _, _ := splitImage(fmt.Sprint(c["image"])); r == img {
					c["image"] = ph + "image__"
				}
				switch c["name"] {
				case "manager":
					c["resources"] = ph + "resources__"
					if d.scoped && field == "containers" {
						args, _ := c["args"].([]any)
						c["args"] = append(args, ph+"watchNamespaces__")
					}
					if d.sharded && field == "containers" {
						args, _ := c["args"].([]any)
						c["args"] = append(args, ph+"shardDrinks__")
					}
				case "bootstrap":
					c["resources"] = ph + "bootstrapResources__"
				}
			}
		}
	}
	out, err := yaml.Marshal(o)
	if err != nil {
		return "", err
	}
	return expand(escape(string(out)))
}

// escape keeps text that looks like a template (Prometheus's {{ $labels }},
// Grafana's legends) as it is.
func escape(s string) string {
	return strings.NewReplacer("{{", `{{ "{{" }}`, "}}", `{{ "}}" }}`).Replace(s)
}

// expand replaces each placeholder line with its template.
func expand(s string) (string, error) {
	var b strings.Builder
	for line := range strings.Lines(s) {
		line = strings.TrimSuffix(line, "\n")
		if !strings.Contains(line, ph) {
			b.WriteString(line + "\n")
			continue
		}
		m := placeholderLine.FindStringSubmatch(line)
		if m == nil || (m[2] != "") != (m[4] == "watchNamespaces" || m[4] == "shardDrinks") {
			return "", fmt.Errorf("placeholder in a line the generator cannot expand: %q", line)
		}
		ind, key, name := m[1], m[3], m[4]
		n := len(ind)
		nind := func(k int) string { return fmt.Sprintf("%d", k) }
		switch name {
		case "labels":
			b.WriteString(ind + `{{- include "myoperator.labels" . | nindent ` + nind(n) + " }}\n")
		case "podAnnotations":
			b.WriteString(ind + "{{- with .Values.podAnnotations }}{{ toYaml . | nindent " + nind(n) + " }}{{ end }}\n")
		case "operandNamespace":
			b.WriteString(ind + key + ": {{ .Values.operandNamespace.name }}\n")
		case "servedNamespace":
			// Quoted: a name such as y or no is a boolean to YAML.
			b.WriteString(ind + key + ": {{ . | quote }}\n")
		case "watchNamespaces":
			b.WriteString(ind + "{{- with .Values.watchNamespaces }}\n" + ind + "- " + watchArg + `{{ join "," . }}` + "\n" + ind + "{{- end }}\n")
		case "shardDrinks":
			b.WriteString(ind + "{{- if .Values.shardDrinks.enabled }}\n" + ind + "- " + shardArg + "\n" + ind + "{{- end }}\n")
		case "replicas":
			b.WriteString(ind + key + ": {{ .Values.replicaCount }}\n")
		case "image":
			b.WriteString(ind + key + `: {{ include "myoperator.image" . }}` + "\n")
		case "resources":
			b.WriteString(ind + key + ": {{- toYaml .Values.resources | nindent " + nind(n+2) + " }}\n")
		case "bootstrapResources":
			b.WriteString(ind + key + ": {{- toYaml .Values.bootstrap.resources | nindent " + nind(n+2) + " }}\n")
		case "priorityClassName":
			b.WriteString(ind + "{{- with .Values.priorityClassName }}\n" + ind + key + ": {{ . }}\n" + ind + "{{- end }}\n")
		default:
			if !slices.Contains(placementFields, name) {
				return "", fmt.Errorf("unknown placeholder %q", name)
			}
			b.WriteString(ind + "{{- with .Values." + name + " }}\n" + ind + key + ": {{- toYaml . | nindent " + nind(n+2) + " }}\n" + ind + "{{- end }}\n")
		}
	}
	return b.String(), nil
}

// valuesYAML writes values.yaml: every value with what it does, its
// default what config/ has.
func (d *defaults) valuesYAML() []byte {
	var b strings.Builder
	y := func(v any, indent int) string {
		if v == nil {
			return " null\n"
		}
		out, _ := yaml.Marshal(v)
		s := strings.TrimSuffix(string(out), "\n")
		// Scalars and empty collections ({} and []) stay on the key's line.
		if !isCollection(v) || s == "{}" || s == "[]" {
			return " " + s + "\n"
		}
		pad := strings.Repeat(" ", indent)
		return "\n" + pad + strings.ReplaceAll(s, "\n", "\n"+pad) + "\n"
	}
	b.WriteString("# Generated by hack/helmchart from config/; never edit it (make chart).\n")
	b.WriteString("# The defaults install exactly what kubectl apply -k config/default installs.\n\n")
	b.WriteString("# The manager's image (it holds the bootstrap initContainer's binary too).\n# A digest, when set, wins over the tag; the tag defaults to the chart's appVersion.\nimage:\n")
	b.WriteString("  repository: " + d.repository + "\n")
	fmt.Fprintf(&b, "  tag: %q\n", d.tag)
	fmt.Fprintf(&b, "  digest: %q\n\n", d.digest)
	b.WriteString("# Two replicas: one leads, both serve the webhooks every Drink and Guestbook\n# write passes through (docs/install.md).\nreplicaCount:" + y(d.replicas, 0) + "\n")
	b.WriteString("# The manager container's resources (docs/sizing.md sizes them by Drinks).\nresources:" + y(d.resources, 2) + "\n")
	b.WriteString("bootstrap:\n  # The bootstrap initContainer's resources.\n  resources:" + y(d.bootstrapRes, 4) + "\n")
	b.WriteString("# Where the manager's pods run (pod spec fields, set as a whole).\n")
	for _, f := range placementFields {
		v, ok := d.placement[f]
		if !ok {
			switch f {
			case "nodeSelector", "affinity":
				v = map[string]any{}
			case "priorityClassName":
				v = ""
			default:
				v = []any{}
			}
		}
		if s, ok := v.(string); ok {
			fmt.Fprintf(&b, "%s: %q\n", f, s)
			continue
		}
		b.WriteString(f + ":" + y(v, 2))
	}
	b.WriteString("\n# Annotations of the manager's pods.\npodAnnotations:" + y(d.podAnnotations, 2) + "\n")
	b.WriteString("# The default Guestbook operand namespace, Pod Security restricted, with the\n# manager's RoleBinding there. Another name also needs OperatorConfig\n# cluster's spec.guestbook.namespace set to it. helm uninstall keeps it\n# (it holds the Guestbooks' data).\noperandNamespace:\n")
	b.WriteString("  name: " + d.operandNamespace + "\n  create: true\n")
	for _, c := range d.comps {
		switch c.dir {
		case "certmanager":
			b.WriteString("\n# Who issues the webhooks' serving certificate: \"self\" (the manager rotates\n# its own) or \"cert-manager\" (config/certmanager: needs cert-manager).\ncertificates:\n  mode: self\n")
		case "network-policy":
			b.WriteString("\n# NetworkPolicies for the manager's pods (config/network-policy).\nnetworkPolicy:\n  enabled: false\n")
		case "prometheus":
			b.WriteString("\n# ServiceMonitor, alerts and Grafana dashboard (config/prometheus: needs the\n# Prometheus Operator's CRDs).\nprometheus:\n  enabled: false\n")
		case "leader-fence":
			b.WriteString("\n# The admission fence of a replica that lost the Lease (config/leader-fence\n# says when to turn it on).\nleaderFence:\n  enabled: false\n")
		case "namespace-scope":
			b.WriteString("\n# The namespaces whose Drinks the operator serves, for example [team-a, team-b]\n" +
				"# (config/namespace-scope, docs/install.md#namespace-scope); empty serves every\n" +
				"# namespace. Set, the manager runs with --watch-namespaces and holds its Drink\n" +
				"# and ConfigMap rights through a RoleBinding in each of them, which must exist.\n" +
				"watchNamespaces: []\n")
		case "sharding":
			b.WriteString("\n# The replicas share the Drinks (config/sharding, docs/sharding.md): each\n" +
				"# reconciles and watches its share, behind the shard fence webhook. Set\n" +
				"# replicaCount to the number of replicas (3 in config/sharding); the API server\n" +
				"# needs --feature-gates=ShardedListAndWatch=true for each to receive only its share.\n" +
				"shardDrinks:\n  enabled: false\n")
		}
	}
	return []byte(b.String())
}

func isCollection(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

func (c *chart) write(out string) error {
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "templates"), 0o755); err != nil {
		return err
	}
	meta := fmt.Sprintf(`# Generated by hack/helmchart from config/; never edit it (make chart).
apiVersion: v2
name: myoperator
description: The Drink, Guestbook and OperatorConfig operator, as config/default installs it.
type: application
version: %s
appVersion: %s
kubeVersion: ">=1.33.0-0"
annotations:
  # The repository's LICENSE, as Artifact Hub reads it.
  artifacthub.io/license: Apache-2.0
`, c.version, c.appVersion)
	files := map[string][]byte{"Chart.yaml": []byte(meta), "values.yaml": c.values, "values.schema.json": c.schema, "README.md": c.readme}
	for name, b := range c.files {
		files[filepath.Join("templates", name)] = b
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(out, n)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, n), files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// addTests makes the objects of dir (config/helm-test) the chart's test
// hooks, templates/tests/: helm test creates them, the rights before the
// pod, and deletes them when the test passes; a failed test's stay, for
// its log, until the next helm test or helm uninstall. A tree without dir
// (an earlier release's, which the e2e suite charts) has no tests.
func (d *defaults) addTests(c *chart, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	objs, err := render(dir)
	if err != nil {
		return err
	}
	pods := 0
	for _, o := range objs {
		md := o["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			md["annotations"] = ann
		}
		ann["helm.sh/hook"] = "test"
		ann["helm.sh/hook-delete-policy"] = "before-hook-creation,hook-succeeded"
		ann["helm.sh/hook-weight"] = "-1"
		if o.kind() == "Pod" {
			ann["helm.sh/hook-weight"] = "0"
			pods++
		}
		body, err := d.template(o)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", dir, o.key(), err)
		}
		c.files[filepath.Join("tests", fileName(o))] = []byte("# Generated by hack/helmchart from config/helm-test; never edit it (make chart).\n" + body)
	}
	if pods != 1 {
		return fmt.Errorf("%s: want one test Pod, got %d", dir, pods)
	}
	return nil
}

const helpers = `{{/* Generated by hack/helmchart; never edit it (make chart). */}}

{{/* The manager's image: by digest when one is set. */}}
{{- define "myoperator.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The label the chart adds to every object (Helm adds its own). */}}
{{- define "myoperator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}
`

const notes = `myoperator {{ .Chart.AppVersion }} is installed (release {{ .Release.Name }}).

  kubectl -n myoperator-system rollout status deployment/myoperator-controller-manager
  kubectl get operatorconfig cluster

helm uninstall keeps the CRDs, every Drink, Guestbook and OperatorConfig, and
the operand namespace {{ .Values.operandNamespace.name }}.
`
