package apis_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/myoperator/test/framework/testenv"
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
// the course's versions), the size (in the versions that have one), Ready and
// the age, through each version, for Drinks written in any version.
func TestKubectlPrinterColumns(t *testing.T) {
	ns := kubectlNamespace(t)
	applyCourseDrinks(t, ns)
	// name -> beverage, size; the v1alpha1 Drink gets the default size.
	drinks := map[string][2]string{"tea": {"tea", "Medium"}, "coffee": {"coffee", "Large"}, "cocoa": {"cocoa", "Small"}}
	age := regexp.MustCompile(`^[0-9]+[smhdy]`)
	for _, tc := range []struct {
		resource string
		header   []string
	}{
		{"dr", []string{"NAME", "BEVERAGE", "SIZE", "READY", "AGE"}},
		{"drinks.v1.example.com", []string{"NAME", "BEVERAGE", "SIZE", "READY", "AGE"}},
		{"drinks.v1beta1.example.com", []string{"NAME", "DRINK", "SIZE", "READY", "AGE"}},
		{"drinks.v1alpha1.example.com", []string{"NAME", "DRINK", "READY", "AGE"}},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			var last string
			// Ready turns True once the operator has written each ConfigMap.
			testenv.Eventually(t, 30*time.Second, func() string {
				out, err := kubectl("get", tc.resource, "-n", ns)
				if err != nil {
					return err.Error()
				}
				last = out
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if header := strings.Fields(lines[0]); !slices.Equal(header, tc.header) {
					return fmt.Sprintf("columns %v, want %v:\n%s", header, tc.header, out)
				}
				if len(lines) != 1+len(drinks) {
					return fmt.Sprintf("%d rows, want %d:\n%s", len(lines)-1, len(drinks), out)
				}
				for _, line := range lines[1:] {
					row := map[string]string{}
					for i, v := range strings.Fields(line) {
						row[tc.header[i]] = v
					}
					d, ok := drinks[row["NAME"]]
					if !ok {
						return "unexpected row: " + line
					}
					want := map[string]string{"NAME": row["NAME"], "BEVERAGE": d[0], "DRINK": d[0], "SIZE": d[1], "READY": "True", "AGE": row["AGE"]}
					for _, col := range tc.header {
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
			t.Logf("kubectl get %s -n %s:\n%s", tc.resource, ns, last)
		})
	}
}

// TestKubectlExplainDrinkSpec: `kubectl explain drink.spec` lists exactly
// each version's fields (docs/DESIGN.md), every one with a description.
func TestKubectlExplainDrinkSpec(t *testing.T) {
	fieldLine := regexp.MustCompile(`^  ([A-Za-z]+)\t<`)
	for version, want := range map[string][]string{
		"v1alpha1": {"drink", "name"},
		"v1beta1":  {"drink", "name", "size", "sugar"},
		"v1":       {"beverage", "displayName", "extras", "size", "sugarCubes"},
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

// courseDrink is the course's Drink manifest, as the course writes it.
const courseDrink = `apiVersion: example.com/v1
kind: Drink
metadata:
  name: course
spec:
  name: Morning tea
  drink: tea
`

// TestKubectlCourseManifest: the course's manifest (example.com/v1 with name
// and drink) is this project's v1alpha1: applied as written, v1 refuses it
// and names the fields it does not know; with apiVersion example.com/v1alpha1
// it applies unchanged and reads in v1 as displayName and beverage (docs/api.md,
// "Samples and the course's manifests").
func TestKubectlCourseManifest(t *testing.T) {
	ns := kubectlNamespace(t)
	apply := func(manifest string) (string, error) {
		cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "apply", "-n", ns, "-f", "-")
		cmd.Stdin = strings.NewReader(manifest)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := apply(courseDrink)
	if err == nil {
		t.Fatalf("the course's example.com/v1 manifest was accepted by this project's v1:\n%s", out)
	}
	for _, field := range []string{"spec.name", "spec.drink"} {
		if !strings.Contains(out, field) {
			t.Errorf("rejection does not name %s:\n%s", field, out)
		}
	}
	t.Logf("as written:\n%s", out)

	if out, err := apply(strings.Replace(courseDrink, "example.com/v1\n", "example.com/v1alpha1\n", 1)); err != nil {
		t.Fatalf("the course's manifest as example.com/v1alpha1: %v\n%s", err, out)
	}
	got, err := kubectl("get", "drinks.v1.example.com", "course", "-n", ns, "-o", "jsonpath={.spec.displayName}/{.spec.beverage}")
	if err != nil {
		t.Fatal(err)
	}
	if got != "Morning tea/tea" {
		t.Errorf("read in v1: displayName/beverage = %q, want %q", got, "Morning tea/tea")
	}
}
