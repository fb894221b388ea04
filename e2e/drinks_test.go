//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/example/myoperator/test/framework/testenv"
)

const drinksNS = "e2e-drinks"

// drinkInEveryVersion: Drinks written with kubectl through v1alpha1,
// v1beta1 and v1 each get a ConfigMap in their version's layout, every
// Drink reads in every version, and deleting them removes the ConfigMaps
// through the real garbage collector.
func drinkInEveryVersion() features.Feature {
	return features.New("drink in every version").WithLabel("area", "drinks").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			manifest := `apiVersion: v1
kind: Namespace
metadata: {name: ` + drinksNS + `}
---
apiVersion: example.com/v1alpha1
kind: Drink
metadata: {name: alpha, namespace: ` + drinksNS + `}
spec: {name: Tea, drink: tea}
---
apiVersion: example.com/v1beta1
kind: Drink
metadata: {name: beta, namespace: ` + drinksNS + `}
spec: {name: Coffee, drink: coffee, size: Large, sugar: 2}
---
apiVersion: example.com/v1
kind: Drink
metadata: {name: one, namespace: ` + drinksNS + `}
spec: {displayName: Cocoa, beverage: cocoa, size: Small, sugarCubes: 1, extras: [whipped-cream, cinnamon]}
`
			if out, err := apply(cfg, manifest); err != nil {
				t.Fatalf("kubectl apply: %v\n%s", err, out)
			}
			return ctx
		}).
		Assess("v1alpha1 layout", configMapHas(drinksNS, "alpha", map[string]string{"name": "Tea", "drink": "tea"})).
		Assess("v1beta1 layout", configMapHas(drinksNS, "beta", map[string]string{"name": "Coffee", "drink": "coffee", "size": "Large", "sugar": "2"})).
		Assess("v1 layout", configMapHas(drinksNS, "one", map[string]string{
			"displayName": "Cocoa", "beverage": "cocoa", "size": "Small", "sugarCubes": "1", "extras": "cinnamon,whipped-cream"})).
		Assess("Ready", conditionTrueWithin("drink", drinksNS, "one", "Ready", 30*time.Second)).
		Assess("every Drink in every version", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, v := range []string{"v1alpha1", "v1beta1", "v1"} {
				out, err := kubectl(cfg, "get", "drinks."+v+".example.com", "-n", drinksNS, "-o", "jsonpath={.items[*].metadata.name}")
				if err != nil || out != "alpha beta one" {
					t.Errorf("drinks through %s: %q (%v), want alpha beta one", v, out, err)
				}
			}
			return ctx
		}).
		Assess("deleting a Drink removes its ConfigMap (garbage collector)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if out, err := kubectl(cfg, "delete", "drinks", "--all", "-n", drinksNS, "--wait=true"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			testenv.Eventually(t, 60*time.Second, func() string {
				out, _ := kubectl(cfg, "get", "configmaps", "-n", drinksNS, "-l", "app.kubernetes.io/managed-by=myoperator", "-o", "name")
				if strings.TrimSpace(out) != "" {
					return "ConfigMaps left: " + out
				}
				return ""
			})
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "namespace", drinksNS)
			return ctx
		}).
		Feature()
}

// badInput: invalid manifests applied with kubectl are each rejected
// with a message naming the field; none is stored.
func badInput() features.Feature {
	drink := func(version, spec string) string {
		return fmt.Sprintf("apiVersion: example.com/%s\nkind: Drink\nmetadata: {name: bad, namespace: default}\nspec: %s\n", version, spec)
	}
	gb := func(name, spec string) string {
		return fmt.Sprintf("apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: %s}\nspec: %s\n", name, spec)
	}
	cases := []struct{ name, manifest, want string }{
		{"drink without drink", drink("v1alpha1", "{name: x}"), "spec.drink"},
		{"drink with too much sugar", drink("v1beta1", "{name: x, drink: tea, sugar: 11}"), "spec.sugar"},
		{"drink size outside the enum", drink("v1", "{displayName: x, beverage: tea, size: Huge}"), "spec.size"},
		{"drink with 11 extras", drink("v1", "{displayName: x, beverage: tea, extras: [a,b,c,d,e,f,g,h,i,j,k]}"), "spec.extras"},
		{"small drink with 4 extras (webhook)", drink("v1", "{displayName: x, beverage: tea, size: Small, extras: [a,b,c,d]}"), "spec.extras"},
		{"drink name too long for a label (webhook)", strings.Replace(drink("v1", "{displayName: x, beverage: tea}"), "name: bad", "name: "+strings.Repeat("a", 64), 1), "metadata.name"},
		{"guestbook size 0", gb("bad", "{size: 0, configMapName: cm}"), "spec.size"},
		{"guestbook configMapName too long", gb("bad", "{size: 1, configMapName: a-name-of-16-chr}"), "spec.configMapName"},
		{"guestbook alias outside the enum", gb("bad", "{size: 1, configMapName: cm, alias: Email}"), "spec.alias"},
		{"guestbook name with a dot (webhook)", gb("a.b", "{size: 1, configMapName: cm}"), "metadata.name"},
		{"second OperatorConfig", "apiVersion: operator.example.com/v1alpha1\nkind: OperatorConfig\nmetadata: {name: second}\nspec: {}\n", "the only accepted name is 'cluster'"},
		{"operator config log level outside the enum", "apiVersion: operator.example.com/v1alpha1\nkind: OperatorConfig\nmetadata: {name: cluster}\nspec: {logLevel: Verbose}\n", "spec.logLevel"},
	}
	return features.New("bad input").WithLabel("area", "validation").
		Assess("each rejected with the field named, nothing stored", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, c := range cases {
				out, err := apply(cfg, c.manifest)
				if err == nil {
					t.Errorf("%s: accepted:\n%s", c.name, out)
					continue
				}
				if !strings.Contains(out, c.want) {
					t.Errorf("%s: message does not name %q:\n%s", c.name, c.want, out)
				}
			}
			for _, res := range []string{"drinks.v1.example.com", "guestbooks", "operatorconfigs"} {
				out, _ := kubectl(cfg, "get", res, "-A", "-o", "name")
				for _, bad := range []string{"/bad", "/a.b", "/second", strings.Repeat("a", 64)} {
					if strings.Contains(out, bad) {
						t.Errorf("a rejected object is stored: %s", out)
					}
				}
			}
			return ctx
		}).
		Feature()
}
