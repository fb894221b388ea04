package apis_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/test/framework/testutil"
)

// TestEveryFieldDescribed: `kubectl explain` shows a description for every
// field of every version, because the generated schema carries one.
func TestEveryFieldDescribed(t *testing.T) {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) != 3 {
		t.Fatalf("want 3 CRDs in config/crd/bases, got %d (%v)", len(files), err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			var missing []string
			walk(fmt.Sprintf("%s/%s", crd.Name, v.Name), *v.Schema.OpenAPIV3Schema, &missing)
			for _, m := range missing {
				t.Errorf("no description: %s", m)
			}
		}
	}
}

func walk(path string, s apiextensionsv1.JSONSchemaProps, missing *[]string) {
	for name, p := range s.Properties {
		child := path + "." + name
		// metadata is described by the API server from ObjectMeta.
		if p.Description == "" && name != "metadata" {
			*missing = append(*missing, child)
		}
		walk(child, p, missing)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(path+"[]", *s.Items.Schema, missing)
	}
}
