package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/internal/webhook"
)

// TestAuthoredVersion: the recorded authored version is the version of the
// request that last wrote the spec; writes that leave the spec alone keep it.
func TestAuthoredVersion(t *testing.T) {
	ns := namespace(t)
	authored := func(name string) string {
		d := &drinksv1.Drink{}
		mustGet(t, client.ObjectKey{Namespace: ns, Name: name}, d)
		return d.Annotations[drinksv1.AuthoredVersionAnnotation]
	}
	ctx := context.Background()
	for _, tc := range []struct {
		version string
		obj     client.Object
	}{
		{"v1alpha1", &drinksv1alpha1.Drink{ObjectMeta: meta(ns, "by-v1alpha1"), Spec: drinksv1alpha1.DrinkSpec{Name: "x", Drink: "tea"}}},
		{"v1beta1", &drinksv1beta1.Drink{ObjectMeta: meta(ns, "by-v1beta1"), Spec: drinksv1beta1.DrinkSpec{Name: "x", Drink: "tea"}}},
		{"v1", &drinksv1.Drink{ObjectMeta: meta(ns, "by-v1"), Spec: drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea"}}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			if err := k8s.Create(ctx, tc.obj); err != nil {
				t.Fatal(err)
			}
			if got := authored(tc.obj.GetName()); got != tc.version {
				t.Fatalf("created through %s: authored version %q", tc.version, got)
			}
			// A label added through v1 does not touch the spec.
			key := client.ObjectKeyFromObject(tc.obj)
			mustUpdate(t, key, &drinksv1.Drink{}, func(v1 *drinksv1.Drink) {
				v1.Labels = map[string]string{"touched": "yes"}
				v1.Annotations[drinksv1.AuthoredVersionAnnotation] = "v1beta1" // a user may not forge it
			})
			if got := authored(tc.obj.GetName()); got != tc.version {
				t.Fatalf("metadata-only write through v1: authored version %q, want %q kept", got, tc.version)
			}
			// The spec written through v1beta1 moves it.
			mustUpdate(t, key, &drinksv1beta1.Drink{}, func(beta *drinksv1beta1.Drink) { beta.Spec.Drink = "coffee" })
			if got := authored(tc.obj.GetName()); got != "v1beta1" {
				t.Fatalf("spec written through v1beta1: authored version %q", got)
			}
		})
	}
}

// TestSizeDefaultFromOperatorConfig: an omitted size comes from the
// OperatorConfig, or the built-in Medium without one.
func TestSizeDefaultFromOperatorConfig(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	size := func(name string) drinksv1.Size {
		d := &drinksv1.Drink{}
		mustGet(t, client.ObjectKey{Namespace: ns, Name: name}, d)
		return d.Spec.Size
	}
	if err := k8s.Create(ctx, &drinksv1beta1.Drink{ObjectMeta: meta(ns, "no-config"), Spec: drinksv1beta1.DrinkSpec{Name: "x", Drink: "tea"}}); err != nil {
		t.Fatal(err)
	}
	if got := size("no-config"); got != drinksv1.SizeMedium {
		t.Errorf("without OperatorConfig: size %q, want Medium", got)
	}
	oc := &operatorv1alpha1.OperatorConfig{}
	oc.Name = operatorv1alpha1.SingletonName
	oc.Spec.Drinks.DefaultSize = "Large"
	if err := k8s.Create(ctx, oc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, oc) })
	// The manager's cache sees the OperatorConfig shortly after.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		name := fmt.Sprintf("with-config-%d", i)
		if err := k8s.Create(ctx, &drinksv1.Drink{ObjectMeta: meta(ns, name), Spec: drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea"}}); err != nil {
			t.Fatal(err)
		}
		if got := size(name); got == drinksv1.SizeLarge {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("with OperatorConfig defaultSize Large: size %q", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAdmissionRejects: objects that the schema accepts but the validating
// webhooks reject, each with a message naming the field; none is stored.
func TestAdmissionRejects(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	long := strings.Repeat("a", 64)
	gbName53 := strings.Repeat("g", 53)
	// Existing objects that the invalid updates below start from.
	mustCreateYAML(t, ns, "apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: taken}\nspec: {size: 1, configMapName: taken-cm}")
	mustCreateYAML(t, ns, "apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: big}\nspec: {displayName: x, beverage: tea, size: Large, extras: [a, b, c, d]}")
	mustCreateYAML(t, ns, "apiVersion: operator.example.com/v1alpha1\nkind: OperatorConfig\nmetadata: {name: cluster}\nspec: {}")

	type op int
	const (
		create op = iota
		update
	)
	tests := []struct {
		name string
		op   op
		doc  string
		want []string
	}{
		{"v1 drink name longer than a label value", create,
			"apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: " + long + "}\nspec: {displayName: x, beverage: tea}",
			[]string{"vdrink.example.com", "metadata.name", "may not be more than 63"}},
		{"v1alpha1 drink name longer than a label value", create,
			"apiVersion: example.com/v1alpha1\nkind: Drink\nmetadata: {name: " + long + "b}\nspec: {name: x, drink: tea}",
			[]string{"vdrink.example.com", "metadata.name", "may not be more than 63"}},
		{"v1beta1 drink name longer than a label value", create,
			"apiVersion: example.com/v1beta1\nkind: Drink\nmetadata: {name: " + long + "c}\nspec: {name: x, drink: tea}",
			[]string{"vdrink.example.com", "metadata.name", "may not be more than 63"}},
		{"small v1 drink with 4 extras", create,
			"apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: small}\nspec: {displayName: x, beverage: tea, size: Small, extras: [a, b, c, d]}",
			[]string{"vdrink.example.com", "spec.extras", "a Small drink takes at most 3 extras"}},
		{"drink made Small through v1beta1 while it has 4 extras", update,
			"apiVersion: example.com/v1beta1\nkind: Drink\nmetadata: {name: big}\nspec: {name: x, drink: tea, size: Small}",
			[]string{"vdrink.example.com", "spec.extras", "a Small drink takes at most 3 extras"}},
		{"drink made Small through v1 with 5 extras", update,
			"apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: big}\nspec: {displayName: x, beverage: tea, size: Small, extras: [a, b, c, d, e]}",
			[]string{"vdrink.example.com", "spec.extras", "a Small drink takes at most 3 extras"}},
		{"guestbook name too long for its StatefulSet", create,
			"apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: " + gbName53 + "}\nspec: {size: 1, configMapName: cm53}",
			[]string{"vguestbook.webapp.my.domain", "metadata.name", "may not be more than 52"}},
		{"drink paused with a value other than true or false", create,
			"apiVersion: example.com/v1beta1\nkind: Drink\nmetadata: {name: misspelt, annotations: {example.com/paused: \"yes\"}}\nspec: {name: x, drink: tea}",
			[]string{"vdrink.example.com", "metadata.annotations[example.com/paused]", `supported values: "true", "false"`}},
		{"guestbook paused with a value other than true or false", create,
			"apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: misspelt, annotations: {example.com/paused: \"True\"}}\nspec: {size: 1, configMapName: misspelt}",
			[]string{"vguestbook.webapp.my.domain", "metadata.annotations[example.com/paused]", `supported values: "true", "false"`}},
		{"guestbook name with a dot", create,
			"apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: my.guestbook}\nspec: {size: 1, configMapName: dotted}",
			[]string{"vguestbook.webapp.my.domain", "metadata.name", "must be a DNS label"}},
		{"guestbook ConfigMap already used by another Guestbook", create,
			"apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: second}\nspec: {size: 1, configMapName: taken-cm}",
			[]string{"vguestbook.webapp.my.domain", "spec.configMapName", `already used by Guestbook "taken"`}},
		{"guestbook configMapName changed", update,
			"apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: taken}\nspec: {size: 1, configMapName: other-cm}",
			[]string{"vguestbook.webapp.my.domain", "spec.configMapName", `cannot change from "taken-cm"`}},
		{"operator config namespace kube-system", update,
			"apiVersion: operator.example.com/v1alpha1\nkind: OperatorConfig\nmetadata: {name: cluster}\nspec: {guestbook: {namespace: kube-system}}",
			[]string{"voperatorconfig.operator.example.com", "spec.guestbook.namespace", "belongs to the cluster"}},
		{"operator config namespace default", update,
			"apiVersion: operator.example.com/v1alpha1\nkind: OperatorConfig\nmetadata: {name: cluster}\nspec: {guestbook: {namespace: default}}",
			[]string{"voperatorconfig.operator.example.com", "spec.guestbook.namespace", "belongs to the cluster"}},
		{"operator config namespace of the operator", update,
			"apiVersion: operator.example.com/v1alpha1\nkind: OperatorConfig\nmetadata: {name: cluster}\nspec: {guestbook: {namespace: myoperator-system}}",
			[]string{"voperatorconfig.operator.example.com", "spec.guestbook.namespace", "the operator's own namespace"}},
		{"operator config image with an empty tag", update,
			"apiVersion: operator.example.com/v1alpha1\nkind: OperatorConfig\nmetadata: {name: cluster}\nspec: {guestbook: {image: 'nginx:'}}",
			[]string{"voperatorconfig.operator.example.com", "spec.guestbook.image", "must be a container image reference"}},
		{"operator config image with upper case", update,
			"apiVersion: operator.example.com/v1alpha1\nkind: OperatorConfig\nmetadata: {name: cluster}\nspec: {guestbook: {image: 'Team/App:1'}}",
			[]string{"voperatorconfig.operator.example.com", "spec.guestbook.image", "must be a container image reference"}},
		{"operator config image with a short digest", update,
			"apiVersion: operator.example.com/v1alpha1\nkind: OperatorConfig\nmetadata: {name: cluster}\nspec: {guestbook: {image: 'app@sha256:abc'}}",
			[]string{"voperatorconfig.operator.example.com", "spec.guestbook.image", "must be a container image reference"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := decodeYAML(t, ns, tc.doc)
			before := &unstructured.Unstructured{}
			before.SetGroupVersionKind(obj.GroupVersionKind())
			existed := k8s.Get(ctx, client.ObjectKeyFromObject(obj), before) == nil
			var err error
			if tc.op == create {
				err = k8s.Create(ctx, obj)
			} else {
				// The reconciler writes status meanwhile; a conflict is not
				// the rejection under test, so try again on the newest version.
				for range 10 {
					obj.SetResourceVersion(before.GetResourceVersion())
					if err = k8s.Update(ctx, obj); !apierrors.IsConflict(err) {
						break
					}
					if gerr := k8s.Get(ctx, client.ObjectKeyFromObject(obj), before); gerr != nil {
						t.Fatal(gerr)
					}
				}
			}
			if err == nil {
				t.Fatalf("accepted, want rejected with %q", tc.want)
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
				t.Fatalf("error is not a rejection: %v", err)
			}
			for _, w := range append([]string{"admission webhook"}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			after := &unstructured.Unstructured{}
			after.SetGroupVersionKind(obj.GroupVersionKind())
			getErr := k8s.Get(ctx, client.ObjectKeyFromObject(obj), after)
			switch {
			case !existed && !apierrors.IsNotFound(getErr):
				t.Errorf("rejected object is stored (get: %v)", getErr)
			case existed && after.GetGeneration() != before.GetGeneration():
				t.Errorf("rejected update changed the spec (generation %d -> %d)", before.GetGeneration(), after.GetGeneration())
			}
		})
	}
}

// TestDeprecationWarnings: writes through older versions get warnings that
// name the field and its v1 replacement.
func TestDeprecationWarnings(t *testing.T) {
	ns := namespace(t)
	var got []string
	wcfg := rest.CopyConfig(cfg)
	wcfg.WarningHandler = warningRecorder(func(msg string) { got = append(got, msg) })
	c, err := client.New(wcfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), &drinksv1beta1.Drink{ObjectMeta: meta(ns, "warn"),
		Spec: drinksv1beta1.DrinkSpec{Name: "x", Drink: "tea", Sugar: 1}}); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{"spec.sugar is deprecated: use spec.sugarCubes", "spec.drink is deprecated: use spec.beverage"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q lack %q", got, want)
		}
	}
}

type warningRecorder func(string)

func (w warningRecorder) HandleWarningHeader(_ int, _ string, msg string) { w(msg) }

// TestMalformedReviews: garbage sent straight to the webhook server gets a
// clean error response, and the server keeps serving.
func TestMalformedReviews(t *testing.T) {
	ns := namespace(t)
	hc, base := webhookServer()
	for _, tc := range []struct{ path, body string }{
		{"/convert", "{not json"},
		{"/convert", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`},
		{"/convert", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"1","desiredAPIVersion":"example.com/v9","objects":[{"apiVersion":"example.com/v1","kind":"Drink"}]}}`},
		{"/validate-example-com-v1-drink", "{not json"},
		{"/validate-example-com-v1-drink", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"2","object":{"spec":7}}}`},
		{"/mutate-example-com-v1-drink", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`},
	} {
		resp, err := hc.Post(base+tc.path, "application/json", bytes.NewBufferString(tc.body))
		if err != nil {
			t.Fatalf("POST %s %q: %v", tc.path, tc.body, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		// Either an HTTP error status or a review whose result says failure.
		clean := resp.StatusCode >= 400 || strings.Contains(string(body), `"status":"Failure"`) ||
			strings.Contains(string(body), `"allowed":false`)
		if !clean {
			t.Errorf("POST %s %q: status %d body %s: not an error", tc.path, tc.body, resp.StatusCode, body)
		}
	}
	// Still serving: a normal write that needs conversion and admission.
	if err := k8s.Create(context.Background(), &drinksv1alpha1.Drink{ObjectMeta: meta(ns, "after-garbage"),
		Spec: drinksv1alpha1.DrinkSpec{Name: "x", Drink: "tea"}}); err != nil {
		t.Fatalf("webhook server stopped serving after malformed reviews: %v", err)
	}
}

// webhookServer returns a client of the manager's webhook server and its
// base URL, for requests that the API server would never send.
func webhookServer() (*http.Client, string) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(env.WebhookInstallOptions.LocalServingCAData)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return hc, fmt.Sprintf("https://%s:%d", env.WebhookInstallOptions.LocalServingHost, env.WebhookInstallOptions.LocalServingPort)
}

func decodeYAML(t *testing.T, ns, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("bad test manifest: %v", err)
	}
	if u.GetKind() == "Drink" {
		u.SetNamespace(ns)
	}
	return u
}

func mustCreateYAML(t *testing.T, ns, doc string) {
	t.Helper()
	obj := decodeYAML(t, ns, doc)
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
}

// TestRetiredOperatorConfigDefaulter: the path of the OperatorConfig's
// former defaulting webhook, which v0.2.0's webhook configuration still
// names during a rollout between it and this release, answers allowed with
// no patch: the spec stays exactly as written.
func TestRetiredOperatorConfigDefaulter(t *testing.T) {
	hc, base := webhookServer()
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"3","operation":"CREATE",` +
		`"kind":{"group":"operator.example.com","version":"v1alpha1","kind":"OperatorConfig"},` +
		`"resource":{"group":"operator.example.com","version":"v1alpha1","resource":"operatorconfigs"},` +
		`"object":{"apiVersion":"operator.example.com/v1alpha1","kind":"OperatorConfig","metadata":{"name":"cluster"},"spec":{}}}}`
	resp, err := hc.Post(base+webhook.RetiredMutateOperatorConfigPath, "application/json", bytes.NewBufferString(review))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	if out.Response == nil || !out.Response.Allowed || len(out.Response.Patch) > 0 || out.Response.UID != "3" {
		t.Errorf("response %+v, want allowed, uid 3, no patch", out.Response)
	}
}
