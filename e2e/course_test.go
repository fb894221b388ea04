//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
)

const (
	courseNS     = "e2e-course"
	courseDrinks = 100
)

// courseCRD is the Drink CRD of the original course, as its `make install`
// applies it: one version, v1, served and stored, no conversion, and a
// spec of name and drink. drink is a string with format int32, as the
// course wrote it; the API server drops that format with a warning.
const courseCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: drinks.example.com
spec:
  group: example.com
  names:
    kind: Drink
    listKind: DrinkList
    plural: drinks
    singular: drink
    shortNames:
    - dr
  scope: Namespaced
  conversion:
    strategy: None
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion:
            type: string
          kind:
            type: string
          metadata:
            type: object
          spec:
            type: object
            properties:
              name:
                type: string
              drink:
                type: string
                format: int32
          status:
            type: object
    subresources:
      status: {}
`

// courseManifest is the course's Drink manifest for fixture Drink i,
// written as the course writes its example.
func courseManifest(i int) string {
	return fmt.Sprintf("apiVersion: example.com/v1\nkind: Drink\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  name: %q\n  drink: %q\n",
		courseDrinkName(i), courseNS, courseData(i)["name"], courseData(i)["drink"])
}

func courseDrinkName(i int) string { return fmt.Sprintf("example-drink-%d", i) }

// courseData is fixture Drink i's spec, and the ConfigMap data the
// course's operator wrote for it.
func courseData(i int) map[string]string {
	return map[string]string{"name": fmt.Sprintf("my-drink-%d", i), "drink": []string{"coffee", "tea", "cocoa"}[i%3]}
}

// courseUpgrade: a cluster that ran the course's operator (its CRD, 100
// Drinks applied from its manifests, the ConfigMaps its reconciler made)
// gets this operator installed from config/default. Nothing is lost:
// every Drink keeps name and drink through every version and in etcd,
// each ConfigMap is adopted in place in the course's layout,
// storedVersions is this project's, and the course's manifests apply
// again unchanged.
func courseUpgrade() features.Feature {
	drinkUIDs := map[string]types.UID{}
	cmUIDs := map[string]types.UID{}
	return features.New("upgrade from the course's operator").WithLabel("area", "course-upgrade").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			uninstall(t, cfg)
			installCourse(ctx, t, cfg, drinkUIDs, cmUIDs)
			installAndWait(ctx, t, cfg)
			return ctx
		}).
		Assess(`the CRD is this project's: storedVersions ["v1"], three versions, conversion by webhook`, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := kc.Get(ctx, client.ObjectKey{Name: "drinks.example.com"}, crd); err != nil {
				t.Fatal(err)
			}
			var served []string
			for _, v := range crd.Spec.Versions {
				served = append(served, v.Name)
			}
			if got := crd.Status.StoredVersions; !slices.Equal(got, []string{"v1"}) {
				t.Errorf("storedVersions %v, want [v1]", got)
			}
			// (The course's v1 stays first in the list the apply merged.)
			slices.Sort(served)
			if !slices.Equal(served, []string{"v1", "v1alpha1", "v1beta1"}) || crd.Spec.Conversion == nil ||
				crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
				strategy := apiextensionsv1.ConversionStrategyType("none given")
				if crd.Spec.Conversion != nil {
					strategy = crd.Spec.Conversion.Strategy
				}
				t.Errorf("CRD versions %v, conversion %s; want v1, v1alpha1 and v1beta1 through the webhook", served, strategy)
			}
			return ctx
		}).
		Assess("every Drink the same object, with the course's name and drink through v1, v1alpha1 and v1beta1", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// One list per version (a warning per read through the
			// deprecated v1alpha1, not per Drink).
			read := map[string]map[string][2]string{"v1": {}, "v1alpha1": {}, "v1beta1": {}}
			v1, alpha, beta := &drinksv1.DrinkList{}, &drinksv1alpha1.DrinkList{}, &drinksv1beta1.DrinkList{}
			for _, list := range []client.ObjectList{v1, alpha, beta} {
				if err := kc.List(ctx, list, client.InNamespace(courseNS)); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range v1.Items {
				read["v1"][d.Name] = [2]string{d.Spec.Name, d.Spec.Drink}
				if d.UID != drinkUIDs[d.Name] {
					t.Errorf("Drink %s was recreated", d.Name)
				}
			}
			for _, d := range alpha.Items {
				read["v1alpha1"][d.Name] = [2]string{d.Spec.Name, d.Spec.Drink}
			}
			for _, d := range beta.Items {
				read["v1beta1"][d.Name] = [2]string{d.Spec.Name, d.Spec.Drink}
			}
			var wrong []string
			for _, version := range []string{"v1", "v1alpha1", "v1beta1"} {
				for i := range courseDrinks {
					want := courseData(i)
					if g := read[version][courseDrinkName(i)]; g != [2]string{want["name"], want["drink"]} {
						wrong = append(wrong, fmt.Sprintf("Drink %s read through %s: name %q, drink %q; the course wrote name %q, drink %q",
							courseDrinkName(i), version, g[0], g[1], want["name"], want["drink"]))
					}
				}
			}
			if len(wrong) > 0 {
				t.Errorf("%d of %d reads lost the course's fields, the first:\n%s", len(wrong), 3*courseDrinks, strings.Join(wrong[:min(3, len(wrong))], "\n"))
			}
			return ctx
		}).
		Assess("every Drink Ready, authored in v1", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			testenv.Eventually(t, 90*time.Second, func() string {
				list := &drinksv1.DrinkList{}
				if err := kc.List(ctx, list, client.InNamespace(courseNS)); err != nil {
					return err.Error()
				}
				if len(list.Items) != courseDrinks {
					return fmt.Sprintf("%d Drinks, want %d", len(list.Items), courseDrinks)
				}
				for i := range list.Items {
					d := &list.Items[i]
					if d.UID != drinkUIDs[d.Name] {
						return fmt.Sprintf("Drink %s was recreated", d.Name)
					}
					if !readyDrink(d) {
						return fmt.Sprintf("Drink %s not ready: %+v", d.Name, d.Status.Conditions)
					}
					if d.Status.AuthoredVersion != "v1" {
						return fmt.Sprintf("Drink %s: status.authoredVersion %q, want v1", d.Name, d.Status.AuthoredVersion)
					}
				}
				return ""
			})
			return ctx
		}).
		Assess("kubectl get drinks shows each Drink's BEVERAGE, filled from the course's drink without a user's write", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			testenv.Eventually(t, 90*time.Second, func() string {
				out, err := kubectl(cfg, "get", "drinks", "-n", courseNS)
				if err != nil {
					return fmt.Sprintf("%v: %s", err, out)
				}
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if len(lines) != courseDrinks+1 || !strings.HasPrefix(strings.Join(strings.Fields(lines[0]), " "), "NAME BEVERAGE SIZE VERSION READY") {
					return fmt.Sprintf("kubectl get drinks printed:\n%s", out)
				}
				for _, l := range lines[1:] {
					f := strings.Fields(l)
					var i int
					if _, err := fmt.Sscanf(f[0], "example-drink-%d", &i); err != nil {
						return fmt.Sprintf("row %q: %v", l, err)
					}
					if f[1] != courseData(i)["drink"] || f[3] != "v1" || f[4] != "True" {
						return fmt.Sprintf("row %q: want BEVERAGE %s, VERSION v1, READY True (the course wrote drink %q)\n%s", l, courseData(i)["drink"], courseData(i)["drink"], out)
					}
				}
				return ""
			})
			return ctx
		}).
		Assess("etcd holds every Drink with the course's name and drink", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !mode.created() {
				t.Skip("etcd is read only on the suite's own kwok cluster")
			}
			etcd, prefix := kwokEtcd(t)
			resp, err := etcd.Get(ctx, prefix+"/example.com/drinks/"+courseNS+"/", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) != courseDrinks {
				t.Errorf("%d Drinks in etcd, want %d", len(resp.Kvs), courseDrinks)
			}
			for _, kv := range resp.Kvs {
				var stored struct {
					APIVersion string            `json:"apiVersion"`
					Metadata   metav1.ObjectMeta `json:"metadata"`
					Spec       map[string]any    `json:"spec"`
				}
				if err := json.Unmarshal(kv.Value, &stored); err != nil {
					t.Fatalf("%s: %v", kv.Key, err)
				}
				var i int
				if _, err := fmt.Sscanf(stored.Metadata.Name, "example-drink-%d", &i); err != nil {
					t.Fatalf("%s: %v", kv.Key, err)
				}
				if want := courseData(i); stored.Spec["name"] != want["name"] || stored.Spec["drink"] != want["drink"] ||
					stored.APIVersion != "example.com/v1" {
					t.Errorf("etcd %s: %s, spec %v; the course wrote %v", kv.Key, stored.APIVersion, stored.Spec, want)
				}
			}
			return ctx
		}).
		Assess("each ConfigMap adopted in place: same UID, exactly the course's keys, labelled, controlled by its Drink", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			testenv.Eventually(t, 60*time.Second, func() string {
				for i := range courseDrinks {
					name := courseDrinkName(i)
					cm := &corev1.ConfigMap{}
					if err := kc.Get(ctx, client.ObjectKey{Namespace: courseNS, Name: name}, cm); err != nil {
						return err.Error()
					}
					if cm.UID != cmUIDs[name] {
						return fmt.Sprintf("ConfigMap %s was recreated (UID %s, was %s)", name, cm.UID, cmUIDs[name])
					}
					if want := courseData(i); !maps.Equal(cm.Data, want) {
						return fmt.Sprintf("ConfigMap %s data %v, want the course's %v", name, cm.Data, want)
					}
					if cm.Labels["app.kubernetes.io/managed-by"] != "myoperator" || cm.Annotations["example.com/layout"] != "v1+course" {
						return fmt.Sprintf("ConfigMap %s not adopted: labels %v, annotations %v", name, cm.Labels, cm.Annotations)
					}
					if ref := metav1.GetControllerOf(cm); ref == nil || ref.UID != drinkUIDs[name] {
						return fmt.Sprintf("ConfigMap %s controller %v", name, ref)
					}
				}
				return ""
			})
			return ctx
		}).
		Assess("the course's manifests applied again: accepted, every Drink unchanged", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			before := courseVersions(ctx, t)
			var all strings.Builder
			for i := range courseDrinks {
				all.WriteString("---\n" + courseManifest(i))
			}
			out, err := apply(cfg, all.String())
			if err != nil {
				t.Fatalf("kubectl apply: %v\n%s", err, out)
			}
			if n := strings.Count(out, " unchanged\n"); n != courseDrinks {
				t.Errorf("kubectl apply: %d of %d Drinks unchanged:\n%s", n, courseDrinks, out)
			}
			if after := courseVersions(ctx, t); !maps.Equal(before, after) {
				t.Errorf("resourceVersions changed by applying the same manifests again")
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "namespace", courseNS)
			return ctx
		}).
		Feature()
}

// courseVersions returns each fixture Drink's resourceVersion.
func courseVersions(ctx context.Context, t *testing.T) map[string]string {
	t.Helper()
	list := &drinksv1.DrinkList{}
	if err := kc.List(ctx, list, client.InNamespace(courseNS)); err != nil {
		t.Fatal(err)
	}
	rv := map[string]string{}
	for _, d := range list.Items {
		rv[d.Name] = d.ResourceVersion
	}
	return rv
}

// installCourse makes the cluster the course leaves: its CRD, Drinks
// applied from its manifests, and for each the ConfigMap its operator's
// reconciler makes (CreateOrUpdate of a ConfigMap named after the Drink,
// data name and drink, the Drink its controller through
// SetControllerReference). It records the UIDs.
func installCourse(ctx context.Context, t *testing.T, cfg *envconf.Config, drinkUIDs, cmUIDs map[string]types.UID) {
	t.Helper()
	if out, err := apply(cfg, courseCRD); err != nil {
		t.Fatalf("the course's CRD: %v: %s", err, out)
	}
	if out, err := kubectl(cfg, "wait", "--for=condition=Established", "--timeout=30s", "crd/drinks.example.com"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var manifest strings.Builder
	manifest.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + courseNS + "}\n")
	for i := range courseDrinks {
		manifest.WriteString("---\n" + courseManifest(i))
	}
	// The API server may take a moment to serve a new CRD's resource.
	testenv.Eventually(t, 30*time.Second, func() string {
		if out, err := apply(cfg, manifest.String()); err != nil {
			return out
		}
		return ""
	})
	operator := client.WithFieldOwner(kc, "course-operator")
	for i := range courseDrinks {
		drink := &unstructured.Unstructured{}
		drink.SetAPIVersion("example.com/v1")
		drink.SetKind("Drink")
		if err := kc.Get(ctx, client.ObjectKey{Namespace: courseNS, Name: courseDrinkName(i)}, drink); err != nil {
			t.Fatal(err)
		}
		if _, ok := drink.GetAnnotations()[drinksv1.AuthoredVersionAnnotation]; ok {
			t.Fatalf("fixture Drink %s has an authored version: a webhook of this operator is still installed", drink.GetName())
		}
		drinkUIDs[drink.GetName()] = drink.GetUID()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: courseNS, Name: drink.GetName()}}
		if _, err := controllerutil.CreateOrUpdate(ctx, operator, cm, func() error {
			name, _, _ := unstructured.NestedString(drink.Object, "spec", "name")
			beverage, _, _ := unstructured.NestedString(drink.Object, "spec", "drink")
			cm.Data = map[string]string{"name": name, "drink": beverage}
			return controllerutil.SetControllerReference(drink, cm, kc.Scheme())
		}); err != nil {
			t.Fatal(err)
		}
		cmUIDs[cm.Name] = cm.UID
	}
}

// kwokEtcd connects to the etcd of the suite's kwok cluster, from the port
// kwokctl recorded in its workdir, and returns the key prefix the API
// server stores under.
func kwokEtcd(t *testing.T) (*clientv3.Client, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(os.Getenv("KWOK_WORKDIR"), "clusters", clusterName, "kwok.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifests.SplitYAML(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		var conf struct {
			Kind    string `json:"kind"`
			Options struct {
				EtcdPort   int    `json:"etcdPort"`
				EtcdPrefix string `json:"etcdPrefix"`
			} `json:"options"`
		}
		if err := yaml.Unmarshal(doc, &conf); err != nil || conf.Kind != "KwokctlConfiguration" || conf.Options.EtcdPort == 0 {
			continue
		}
		cli, err := clientv3.New(clientv3.Config{
			Endpoints:   []string{fmt.Sprintf("http://127.0.0.1:%d", conf.Options.EtcdPort)},
			DialTimeout: 10 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.Close() })
		prefix := conf.Options.EtcdPrefix
		if prefix == "" {
			prefix = "/registry"
		}
		return cli, strings.TrimSuffix(prefix, "/")
	}
	t.Fatalf("kwok.yaml of cluster %s names no etcd port", clusterName)
	return nil, ""
}
