package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/reconcile"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestRecordNeverTrustedBlindly: the record of the accepted configuration,
// written behind the operator's back (here by an admin, before the
// admission policy that forbids it), is checked as an OperatorConfig is.
// Each time both replicas restart, so that nothing in memory hides it:
//
//  1. data that is not JSON: Drinks still reconcile, the record is written
//     anew and a Warning event says what was wrong;
//  2. with the OperatorConfig missing, a record that decodes but names the
//     namespace default and another image: ignored, the Guestbook's
//     operands go to the default operand namespace with the default image;
//  3. the record stripped of the operator's label (the manager's cache,
//     which selects that label, no longer holds it; the record's own cache
//     and the reads of it go by name) and the OperatorConfig back: the
//     record is taken over and written anew, not created again and again.
func TestRecordNeverTrustedBlindly(t *testing.T) {
	env, cfg, c := testenv.Start(t, testenv.Options{Webhooks: true})
	ctx := context.Background()
	for _, ns := range []string{operatorNS, "team-a", "guestbook", "drinks"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, &operatorv1alpha1.OperatorConfig{
		ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName},
		Spec:       operatorv1alpha1.OperatorConfigSpec{Guestbook: operatorv1alpha1.GuestbookConfig{Namespace: "team-a"}},
	}); err != nil {
		t.Fatal(err)
	}
	r := &replicas{env: env, cfg: cfg}
	r.start(t)
	t.Cleanup(func() { r.cancel() })
	waitRecord(t, c, "the first accepted configuration", func(rec *opconfig.Record) string {
		if rec.Effective.GuestbookNamespace != "team-a" {
			return "guestbook namespace " + rec.Effective.GuestbookNamespace
		}
		return ""
	})

	// 1. Not JSON.
	r.stop(t)
	writeRecord(t, c, map[string]string{"accepted.json": "{not json"}, true)
	r.start(t)
	drink := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "drinks", Name: "tea"},
		Spec: drinksv1.DrinkSpec{DisplayName: "Tea", Beverage: "tea"}}
	if err := c.Create(ctx, drink); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		d := &drinksv1.Drink{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(drink), d); err != nil {
			return err.Error()
		}
		return wantCondition(d.Status.Conditions, drinksv1.ConditionReady, metav1.ConditionTrue, reconcile.ReasonConfigMapReady)
	})
	waitRecord(t, c, "written anew after data that is not JSON", func(*opconfig.Record) string { return "" })
	waitEventNote(t, c, reconcile.ReasonRecordUnusable, "does not decode")

	// 1b. Corrupted while the manager runs (a restore of an old backup, or
	// a write past the policy), the OperatorConfig unchanged: written anew
	// from it within seconds, not at its next change.
	corrupted := time.Now()
	writeRecord(t, c, map[string]string{"accepted.json": "{restored from an old backup"}, true)
	waitRecordWithin(t, c, 10*time.Second, "written anew while the OperatorConfig stays as it was", func(rec *opconfig.Record) string {
		if rec.Effective.GuestbookNamespace != "team-a" {
			return "guestbook namespace " + rec.Effective.GuestbookNamespace
		}
		return ""
	})
	t.Logf("a record corrupted while the manager ran was written anew in %s", time.Since(corrupted).Round(100*time.Millisecond))

	// 2. Forged: decodes, breaks the rules; the OperatorConfig is
	// missing, so the record is all the operator has.
	r.stop(t)
	deleteConfig(t, c)
	forged := opconfig.Resolve(&operatorv1alpha1.OperatorConfig{
		ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName, UID: "forged"},
		Spec:       operatorv1alpha1.OperatorConfigSpec{Guestbook: operatorv1alpha1.GuestbookConfig{Image: "evil.example/miner:1"}},
	}, nil, operatorNS).Record
	forged.Spec.Guestbook.Namespace, forged.Effective.GuestbookNamespace = "default", "default"
	raw, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	writeRecord(t, c, map[string]string{"accepted.json": string(raw)}, true)
	r.start(t)
	gb := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "gb"}, Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: "gb-config"}}
	if err := c.Create(ctx, gb); err != nil {
		t.Fatal(err)
	}
	operandUIDs(t, c, operatorv1alpha1.DefaultGuestbookNamespace, "gb")
	sts := &appsv1.StatefulSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: operatorv1alpha1.DefaultGuestbookNamespace, Name: "gb"}, sts); err != nil {
		t.Fatal(err)
	}
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != operatorv1alpha1.DefaultGuestbookImage {
		t.Errorf("the Guestbook runs %s, want the default %s, not the forged record's", img, operatorv1alpha1.DefaultGuestbookImage)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gb"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet default/gb: %v, want none in the forged record's namespace", err)
	}
	waitEventNote(t, c, reconcile.ReasonRecordUnusable, "effective.guestbook.namespace: Forbidden")

	// 3. Unlabelled, then the OperatorConfig is back.
	writeRecord(t, c, map[string]string{"accepted.json": string(raw)}, false)
	if err := c.Create(ctx, &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}); err != nil {
		t.Fatal(err)
	}
	waitConfig(t, c, "the recreated OperatorConfig Ready", func(oc *operatorv1alpha1.OperatorConfig) string {
		return wantCondition(oc.Status.Conditions, operatorv1alpha1.ConditionReady, metav1.ConditionTrue, reconcile.ReasonApplied)
	})
	oc := &operatorv1alpha1.OperatorConfig{}
	if err := c.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
		t.Fatal(err)
	}
	waitRecord(t, c, "taken over for the recreated OperatorConfig", func(rec *opconfig.Record) string {
		if rec.SourceUID != oc.UID {
			return fmt.Sprintf("source UID %s, want %s", rec.SourceUID, oc.UID)
		}
		return ""
	})
}

// TestRecordWritableOnlyByOperator: with config/admission-policy
// installed, an admin's create or change of the record is refused with a
// message that says whose it is; the operator's ServiceAccount, with a
// token of its own, writes it.
func TestRecordWritableOnlyByOperator(t *testing.T) {
	_, cfg, admin := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	for _, ns := range []string{operatorNS, "guestbook"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	installRBAC(ctx, t, admin)
	policies, err := manifests.Render("config/admission-policy")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range policies {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	// The operator's containers hold a token bound to their pod.
	operator, err := client.New(&rest.Config{Host: cfg.Host, BearerToken: podToken(ctx, t, cs, "myoperator-controller-manager-0"),
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The same ServiceAccount without a pod: a token minted for it
	// (kubectl create token), or an admin impersonating it (kubectl --as),
	// as whoever holds edit or admin in myoperator-system may.
	tr, err := cs.CoreV1().ServiceAccounts(operatorNS).CreateToken(ctx, names.ServiceAccount, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	minted, err := client.New(&rest.Config{Host: cfg.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}},
		client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	impersonating := rest.CopyConfig(cfg)
	impersonating.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + operatorNS + ":" + names.ServiceAccount}
	impersonator, err := client.New(impersonating, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	record := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: opconfig.RecordName,
			Labels: map[string]string{names.ManagedByLabel: names.ManagedByValue}}, Data: map[string]string{"accepted.json": "{}"}}
	}
	// The policy is enforced once the API server has loaded it.
	testenv.Eventually(t, 10*time.Second, func() string {
		err := admin.Create(ctx, record())
		if err == nil {
			_ = admin.Delete(ctx, record())
			return "the admin created the record"
		}
		if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only its ServiceAccount") {
			return "admin create: " + err.Error()
		}
		return ""
	})
	for who, c := range map[string]client.Client{"a token of the ServiceAccount bound to no pod": minted, "an admin impersonating the ServiceAccount": impersonator} {
		if err := c.Create(ctx, record()); err == nil || !strings.Contains(err.Error(), "with a token bound to one of its pods") {
			t.Errorf("%s creating the record: %v, want refused for want of a pod-bound token", who, err)
		}
	}
	if err := operator.Create(ctx, record()); err != nil {
		t.Fatalf("the operator's ServiceAccount creating its record: %v", err)
	}
	forged := record()
	forged.Data["accepted.json"] = `{"forged":true}`
	err = admin.Update(ctx, forged)
	if err == nil || !strings.Contains(err.Error(), "may not") {
		t.Errorf("the admin's update of the record: %v, want refused", err)
	}
	have := &corev1.ConfigMap{}
	if err := operator.Get(ctx, client.ObjectKeyFromObject(forged), have); err != nil {
		t.Fatal(err)
	}
	have.Data["accepted.json"] = `{"sourceUID":"x"}`
	if err := operator.Update(ctx, have); err != nil {
		t.Errorf("the operator's update of its record: %v", err)
	}
	// Another ConfigMap of the namespace is not the policy's business.
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: "someone-elses"}}
	if err := admin.Create(ctx, other); err != nil {
		t.Errorf("an admin's other ConfigMap: %v", err)
	}
	if err := admin.Delete(ctx, record()); err != nil {
		t.Errorf("deleting the record (namespace cleanup): %v", err)
	}
}

// writeRecord replaces the record with data, labelled as the operator's or
// not, as an admin would.
func writeRecord(t *testing.T, c client.Client, data map[string]string, labelled bool) {
	t.Helper()
	// Written in place when it exists: a running manager recreates a
	// deleted record at once, so a delete and a create would race it.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm := &corev1.ConfigMap{}
		err := c.Get(context.Background(), client.ObjectKey{Namespace: operatorNS, Name: opconfig.RecordName}, cm)
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: opconfig.RecordName}}
		} else if err != nil {
			return err
		}
		cm.Data, cm.BinaryData = data, nil
		if labelled {
			metav1.SetMetaDataLabel(&cm.ObjectMeta, names.ManagedByLabel, names.ManagedByValue)
		} else {
			delete(cm.Labels, names.ManagedByLabel)
		}
		if cm.ResourceVersion == "" {
			return c.Create(context.Background(), cm)
		}
		return c.Update(context.Background(), cm)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitRecord waits until the record decodes, validates and passes cond.
func waitRecord(t *testing.T, c client.Client, what string, cond func(*opconfig.Record) string) {
	t.Helper()
	waitRecordWithin(t, c, 30*time.Second, what, cond)
}

// waitRecordWithin is waitRecord for at most timeout.
func waitRecordWithin(t *testing.T, c client.Client, timeout time.Duration, what string, cond func(*opconfig.Record) string) {
	t.Helper()
	testenv.Eventually(t, timeout, func() string {
		cm := &corev1.ConfigMap{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: operatorNS, Name: opconfig.RecordName}, cm); err != nil {
			return what + ": " + err.Error()
		}
		if cm.Labels[names.ManagedByLabel] != names.ManagedByValue {
			return what + ": not labelled as the operator's"
		}
		rec, err := opconfig.ReadRecord(context.Background(), c, operatorNS)
		if err != nil {
			return what + ": " + err.Error()
		}
		if rec == nil {
			return what + ": no record"
		}
		if msg := cond(rec); msg != "" {
			return what + ": " + msg
		}
		return ""
	})
}

// waitEventNote waits for an event of reason about the record whose note
// says want.
func waitEventNote(t *testing.T, c client.Client, reason, want string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		evs := &eventsv1.EventList{}
		if err := c.List(context.Background(), evs, client.InNamespace(operatorNS)); err != nil {
			return err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Regarding.Name == opconfig.RecordName && e.Reason == reason {
				if strings.Contains(e.Note, want) {
					return ""
				}
				seen = append(seen, e.Note)
			}
		}
		return fmt.Sprintf("no %s event about the record saying %q (seen: %q)", reason, want, seen)
	})
}
