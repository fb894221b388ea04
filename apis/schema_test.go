package apis_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/test/framework/testutil"
)

const testNamespace = "default"

func decode(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("bad test manifest: %v\n%s", err, doc)
	}
	if u.GetKind() == "Drink" {
		u.SetNamespace(testNamespace)
	}
	return u
}

// TestSamplesAccepted: every sample under config/samples, one per kind and
// version, the OperatorConfig example and the course's Drink, is accepted
// by the API server and reads back.
func TestSamplesAccepted(t *testing.T) {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The samples, the OperatorConfig example and the course's Drink
	// (config/samples/operatorconfig, config/samples/course).
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob(filepath.Join(root, "config", "samples", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	seen := map[string]bool{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			obj := decode(t, string(data))
			ctx := context.Background()
			if err := k8s.Create(ctx, obj); err != nil {
				t.Fatalf("sample rejected: %v", err)
			}
			t.Cleanup(func() { _ = k8s.Delete(ctx, obj) })
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatalf("sample does not read back: %v", err)
			}
			seen[obj.GetAPIVersion()+"/"+obj.GetKind()] = true
		})
	}
	for _, want := range []string{
		"example.com/v1alpha1/Drink", "example.com/v1beta1/Drink", "example.com/v1/Drink",
		"webapp.my.domain/v1/Guestbook", "operator.example.com/v1alpha1/OperatorConfig",
	} {
		if !seen[want] {
			t.Errorf("config/samples has no accepted sample of %s", want)
		}
	}
}

// TestInvalidRejected: the real API server rejects each invalid object with a
// message that names the field and what is allowed, and stores nothing.
func TestInvalidRejected(t *testing.T) {
	const (
		drinkV1alpha1 = "apiVersion: example.com/v1alpha1\nkind: Drink\nmetadata: {name: bad}\n"
		drinkV1beta1  = "apiVersion: example.com/v1beta1\nkind: Drink\nmetadata: {name: bad}\n"
		drinkV1       = "apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: bad}\n"
		guestbook     = "apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: bad}\n"
		config        = "apiVersion: operator.example.com/v1alpha1\nkind: OperatorConfig\nmetadata: {name: cluster}\n"
	)
	tests := []struct {
		name string
		doc  string
		// want are substrings of the error: the field path and the rule.
		want []string
	}{
		{"guestbook size below 1", guestbook + "spec: {size: 0, configMapName: gb}",
			[]string{"spec.size", "greater than or equal to 1"}},
		{"guestbook size above 10", guestbook + "spec: {size: 11, configMapName: gb}",
			[]string{"spec.size", "less than or equal to 10"}},
		{"guestbook size of the wrong type", guestbook + "spec: {size: three, configMapName: gb}",
			[]string{"spec.size", "integer"}},
		{"guestbook size missing", guestbook + "spec: {configMapName: gb}",
			[]string{"spec.size", "Required"}},
		{"guestbook configMapName longer than 15", guestbook + "spec: {size: 1, configMapName: a-name-of-16-chr}",
			[]string{"spec.configMapName", "may not be more than 15"}},
		{"guestbook configMapName empty", guestbook + "spec: {size: 1, configMapName: ''}",
			[]string{"spec.configMapName", "at least 1"}},
		{"guestbook configMapName not a DNS label", guestbook + "spec: {size: 1, configMapName: Bad_Name}",
			[]string{"spec.configMapName", "should match"}},
		{"guestbook alias outside the enum", guestbook + "spec: {size: 1, configMapName: gb, alias: Email}",
			[]string{"spec.alias", `supported values: "Phone", "Address", "Name"`}},
		{"second OperatorConfig not named cluster",
			strings.Replace(config, "name: cluster", "name: second", 1) + "spec: {}",
			[]string{"metadata.name", "the only accepted name is 'cluster'"}},
		{"operatorconfig managementState outside the enum", config + "spec: {managementState: Paused}",
			[]string{"spec.managementState", `supported values: "Managed", "Unmanaged"`}},
		{"operatorconfig logLevel outside the enum", config + "spec: {logLevel: Verbose}",
			[]string{"spec.logLevel", `supported values: "Debug", "Info", "Error"`}},
		{"operatorconfig defaultSize outside the enum", config + "spec: {drinks: {defaultSize: Huge}}",
			[]string{"spec.drinks.defaultSize", `supported values: "Small", "Medium", "Large"`}},
		{"operatorconfig guestbook namespace not a DNS label", config + "spec: {guestbook: {namespace: Bad_NS}}",
			[]string{"spec.guestbook.namespace", "should match"}},
		{"operatorconfig guestbook image with a space", config + "spec: {guestbook: {image: 'nginx latest'}}",
			[]string{"spec.guestbook.image", "image must not contain spaces"}},
		{"v1alpha1 drink without drink", drinkV1alpha1 + "spec: {name: tea}",
			[]string{"spec.drink", "Required"}},
		{"v1alpha1 drink with a blank name", drinkV1alpha1 + "spec: {name: '   ', drink: tea}",
			[]string{"spec.name", "name must not be blank"}},
		{"v1alpha1 drink without spec", drinkV1alpha1,
			[]string{"spec", "Required"}},
		{"v1beta1 drink with too much sugar", drinkV1beta1 + "spec: {name: t, drink: tea, sugar: 11}",
			[]string{"spec.sugar", "less than or equal to 10"}},
		{"v1beta1 drink size outside the enum", drinkV1beta1 + "spec: {name: t, drink: tea, size: Huge}",
			[]string{"spec.size", `supported values: "Small", "Medium", "Large"`}},
		{"v1 drink with negative sugarCubes", drinkV1 + "spec: {displayName: t, beverage: tea, sugarCubes: -1}",
			[]string{"spec.sugarCubes", "greater than or equal to 0"}},
		{"v1 drink with 11 extras", drinkV1 + "spec: {displayName: t, beverage: tea, extras: [a,b,c,d,e,f,g,h,i,j,k]}",
			[]string{"spec.extras", "must have at most 10 items"}},
		{"v1 drink with a repeated extra", drinkV1 + "spec: {displayName: t, beverage: tea, extras: [milk, milk]}",
			[]string{"spec.extras[1]", "Duplicate value"}},
		{"v1 drink with the beverage among its extras", drinkV1 + "spec: {displayName: t, beverage: tea, extras: [tea]}",
			[]string{"spec.extras", "extras must not repeat the beverage"}},
		{"v1 drink beverage of the wrong type", drinkV1 + "spec: {displayName: t, beverage: 42}",
			[]string{"spec.beverage", "string"}},
		{"v1 drink without displayName", drinkV1 + "spec: {beverage: tea}",
			[]string{"spec.displayName", "Required"}},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := decode(t, tc.doc)
			err := k8s.Create(ctx, obj)
			if err == nil {
				_ = k8s.Delete(ctx, obj)
				t.Fatalf("accepted, want rejected with %q", tc.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error is not Invalid (422): %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); !apierrors.IsNotFound(err) {
				t.Errorf("rejected object is stored (get: %v)", err)
			}
		})
	}
}
