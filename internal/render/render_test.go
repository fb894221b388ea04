package render_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/render"
)

func TestConfigMapData(t *testing.T) {
	spec := drinksv1.DrinkSpec{DisplayName: "Cup", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2,
		Extras: []string{"mint", "lemon"}}
	tests := []struct {
		version string
		want    map[string]string
	}{
		{"v1alpha1", map[string]string{"name": "Cup", "drink": "tea"}},
		{"v1beta1", map[string]string{"name": "Cup", "drink": "tea", "size": "Large", "sugar": "2"}},
		{"v1", map[string]string{"displayName": "Cup", "beverage": "tea", "size": "Large", "sugarCubes": "2", "extras": "lemon,mint"}},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: tc.version}}, Spec: spec}
			got, err := render.ConfigMapData(d)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, v := range []string{"", "v2"} {
		d := &drinksv1.Drink{Spec: spec}
		if v != "" {
			d.Annotations = map[string]string{drinksv1.AuthoredVersionAnnotation: v}
		}
		var unknown *render.UnknownVersionError
		if _, err := render.ConfigMapData(d); !errors.As(err, &unknown) {
			t.Errorf("authored version %q: error %v, want UnknownVersionError", v, err)
		}
	}
}
