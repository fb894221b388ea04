package apis_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

// These tests run the kubectl commands of the course against the real API
// server, with the operator's manager running: `kubectl get dr`, its columns
// and `kubectl explain drink.spec`.

// kubectl runs kubectl with the test's kubeconfig and returns its standard
// output; err carries standard error (warnings included).
func kubectl(args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// kubectlNamespace creates a namespace of the test's own.
func kubectlNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubectl-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

// applyCourseDrinks writes one Drink through each version with kubectl
// apply, as the course's manifests and config/samples do.
func applyCourseDrinks(t *testing.T, ns string) {
	t.Helper()
	manifest := `apiVersion: example.com/v1alpha1
kind: Drink
metadata:
  name: tea
spec:
  name: Morning tea
  drink: tea
---
apiVersion: example.com/v1beta1
kind: Drink
metadata:
  name: coffee
spec:
  name: Afternoon coffee
  drink: coffee
  size: Large
---
apiVersion: example.com/v1
kind: Drink
metadata:
  name: cocoa
spec:
  displayName: Evening cocoa
  beverage: cocoa
  size: Small
`
	cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "apply", "-n", ns, "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// TestKubectlGetShortName: `kubectl get dr` lists every Drink, whatever
// version it was written in.
func TestKubectlGetShortName(t *testing.T) {
	ns := kubectlNamespace(t)
	applyCourseDrinks(t, ns)
	out, err := kubectl("get", "dr", "-n", ns, "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(out)
	slices.Sort(got)
	if want := []string{"drink.example.com/cocoa", "drink.example.com/coffee", "drink.example.com/tea"}; !slices.Equal(got, want) {
		t.Errorf("kubectl get dr -o name: got %v, want %v", got, want)
	}
}

// TestKubectlPrinterColumns: `kubectl get dr` shows the beverage (drink in
// the course's versions), the size (in the versions that have one), the
// authored version, Ready and its reason, and the age, through each version,
// for Drinks written in any version; -o wide adds the ConfigMap and the
// Ready message.
func TestKubectlPrinterColumns(t *testing.T) {
	ns := kubectlNamespace(t)
	applyCourseDrinks(t, ns)
	// name -> beverage, size, authored version; the v1alpha1 Drink gets the
	// default size.
	drinks := map[string][3]string{"tea": {"tea", "Medium", "v1alpha1"}, "coffee": {"coffee", "Large", "v1beta1"}, "cocoa": {"cocoa", "Small", "v1"}}
	age := regexp.MustCompile(`^[0-9]+[smhdy]`)
	wide := []string{"CONFIGMAP", "MESSAGE"}
	for _, tc := range []struct {
		resource string
		header   []string
	}{
		{"dr", []string{"NAME", "BEVERAGE", "SIZE", "VERSION", "READY", "REASON", "AGE"}},
		{"drinks.v1.example.com", []string{"NAME", "BEVERAGE", "SIZE", "VERSION", "READY", "REASON", "AGE"}},
		{"drinks.v1beta1.example.com", []string{"NAME", "DRINK", "SIZE", "VERSION", "READY", "REASON", "AGE"}},
		{"drinks.v1alpha1.example.com", []string{"NAME", "DRINK", "VERSION", "READY", "REASON", "AGE"}},
	} {
		for _, output := range []string{"", "wide"} {
			header := tc.header
			args := []string{"get", tc.resource, "-n", ns}
			if output != "" {
				header = append(slices.Clone(header), wide...)
				args = append(args, "-o", output)
			}
			t.Run(tc.resource+"/"+output, func(t *testing.T) {
				var last string
				// Ready turns True once the operator has written each ConfigMap.
				testenv.Eventually(t, 30*time.Second, func() string {
					out, err := kubectl(args...)
					if err != nil {
						return err.Error()
					}
					last = out
					lines := strings.Split(strings.TrimSpace(out), "\n")
					if got := strings.Fields(lines[0]); !slices.Equal(got, header) {
						return fmt.Sprintf("columns %v, want %v:\n%s", got, header, out)
					}
					if len(lines) != 1+len(drinks) {
						return fmt.Sprintf("%d rows, want %d:\n%s", len(lines)-1, len(drinks), out)
					}
					for _, line := range lines[1:] {
						row := tableRow(lines[0], line)
						d, ok := drinks[row["NAME"]]
						if !ok {
							return "unexpected row: " + line
						}
						want := map[string]string{
							"NAME": row["NAME"], "BEVERAGE": d[0], "DRINK": d[0], "SIZE": d[1], "VERSION": d[2],
							"READY": "True", "REASON": "ConfigMapReady", "AGE": row["AGE"], "CONFIGMAP": row["NAME"],
							"MESSAGE": "ConfigMap " + row["NAME"] + " holds the " + d[2] + " layout of the current spec",
						}
						for _, col := range header {
							if row[col] != want[col] {
								return fmt.Sprintf("%s: column %s = %q, want %q:\n%s", row["NAME"], col, row[col], want[col], out)
							}
						}
						if !age.MatchString(row["AGE"]) {
							return fmt.Sprintf("%s: AGE %q is not an age:\n%s", row["NAME"], row["AGE"], out)
						}
					}
					return ""
				})
				t.Logf("kubectl %s:\n%s", strings.Join(args, " "), last)
			})
		}
	}
}

// tableRow maps a row of kubectl's table to its header's columns by their
// positions in the header line, so that an empty cell stays empty and a
// message with spaces stays whole.
func tableRow(headerLine, line string) map[string]string {
	row := map[string]string{}
	names := strings.Fields(headerLine)
	from := 0
	for i, name := range names {
		start := from + strings.Index(headerLine[from:], name)
		end := len(line)
		if i+1 < len(names) {
			end = start + len(name) + strings.Index(headerLine[start+len(name):], names[i+1])
		}
		from = start + len(name)
		if start < len(line) {
			row[name] = strings.TrimSpace(line[start:min(end, len(line))])
		}
	}
	return row
}

// TestKubectlExplainDrinkSpec: `kubectl explain drink.spec` lists exactly
// each version's fields (docs/DESIGN.md), every one with a description.
func TestKubectlExplainDrinkSpec(t *testing.T) {
	fieldLine := regexp.MustCompile(`^  ([A-Za-z]+)\t<`)
	for version, want := range map[string][]string{
		"v1alpha1": {"drink", "name"},
		"v1beta1":  {"drink", "name", "size", "sugar"},
		"v1":       {"beverage", "displayName", "drink", "extras", "name", "size", "sugarCubes"},
	} {
		t.Run(version, func(t *testing.T) {
			var out string
			// The API server publishes a CRD's OpenAPI a moment after it
			// is established.
			testenv.Eventually(t, 30*time.Second, func() string {
				var err error
				if out, err = kubectl("explain", "drink.spec", "--api-version=example.com/"+version); err != nil {
					return err.Error()
				}
				return ""
			})
			if !strings.Contains(out, "VERSION:    "+version) {
				t.Fatalf("kubectl explain did not explain %s:\n%s", version, out)
			}
			_, fields, ok := strings.Cut(out, "\nFIELDS:\n")
			if !ok {
				t.Fatalf("no FIELDS in kubectl explain:\n%s", out)
			}
			described := map[string]string{}
			var order []string
			current := ""
			for _, line := range strings.Split(fields, "\n") {
				if m := fieldLine.FindStringSubmatch(line); m != nil {
					current = m[1]
					order = append(order, current)
					described[current] = ""
					continue
				}
				// Descriptions are indented by 4; "  enum: ..." lines are not.
				if current != "" && strings.HasPrefix(line, "    ") && strings.TrimSpace(line) != "" {
					described[current] += strings.TrimSpace(line) + " "
				}
			}
			if !slices.Equal(order, want) {
				t.Errorf("kubectl explain drink.spec (%s) lists %v, want %v:\n%s", version, order, want, out)
			}
			for _, f := range order {
				if d := strings.TrimSpace(described[f]); d == "" || d == "<no description>" {
					t.Errorf("kubectl explain drink.spec (%s): field %s has no description:\n%s", version, f, out)
				}
			}
		})
	}
}

// kubectlApply pipes manifest into kubectl apply (args added) in ns and
// returns its combined output, warnings included.
func kubectlApply(ns, manifest string, args ...string) (string, error) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig, "apply", "-n", ns, "-f", "-"}, args...)...)
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKubectlCourseManifest: the course's own example.com/v1 Drink applies
// as written, with no warning; its ConfigMap holds exactly the course's
// keys; it reads back through v1 with the fields it was written with (and
// displayName and beverage beside them), through v1alpha1 and v1beta1 with
// the same values, and a write back through each version changes nothing;
// applying it again changes nothing; an update of one form carries the
// other along; two forms written with different values are refused,
// naming both fields (docs/api.md, "The course's Drink").
func TestKubectlCourseManifest(t *testing.T) {
	ctx := context.Background()
	ns := kubectlNamespace(t)
	courseDrink := testenv.CourseDrink(t)
	out, err := kubectlApply(ns, courseDrink)
	if err != nil {
		t.Fatalf("the course's example.com/v1 manifest was refused: %v\n%s", err, out)
	}
	if out != "drink.example.com/example-drink created\n" {
		t.Errorf("kubectl apply said more than that it created the Drink (a warning?):\n%s", out)
	}
	key := client.ObjectKey{Namespace: ns, Name: "example-drink"}
	waitConfigMap(t, key, map[string]string{"name": "my-drink", "drink": "coffee"})
	waitReady(t, key)

	stored := &drinksv1.Drink{}
	if err := k8s.Get(ctx, key, stored); err != nil {
		t.Fatal(err)
	}
	want := drinksv1.DrinkSpec{Name: "my-drink", Drink: "coffee", DisplayName: "my-drink", Beverage: "coffee", Size: drinksv1.SizeMedium}
	if diff := cmp.Diff(want, stored.Spec); diff != "" {
		t.Errorf("read through v1 (-want +got):\n%s", diff)
	}
	if got := stored.Annotations[drinksv1.AuthoredVersionAnnotation]; got != "v1" {
		t.Errorf("authored version %q, want v1", got)
	}

	// Through each older version: the same values under its names, and a
	// write back that changes nothing.
	for _, obj := range []client.Object{&drinksv1alpha1.Drink{}, &drinksv1beta1.Drink{}} {
		var name, drink string
		// A status write of the reconciler between the read and the
		// write is a conflict: read again.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, key, obj); err != nil {
				return err
			}
			switch o := obj.(type) {
			case *drinksv1alpha1.Drink:
				name, drink = o.Spec.Name, o.Spec.Drink
			case *drinksv1beta1.Drink:
				name, drink = o.Spec.Name, o.Spec.Drink
			}
			return k8s.Update(ctx, obj)
		})
		if err != nil {
			t.Fatalf("writing back through %T: %v", obj, err)
		}
		if name != "my-drink" || drink != "coffee" {
			t.Errorf("read through %T: name %q, drink %q", obj, name, drink)
		}
		back := &drinksv1.Drink{}
		if err := k8s.Get(ctx, key, back); err != nil {
			t.Fatal(err)
		}
		// (The reconciler's status writes change the resourceVersion
		// meanwhile, and a write through v1beta1 sends its sugar even at 0,
		// which the generation counts as a spec write.)
		if diff := cmp.Diff(stored.Spec, back.Spec); diff != "" || !maps.Equal(back.Annotations, stored.Annotations) {
			t.Errorf("written back through %T: annotations %v, were %v; spec (-before +after):\n%s",
				obj, back.Annotations, stored.Annotations, diff)
		}
	}

	// Applied again, client-side, then server-side twice: the second of
	// each changes nothing, not even the resourceVersion. (The first
	// server-side apply makes kubectl's apply manager an owner of the
	// fields, a change of managedFields.)
	waitReady(t, key)
	reapply := func(args ...string) {
		t.Helper()
		before := &drinksv1.Drink{}
		if err := k8s.Get(ctx, key, before); err != nil {
			t.Fatal(err)
		}
		out, err := kubectlApply(ns, courseDrink, args...)
		if err != nil {
			t.Fatalf("applied again %v: %v\n%s", args, err, out)
		}
		after := &drinksv1.Drink{}
		if err := k8s.Get(ctx, key, after); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(stored.Spec, after.Spec); diff != "" || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("applied again %v (%s): resourceVersion %s, was %s; spec (-first +now):\n%s",
				args, strings.TrimSpace(out), after.ResourceVersion, before.ResourceVersion, diff)
		}
	}
	reapply()
	if out, err := kubectlApply(ns, courseDrink, "--server-side", "--force-conflicts"); err != nil {
		t.Fatalf("applied server-side: %v\n%s", err, out)
	}
	waitReady(t, key)
	reapply("--server-side")

	// An update of one form: the other follows, and so does the ConfigMap.
	if out, err := kubectlApply(ns, strings.Replace(courseDrink, `"coffee"`, `"tea"`, 1)); err != nil {
		t.Fatalf("changing drink: %v\n%s", err, out)
	}
	again := &drinksv1.Drink{}
	if err := k8s.Get(ctx, key, again); err != nil {
		t.Fatal(err)
	}
	if again.Spec.Drink != "tea" || again.Spec.Beverage != "tea" {
		t.Errorf("after changing drink to tea: drink %q, beverage %q", again.Spec.Drink, again.Spec.Beverage)
	}
	waitConfigMap(t, key, map[string]string{"name": "my-drink", "drink": "tea"})

	// Both forms written now with different values: refused, naming both.
	out, err = kubectlApply(ns, strings.Replace(courseDrink, `name: example-drink`, `name: mixed`, 1)+`  displayName: "another"
`)
	if err == nil {
		t.Fatalf("a Drink whose name and displayName differ was accepted:\n%s", out)
	}
	for _, field := range []string{"spec.name", "displayName"} {
		if !strings.Contains(out, field) {
			t.Errorf("the refusal does not name %s:\n%s", field, out)
		}
	}
	t.Logf("mixed forms refused:\n%s", out)
}

// TestKubectlOwnV1ServerSide: a Drink in v1's own form, as releases v0.1.0
// and v0.2.0 wrote it, applies server-side as before: it gets none of the
// course's fields, keeps v1's layout, and applying it again changes
// nothing.
func TestKubectlOwnV1ServerSide(t *testing.T) {
	ns := kubectlNamespace(t)
	manifest := `apiVersion: example.com/v1
kind: Drink
metadata:
  name: own
spec:
  displayName: Evening cocoa
  beverage: cocoa
  size: Small
`
	if out, err := kubectlApply(ns, manifest, "--server-side"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	key := client.ObjectKey{Namespace: ns, Name: "own"}
	waitConfigMap(t, key, map[string]string{"displayName": "Evening cocoa", "beverage": "cocoa", "size": "Small", "sugarCubes": "0", "extras": ""})
	waitReady(t, key)
	before := &drinksv1.Drink{}
	if err := k8s.Get(context.Background(), key, before); err != nil {
		t.Fatal(err)
	}
	if before.Spec.Name != "" || before.Spec.Drink != "" {
		t.Errorf("v1's own form got the course's fields: %+v", before.Spec)
	}
	if out, err := kubectlApply(ns, manifest, "--server-side"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	after := &drinksv1.Drink{}
	if err := k8s.Get(context.Background(), key, after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("applied again: resourceVersion %s, was %s", after.ResourceVersion, before.ResourceVersion)
	}
}

// waitReady waits until the Drink key is Ready at its generation.
func waitReady(t *testing.T, key client.ObjectKey) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		d := &drinksv1.Drink{}
		if err := k8s.Get(context.Background(), key, d); err != nil {
			return err.Error()
		}
		if c := meta.FindStatusCondition(d.Status.Conditions, drinksv1.ConditionReady); c == nil ||
			c.Status != metav1.ConditionTrue || c.ObservedGeneration != d.Generation {
			return fmt.Sprintf("Drink %s not Ready at generation %d: %+v", key, d.Generation, c)
		}
		return ""
	})
}

// waitConfigMap waits until the ConfigMap key holds exactly data.
func waitConfigMap(t *testing.T, key client.ObjectKey, data map[string]string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(context.Background(), key, cm); err != nil {
			return err.Error()
		}
		if !maps.Equal(cm.Data, data) {
			return fmt.Sprintf("ConfigMap %s data %v, want %v", key, cm.Data, data)
		}
		return ""
	})
}

// TestKubectlSamplesKeepConfig: `kubectl apply -k config/samples/`, applied
// again and again (make demo does it on every run), never touches the
// operator's configuration: a user's edit of OperatorConfig cluster stays,
// with its resourceVersion.
func TestKubectlSamplesKeepConfig(t *testing.T) {
	ctx := context.Background()
	oc := &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(oc), oc); apierrors.IsNotFound(err) {
		if err := k8s.Create(ctx, oc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), oc) })
	} else if err != nil {
		t.Fatal(err)
	}
	// The user's edit: a log level other than the sample's.
	setLogLevel(t, oc, operatorv1alpha1.LogError)
	edited := oc.ResourceVersion

	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ns := kubectlNamespace(t)
	samples := filepath.Join(root, "config", "samples")
	// The Guestbook sample is cluster-scoped: the namespace's removal
	// would not take it.
	t.Cleanup(func() { _, _ = kubectl("delete", "-n", ns, "-k", samples, "--ignore-not-found", "--wait=false") })
	for range 2 {
		if out, err := kubectl("apply", "-n", ns, "-k", samples); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	after := &operatorv1alpha1.OperatorConfig{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(oc), after); err != nil {
		t.Fatal(err)
	}
	if after.Spec.LogLevel != operatorv1alpha1.LogError || after.ResourceVersion != edited {
		t.Errorf("after kubectl apply -k config/samples/ twice: logLevel %q (the user set Error), resourceVersion %s (was %s)",
			after.Spec.LogLevel, after.ResourceVersion, edited)
	}
}

// TestKubectlOperatorConfig: what a user's tools expect of the
// OperatorConfig. kubectl explain gives each spec field's default and where
// its value in effect is; kubectl wait --for=condition=Ready works; kubectl
// get opc shows the management state in effect, Ready and which values are
// not the defaults (-o wide adds the Ready reason and Degraded).
func TestKubectlOperatorConfig(t *testing.T) {
	for _, path := range []string{"spec.managementState", "spec.logLevel", "spec.drinks.defaultSize", "spec.guestbook.namespace", "spec.guestbook.image"} {
		var out string
		testenv.Eventually(t, 30*time.Second, func() string {
			var err error
			if out, err = kubectl("explain", "operatorconfig."+path); err != nil {
				return err.Error()
			}
			return ""
		})
		flat := strings.Join(strings.Fields(out), " ")
		if !strings.Contains(flat, "Default:") || !strings.Contains(flat, "In effect: status.effective.") {
			t.Errorf("kubectl explain operatorconfig.%s does not say the default and where the value in effect is:\n%s", path, out)
		}
	}

	ctx := context.Background()
	// The operator records the configuration it accepts in its own
	// namespace before it writes the status.
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "myoperator-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	oc := &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(oc), oc); apierrors.IsNotFound(err) {
		if err := k8s.Create(ctx, oc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), oc) })
	} else if err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl("wait", "--for=condition=Ready", "--timeout=30s", "operatorconfig/"+operatorv1alpha1.SingletonName); err != nil {
		yaml, _ := kubectl("get", "opc", "cluster", "-o", "yaml")
		t.Fatalf("kubectl wait --for=condition=Ready: %v\n%s\n%s", err, out, yaml)
	}
	table := func(customized string, args ...string) func() string {
		return func() string {
			out, err := kubectl(append([]string{"get", "opc"}, args...)...)
			if err != nil {
				return err.Error()
			}
			// kubectl leaves the cell of an absent value empty.
			header, want := []string{"NAME", "STATE", "READY", "CUSTOMIZED", "AGE"}, []string{"cluster", "Managed", "True"}
			if customized != "" {
				want = append(want, customized)
			}
			if len(args) > 0 {
				header = []string{"NAME", "STATE", "READY", "CUSTOMIZED", "REASON", "DEGRADED", "AGE"}
				want = append(want, "Applied", "False")
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 || !slices.Equal(strings.Fields(lines[0]), header) {
				return fmt.Sprintf("kubectl get opc %v: headers, want %v:\n%s", args, header, out)
			}
			row := strings.Fields(lines[1])
			if len(row) != len(want)+1 || !slices.Equal(row[:len(want)], want) {
				return fmt.Sprintf("kubectl get opc %v: row %v, want %v and the age:\n%s", args, row, want, out)
			}
			return ""
		}
	}
	if (oc.Spec == operatorv1alpha1.OperatorConfigSpec{}) {
		testenv.Eventually(t, 30*time.Second, table(""))
	}
	setLogLevel(t, oc, operatorv1alpha1.LogError)
	testenv.Eventually(t, 30*time.Second, table(`["logLevel"]`))
	testenv.Eventually(t, 30*time.Second, table(`["logLevel"]`, "-o", "wide"))
}

// setLogLevel sets oc's spec.logLevel, as a user's edit, and puts the
// previous value back when the test ends.
func setLogLevel(t *testing.T, oc *operatorv1alpha1.OperatorConfig, level operatorv1alpha1.LogLevel) {
	t.Helper()
	before := oc.DeepCopy()
	oc.Spec.LogLevel = level
	if err := k8s.Patch(context.Background(), oc, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		restore := &operatorv1alpha1.OperatorConfig{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(oc), restore); err == nil {
			edited := restore.DeepCopy()
			restore.Spec.LogLevel = before.Spec.LogLevel
			_ = k8s.Patch(context.Background(), restore, client.MergeFrom(edited))
		}
	})
}

// TestKubectlGuestbookColumns: `kubectl get gb` shows why a Guestbook is
// not Ready (the Ready reason), and -o wide adds the Ready message. In this
// cluster no kubelet runs its pods, so it stays not Ready.
func TestKubectlGuestbookColumns(t *testing.T) {
	ctx := context.Background()
	gb := &webappv1.Guestbook{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "columns-"},
		Spec:       webappv1.GuestbookSpec{Size: 1, ConfigMapName: "columns"},
	}
	if err := k8s.Create(ctx, gb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), gb) })
	var ready *metav1.Condition
	testenv.Eventually(t, 30*time.Second, func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(gb), gb); err != nil {
			return err.Error()
		}
		if ready = meta.FindStatusCondition(gb.Status.Conditions, webappv1.ConditionReady); ready == nil || ready.Reason == "" {
			return "no Ready condition with a reason yet"
		}
		return ""
	})
	for _, tc := range []struct {
		args   []string
		header []string
	}{
		{nil, []string{"NAME", "SIZE", "OPERANDS", "ACTIVE", "READY", "REASON", "AGE"}},
		{[]string{"-o", "wide"}, []string{"NAME", "SIZE", "OPERANDS", "ACTIVE", "READY", "REASON", "AGE", "MESSAGE"}},
	} {
		testenv.Eventually(t, 30*time.Second, func() string {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(gb), gb); err != nil {
				return err.Error()
			}
			ready = meta.FindStatusCondition(gb.Status.Conditions, webappv1.ConditionReady)
			out, err := kubectl(append([]string{"get", "gb", gb.Name}, tc.args...)...)
			if err != nil {
				return err.Error()
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 || !slices.Equal(strings.Fields(lines[0]), tc.header) {
				return fmt.Sprintf("kubectl get gb %v: columns, want %v:\n%s", tc.args, tc.header, out)
			}
			row := tableRow(lines[0], lines[1])
			want := map[string]string{"READY": string(ready.Status), "REASON": ready.Reason}
			if len(tc.args) > 0 {
				want["MESSAGE"] = ready.Message
			}
			for col, v := range want {
				if row[col] != v {
					return fmt.Sprintf("kubectl get gb %v: %s = %q, want %q:\n%s", tc.args, col, row[col], v, out)
				}
			}
			t.Logf("kubectl get gb %v:\n%s", tc.args, out)
			return ""
		})
	}
}
