package webhook_test

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
)

func meta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// TestConversionThroughAPIServer: each row writes a Drink in one version,
// optionally updates it through another, and reads it back in every version
// through the real API server and the manager's conversion webhook.
func TestConversionThroughAPIServer(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		create client.Object
		// update, when set, changes the Drink through another version.
		update       func(t *testing.T, key client.ObjectKey)
		wantV1       drinksv1.DrinkSpec
		wantV1beta1  drinksv1beta1.DrinkSpec
		wantV1alpha1 drinksv1alpha1.DrinkSpec
	}{
		{
			name:         "created as v1alpha1",
			create:       &drinksv1alpha1.Drink{ObjectMeta: meta(ns, "alpha"), Spec: drinksv1alpha1.DrinkSpec{Name: "Tea time", Drink: "tea"}},
			wantV1:       drinksv1.DrinkSpec{DisplayName: "Tea time", Beverage: "tea", Size: drinksv1.SizeMedium},
			wantV1beta1:  drinksv1beta1.DrinkSpec{Name: "Tea time", Drink: "tea", Size: "Medium"},
			wantV1alpha1: drinksv1alpha1.DrinkSpec{Name: "Tea time", Drink: "tea"},
		},
		{
			name: "created as v1 with extras, drink changed through v1alpha1",
			create: &drinksv1.Drink{ObjectMeta: meta(ns, "extras"), Spec: drinksv1.DrinkSpec{
				DisplayName: "Cup", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2, Extras: []string{"lemon", "honey"}}},
			update: func(t *testing.T, key client.ObjectKey) {
				mustUpdate(t, key, &drinksv1alpha1.Drink{}, func(d *drinksv1alpha1.Drink) { d.Spec.Drink = "green-tea" })
			},
			wantV1: drinksv1.DrinkSpec{DisplayName: "Cup", Beverage: "green-tea", Size: drinksv1.SizeLarge, SugarCubes: 2,
				Extras: []string{"lemon", "honey"}},
			wantV1beta1:  drinksv1beta1.DrinkSpec{Name: "Cup", Drink: "green-tea", Size: "Large", Sugar: 2},
			wantV1alpha1: drinksv1alpha1.DrinkSpec{Name: "Cup", Drink: "green-tea"},
		},
		{
			name: "created as v1beta1, renamed through v1alpha1",
			create: &drinksv1beta1.Drink{ObjectMeta: meta(ns, "beta"), Spec: drinksv1beta1.DrinkSpec{
				Name: "Espresso", Drink: "coffee", Size: "Small", Sugar: 3}},
			update: func(t *testing.T, key client.ObjectKey) {
				mustUpdate(t, key, &drinksv1alpha1.Drink{}, func(d *drinksv1alpha1.Drink) { d.Spec.Name = "Ristretto" })
			},
			wantV1:       drinksv1.DrinkSpec{DisplayName: "Ristretto", Beverage: "coffee", Size: drinksv1.SizeSmall, SugarCubes: 3},
			wantV1beta1:  drinksv1beta1.DrinkSpec{Name: "Ristretto", Drink: "coffee", Size: "Small", Sugar: 3},
			wantV1alpha1: drinksv1alpha1.DrinkSpec{Name: "Ristretto", Drink: "coffee"},
		},
		{
			name: "v1alpha1 client that drops the conversion-data annotation",
			create: &drinksv1.Drink{ObjectMeta: meta(ns, "dropped"), Spec: drinksv1.DrinkSpec{
				DisplayName: "Mate", Beverage: "mate", Size: drinksv1.SizeSmall, Extras: []string{"ice"}}},
			update: func(t *testing.T, key client.ObjectKey) {
				mustUpdate(t, key, &drinksv1alpha1.Drink{}, func(d *drinksv1alpha1.Drink) {
					delete(d.Annotations, drinksv1.ConversionDataAnnotation)
					d.Spec.Drink = "yerba-mate"
				})
			},
			wantV1:       drinksv1.DrinkSpec{DisplayName: "Mate", Beverage: "yerba-mate", Size: drinksv1.SizeSmall, Extras: []string{"ice"}},
			wantV1beta1:  drinksv1beta1.DrinkSpec{Name: "Mate", Drink: "yerba-mate", Size: "Small"},
			wantV1alpha1: drinksv1alpha1.DrinkSpec{Name: "Mate", Drink: "yerba-mate"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := k8s.Create(ctx, tc.create); err != nil {
				t.Fatalf("create: %v", err)
			}
			key := client.ObjectKeyFromObject(tc.create)
			if tc.update != nil {
				tc.update(t, key)
			}
			v1 := &drinksv1.Drink{}
			mustGet(t, key, v1)
			if diff := cmp.Diff(tc.wantV1, v1.Spec); diff != "" {
				t.Errorf("v1 spec (-want +got):\n%s", diff)
			}
			if _, ok := v1.Annotations[drinksv1.ConversionDataAnnotation]; ok {
				t.Errorf("v1 object carries the conversion-data annotation: %v", v1.Annotations)
			}
			beta := &drinksv1beta1.Drink{}
			mustGet(t, key, beta)
			if diff := cmp.Diff(tc.wantV1beta1, beta.Spec); diff != "" {
				t.Errorf("v1beta1 spec (-want +got):\n%s", diff)
			}
			alpha := &drinksv1alpha1.Drink{}
			mustGet(t, key, alpha)
			if diff := cmp.Diff(tc.wantV1alpha1, alpha.Spec); diff != "" {
				t.Errorf("v1alpha1 spec (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKubectlListsSameObjects: kubectl lists the same Drinks through
// v1alpha1 and through v1.
func TestKubectlListsSameObjects(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	for i, d := range []client.Object{
		&drinksv1alpha1.Drink{ObjectMeta: meta(ns, "a"), Spec: drinksv1alpha1.DrinkSpec{Name: "A", Drink: "tea"}},
		&drinksv1beta1.Drink{ObjectMeta: meta(ns, "b"), Spec: drinksv1beta1.DrinkSpec{Name: "B", Drink: "tea"}},
		&drinksv1.Drink{ObjectMeta: meta(ns, "c"), Spec: drinksv1.DrinkSpec{DisplayName: "C", Beverage: "tea"}},
	} {
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	list := func(resource string) []string {
		var out, stderr bytes.Buffer
		cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "get", resource, "-n", ns,
			"-o", "jsonpath={range .items[*]}{.apiVersion} {.metadata.name}{\"\\n\"}{end}")
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl get %s: %v: %s", resource, err, stderr.String())
		}
		var names []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				t.Fatalf("kubectl get %s: unexpected line %q", resource, line)
			}
			if want := "example.com/" + strings.Split(resource, ".")[1]; f[0] != want {
				t.Errorf("kubectl get %s: item %s served as %s, want %s", resource, f[1], f[0], want)
			}
			names = append(names, f[1])
		}
		slices.Sort(names)
		return names
	}
	alpha, v1 := list("drinks.v1alpha1.example.com"), list("drinks.v1.example.com")
	if want := []string{"a", "b", "c"}; !slices.Equal(alpha, want) || !slices.Equal(v1, want) {
		t.Errorf("v1alpha1 lists %v, v1 lists %v; want %v in both", alpha, v1, want)
	}
}

func mustGet(t *testing.T, key client.ObjectKey, obj client.Object) {
	t.Helper()
	if err := k8s.Get(context.Background(), key, obj); err != nil {
		t.Fatalf("get %s as %T: %v", key, obj, err)
	}
}

// mustUpdate reads key into obj, applies mutate and writes it back, again
// when the reconciler's status writes make it conflict.
func mustUpdate[T client.Object](t *testing.T, key client.ObjectKey, obj T, mutate func(T)) {
	t.Helper()
	if err := update(key, obj, mutate); err != nil {
		t.Fatalf("update %T: %v", obj, err)
	}
}
