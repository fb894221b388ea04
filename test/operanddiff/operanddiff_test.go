package operanddiff

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/example/myoperator/test/framework/testutil"
)

// guestbookStatefulSet is a Guestbook's StatefulSet as the previous
// release left it, with what Flatten must leave out (identity, timestamps,
// status) filled in too.
const guestbookStatefulSet = `{
  "apiVersion": "apps/v1", "kind": "StatefulSet",
  "metadata": {
    "name": "gb", "namespace": "guestbook", "uid": "3f1c", "resourceVersion": "812",
    "generation": 1, "creationTimestamp": "2026-11-30T10:00:00Z",
    "labels": {"app.kubernetes.io/instance": "gb", "app.kubernetes.io/name": "guestbook"},
    "ownerReferences": [{"apiVersion": "webapp.my.domain/v1", "kind": "Guestbook", "name": "gb", "uid": "9a2e", "controller": true}],
    "managedFields": [
      {"manager": "myoperator", "operation": "Update", "time": "2026-11-30T10:00:00Z"},
      {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status"}
    ]
  },
  "spec": {
    "replicas": 3,
    "template": {"spec": {"containers": [{"name": "guestbook", "image": "registry.k8s.io/pause:3.10", "resources": {}}]}}
  },
  "status": {"replicas": 3, "readyReplicas": 3}
}`

// drinkConfigMap is a Drink's ConfigMap.
const drinkConfigMap = `{
  "apiVersion": "v1", "kind": "ConfigMap",
  "metadata": {"name": "one-0", "namespace": "ns", "resourceVersion": "40",
    "managedFields": [{"manager": "myoperator", "operation": "Update"}]},
  "data": {"drink": "cocoa", "config.yaml": "size: Small\n"}
}`

// edit sets a value in a decoded object: path steps are map keys
// (string) and list indexes (int, the list's length to append).
type edit struct {
	path  []any
	value any
}

// object decodes doc and applies the edits to it.
func object(t *testing.T, doc string, edits ...edit) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		set(obj, e.path, e.value)
	}
	return obj
}

func set(v any, path []any, value any) any {
	if len(path) == 0 {
		return value
	}
	switch step := path[0].(type) {
	case string:
		m, _ := v.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		m[step] = set(m[step], path[1:], value)
		return m
	case int:
		l, _ := v.([]any)
		if step == len(l) {
			l = append(l, nil)
		}
		l[step] = set(l[step], path[1:], value)
		return l
	}
	panic("path step neither key nor index")
}

var container0 = []any{"spec", "template", "spec", "containers", 0}

func at(base []any, steps ...any) []any { return append(slices.Clone(base), steps...) }

// upgraded is the edits the upgrade from v0.2.0 makes to a Guestbook's
// StatefulSet: both probes, and the operator's apply joining.
var upgraded = []edit{
	{at(container0, "readinessProbe"), map[string]any{"httpGet": map[string]any{"path": "/readyz", "port": 8080.0}, "periodSeconds": 2.0}},
	{at(container0, "livenessProbe"), map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": 8080.0}}},
	{[]any{"metadata", "managedFields", 2}, map[string]any{"manager": "myoperator", "operation": "Apply"}},
}

// probesAnnounced is what the record announced before it named paths:
// the probes and the manager, not the image.
var probesAnnounced = []Announcement{
	{"StatefulSet", "spec.template.spec.containers[0].readinessProbe"},
	{"StatefulSet", "spec.template.spec.containers[0].livenessProbe"},
	{"StatefulSet", "metadata.managedFields[myoperator/Apply]"},
}

func TestFlatten(t *testing.T) {
	tests := []struct {
		name string
		obj  map[string]any
		want map[string]string
	}{{
		name: "a StatefulSet: metadata a writer sets, spec leaves; identity, timestamps and status left out",
		obj:  object(t, guestbookStatefulSet),
		want: map[string]string{
			"metadata.labels[app.kubernetes.io/instance]":            `"gb"`,
			"metadata.labels[app.kubernetes.io/name]":                `"guestbook"`,
			"metadata.ownerReferences[0].apiVersion":                 `"webapp.my.domain/v1"`,
			"metadata.ownerReferences[0].kind":                       `"Guestbook"`,
			"metadata.ownerReferences[0].name":                       `"gb"`,
			"metadata.ownerReferences[0].uid":                        `"9a2e"`,
			"metadata.ownerReferences[0].controller":                 `true`,
			"metadata.managedFields[myoperator/Update]":              `true`,
			"metadata.managedFields[kube-controller-manager/Update]": `true`,
			"spec.replicas":                              `3`,
			"spec.template.spec.containers[0].name":      `"guestbook"`,
			"spec.template.spec.containers[0].image":     `"registry.k8s.io/pause:3.10"`,
			"spec.template.spec.containers[0].resources": `{}`,
		},
	}, {
		name: "a ConfigMap: data keys, bracketed when they hold a dot",
		obj:  object(t, drinkConfigMap),
		want: map[string]string{
			"metadata.managedFields[myoperator/Update]": `true`,
			"data.drink":        `"cocoa"`,
			"data[config.yaml]": `"size: Small\n"`,
		},
	}, {
		name: "annotations, an empty list, and one manager with entries for two subresources counted once",
		obj: map[string]any{
			"metadata": map[string]any{
				"annotations": map[string]any{"note": "x"},
				"managedFields": []any{
					map[string]any{"manager": "m", "operation": "Apply"},
					map[string]any{"manager": "m", "operation": "Apply", "subresource": "status"},
				},
			},
			"spec": map[string]any{"ports": []any{}},
		},
		want: map[string]string{
			"metadata.annotations[note]":      `"x"`,
			"metadata.managedFields[m/Apply]": `true`,
			"spec.ports":                      `[]`,
		},
	}, {
		name: "nothing a writer sets",
		obj:  map[string]any{"kind": "Service", "status": map[string]any{"x": 1.0}},
		want: map[string]string{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Flatten(tt.obj); !maps.Equal(got, tt.want) {
				t.Errorf("Flatten =\n%s\nwant\n%s", lines(got), lines(tt.want))
			}
		})
	}
}

func lines(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString("  " + k + " = " + m[k] + "\n")
	}
	return b.String()
}

func TestChanged(t *testing.T) {
	tests := []struct {
		name          string
		before, after map[string]string
		want          []string
	}{
		{"equal", map[string]string{"a": "1"}, map[string]string{"a": "1"}, nil},
		{"both empty", nil, nil, nil},
		{"added, removed and changed, sorted",
			map[string]string{"spec.b": "1", "spec.c": "1", "spec.d": "1"},
			map[string]string{"spec.a": "1", "spec.c": "2", "spec.d": "1"},
			[]string{"spec.a", "spec.b", "spec.c"}},
		{"a value becomes null", map[string]string{"spec.a": `"x"`}, map[string]string{"spec.a": "null"}, []string{"spec.a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Changed(tt.before, tt.after); !slices.Equal(got, tt.want) {
				t.Errorf("Changed = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestUnannounced runs the oracle as the e2e upgrade test does: two states
// of an operand, flattened, compared, and checked against announcements.
func TestUnannounced(t *testing.T) {
	image := edit{at(container0, "image"), "ghcr.io/example/myoperator-guestbook:v1.0.0"}
	tests := []struct {
		name          string
		kind          string
		before, after map[string]any
		announced     []Announcement
		want          []string
	}{{
		name:      "unannounced image change of the Guestbook StatefulSet fails",
		kind:      "StatefulSet",
		before:    object(t, guestbookStatefulSet),
		after:     object(t, guestbookStatefulSet, append(slices.Clone(upgraded), image)...),
		announced: probesAnnounced,
		want:      []string{"spec.template.spec.containers[0].image"},
	}, {
		name:      "announced image change passes",
		kind:      "StatefulSet",
		before:    object(t, guestbookStatefulSet),
		after:     object(t, guestbookStatefulSet, append(slices.Clone(upgraded), image)...),
		announced: append(slices.Clone(probesAnnounced), Announcement{"StatefulSet", "spec.template.spec.containers[0].image"}),
	}, {
		name:      "an announcement does not cover a longer name it prefixes",
		kind:      "StatefulSet",
		before:    object(t, guestbookStatefulSet),
		after:     object(t, guestbookStatefulSet, edit{at(container0, "imagePullPolicy"), "Always"}),
		announced: []Announcement{{"StatefulSet", "spec.template.spec.containers[0].image"}},
		want:      []string{"spec.template.spec.containers[0].imagePullPolicy"},
	}, {
		name:      "an announcement covers only its kind",
		kind:      "StatefulSet",
		before:    object(t, guestbookStatefulSet),
		after:     object(t, guestbookStatefulSet, image),
		announced: []Announcement{{"Deployment", "spec.template.spec.containers[0].image"}},
		want:      []string{"spec.template.spec.containers[0].image"},
	}, {
		name:   "a label added",
		kind:   "StatefulSet",
		before: object(t, guestbookStatefulSet),
		after:  object(t, guestbookStatefulSet, edit{[]any{"metadata", "labels", "example.com/tier"}, "web"}),
		want:   []string{"metadata.labels[example.com/tier]"},
	}, {
		name:      "a label added, announced by the label map",
		kind:      "StatefulSet",
		before:    object(t, guestbookStatefulSet),
		after:     object(t, guestbookStatefulSet, edit{[]any{"metadata", "labels", "example.com/tier"}, "web"}),
		announced: []Announcement{{"StatefulSet", "metadata.labels"}},
	}, {
		name:      "a manager joining",
		kind:      "StatefulSet",
		before:    object(t, guestbookStatefulSet),
		after:     object(t, guestbookStatefulSet, edit{[]any{"metadata", "managedFields", 2}, map[string]any{"manager": "kubectl", "operation": "Apply"}}),
		announced: probesAnnounced,
		want:      []string{"metadata.managedFields[kubectl/Apply]"},
	}, {
		name:   "a ConfigMap data key changed",
		kind:   "ConfigMap",
		before: object(t, drinkConfigMap),
		after:  object(t, drinkConfigMap, edit{[]any{"data", "config.yaml"}, "size: Large\n"}),
		// The StatefulSet's announcements cover no ConfigMap.
		announced: append(slices.Clone(probesAnnounced), Announcement{"ConfigMap", "data.drink"}),
		want:      []string{"data[config.yaml]"},
	}, {
		name:   "a status write changes nothing",
		kind:   "StatefulSet",
		before: object(t, guestbookStatefulSet),
		after: object(t, guestbookStatefulSet, edit{[]any{"status", "readyReplicas"}, 2.0},
			edit{[]any{"metadata", "resourceVersion"}, "813"}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := Changed(Flatten(tt.before), Flatten(tt.after))
			if got := Unannounced(tt.kind, changed, tt.announced); !slices.Equal(got, tt.want) {
				t.Errorf("Unannounced = %q, want %q (changed %q)", got, tt.want, changed)
			}
		})
	}
}

func TestParseAnnouncements(t *testing.T) {
	const record = "# Releases\n\n" +
		"## Unreleased\n\n### Changed\n\n- `StatefulSet spec.replicas` is prose here.\n\n" +
		"### Operands\n\n- Guestbook StatefulSets get a `readinessProbe` (`GET /readyz`):\n" +
		"  - `StatefulSet spec.template.spec.containers[0].readinessProbe`\n" +
		"  - `StatefulSet\n    metadata.managedFields[myoperator/Apply]`\n" +
		"- `webapp.my.domain/applied-hash` and `Service metadata.labels[app.kubernetes.io/name]`.\n\n" +
		"## v0.3.0 - 2026-12-01\n\n### Operands\n\n- `ConfigMap data[config.yaml]`, `ConfigMap spec`\n\n" +
		"## v0.2.0 - 2026-11-30\n\n### Operands\n\n- `StatefulSet spec.template.spec.containers[0].image`\n"
	tests := []struct {
		name     string
		record   string
		previous string
		want     []Announcement
		wantErr  string
	}{{
		name:     "the Operands parts above the previous release, kind and path terms only",
		record:   record,
		previous: "v0.2.0",
		want: []Announcement{
			{"StatefulSet", "spec.template.spec.containers[0].readinessProbe"},
			{"StatefulSet", "metadata.managedFields[myoperator/Apply]"},
			{"Service", "metadata.labels[app.kubernetes.io/name]"},
			{"ConfigMap", "data[config.yaml]"},
		},
	}, {
		name:     "a later previous release leaves its own and older sections out",
		record:   record,
		previous: "v0.3.0",
		want: []Announcement{
			{"StatefulSet", "spec.template.spec.containers[0].readinessProbe"},
			{"StatefulSet", "metadata.managedFields[myoperator/Apply]"},
			{"Service", "metadata.labels[app.kubernetes.io/name]"},
		},
	}, {
		name:     "no section of the previous release",
		record:   record,
		previous: "v0.1.0",
		wantErr:  `no section headed "## v0.1.0 "`,
	}, {
		name:     "a path that does not parse",
		record:   "## Unreleased\n\n### Operands\n\n- `StatefulSet spec.template..image`\n\n## v0.2.0 - x\n",
		previous: "v0.2.0",
		wantErr:  "empty step",
	}, {
		name:     "an unclosed bracket",
		record:   "## Unreleased\n\n### Operands\n\n- `Service metadata.labels[app`\n\n## v0.2.0 - x\n",
		previous: "v0.2.0",
		wantErr:  "unclosed",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAnnouncements(tt.record, tt.previous)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseAnnouncements =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

// TestReleaseRecord reads the repository's RELEASES.md as the e2e upgrade
// test does: an upgrade from v0.2.0 may change exactly the Guestbook
// StatefulSet's paths it names.
func TestReleaseRecord(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "RELEASES.md"))
	if err != nil {
		t.Fatal(err)
	}
	announced, err := ParseAnnouncements(string(data), "v0.2.0")
	if err != nil {
		t.Fatal(err)
	}
	var statefulSet []string
	for _, a := range announced {
		if a.Kind == "StatefulSet" {
			statefulSet = append(statefulSet, a.Path)
		}
	}
	for _, want := range []string{
		"spec.template.spec.containers[0].image",
		"spec.template.spec.containers[0].readinessProbe",
		"spec.template.spec.containers[0].livenessProbe",
		"metadata.managedFields[myoperator/Apply]",
	} {
		if !slices.Contains(statefulSet, want) {
			t.Errorf("RELEASES.md announces for StatefulSets %q, want %q among them", statefulSet, want)
		}
	}
}
