package olmcheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	valerrors "github.com/operator-framework/api/pkg/validation/errors"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/hack/tools/olm-validate/olmcheck"
)

// repoRoot is the operator's repository, two levels above the tools' module.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "bundle", "manifests")); err != nil {
		t.Fatalf("no bundle/manifests in %s: %v", root, err)
	}
	return root
}

const csvFile = "myoperator.clusterserviceversion.yaml"

// copyBundle copies bundle/'s manifests and metadata into a temporary
// bundle directory and lets edit change the CSV there.
func copyBundle(t *testing.T, edit func(csv map[string]any)) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), "bundle")
	dir := t.TempDir()
	for _, sub := range []string{"manifests", "metadata"} {
		if err := os.CopyFS(filepath.Join(dir, sub), os.DirFS(filepath.Join(src, sub))); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "manifests", csvFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	csv := map[string]any{}
	if err := yaml.Unmarshal(data, &csv); err != nil {
		t.Fatal(err)
	}
	edit(csv)
	if data, err = yaml.Marshal(csv); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func spec(csv map[string]any) map[string]any { return csv["spec"].(map[string]any) }

func modes(supported map[string]bool) []any {
	var out []any
	for _, m := range []string{"OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"} {
		out = append(out, map[string]any{"type": m, "supported": supported[m]})
	}
	return out
}

// want is one message the validators must give: its validator, level and
// a part of its text, as the library words it.
type want struct {
	validator string
	level     valerrors.Level
	substring string
}

// TestValidatorsFindDefects feeds OLM's validators copies of the current
// CSV with known defects and asserts that their own messages name each
// defect, and that make verify would fail on it (an error, or a warning that
// docs/olm.md does not explain). The unchanged copy is the control: no error and
// no unexplained warning.
func TestValidatorsFindDefects(t *testing.T) {
	const conversionOnlyAll = "only AllNamespaces InstallModeType is supported when conversionCRDs is present"
	cases := []struct {
		name string
		edit func(csv map[string]any)
		want []want
	}{
		{
			name: "unchanged",
			edit: func(map[string]any) {},
		},
		{
			name: "minKubeVersion missing",
			edit: func(csv map[string]any) { delete(spec(csv), "minKubeVersion") },
			want: []want{
				{"csv", valerrors.LevelWarn, "csv.Spec.minKubeVersion is not informed"},
				{"operatorhubv2", valerrors.LevelWarn, "csv.Spec.minKubeVersion is not informed"},
			},
		},
		{
			name: "minKubeVersion not a semantic version",
			edit: func(csv map[string]any) { spec(csv)["minKubeVersion"] = "1.30" },
			want: []want{
				{"csv", valerrors.LevelError, "csv.Spec.MinKubeVersion has an invalid value: 1.30"},
				{"operatorhubv2", valerrors.LevelError, "csv.Spec.MinKubeVersion has an invalid value: 1.30"},
			},
		},
		{
			name: "every install mode unsupported",
			edit: func(csv map[string]any) { spec(csv)["installModes"] = modes(nil) },
			want: []want{
				{"csv", valerrors.LevelError, "none of InstallModeTypes are supported"},
				{"csv", valerrors.LevelError, conversionOnlyAll},
			},
		},
		{
			name: "OwnNamespace claimed beside AllNamespaces",
			edit: func(csv map[string]any) {
				spec(csv)["installModes"] = modes(map[string]bool{"OwnNamespace": true, "AllNamespaces": true})
			},
			want: []want{{"csv", valerrors.LevelError, conversionOnlyAll}},
		},
		{
			name: "SingleNamespace instead of AllNamespaces",
			edit: func(csv map[string]any) {
				spec(csv)["installModes"] = modes(map[string]bool{"SingleNamespace": true})
			},
			want: []want{{"csv", valerrors.LevelError, conversionOnlyAll}},
		},
		{
			name: "an install mode OLM does not know",
			edit: func(csv map[string]any) {
				spec(csv)["installModes"] = []any{map[string]any{"type": "ClusterWide", "supported": true}}
			},
			want: []want{{"csv", valerrors.LevelError, conversionOnlyAll}},
		},
		{
			name: "install modes missing",
			edit: func(csv map[string]any) { delete(spec(csv), "installModes") },
			want: []want{{"csv", valerrors.LevelError, "install modes not found"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyBundle(t, tc.edit)
			b, err := olmcheck.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			findings := olmcheck.Validate(b, "1.37.2")
			fails := 0
			for _, f := range findings {
				if !olmcheck.Explained(dir, f) {
					fails++
					t.Logf("%s %s", f.Level, f)
				}
			}
			if len(tc.want) == 0 && fails > 0 {
				t.Errorf("the unchanged bundle has %d errors or unexplained warnings", fails)
			}
			if len(tc.want) > 0 && fails == 0 {
				t.Errorf("make verify would pass this defect")
			}
			for _, w := range tc.want {
				found := false
				for _, f := range findings {
					found = found || (f.Validator == w.validator && f.Level == w.level && strings.Contains(f.Message, w.substring))
				}
				if !found {
					t.Errorf("no %s from %s containing %q; got:\n%v", w.level, w.validator, w.substring, findings)
				}
			}
		})
	}
}
