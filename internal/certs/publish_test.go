package certs_test

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/internal/certs"
	"github.com/example/myoperator/test/framework/certstest"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestCAPublisherPublishesTheCAAlone: on a real API server, the ConfigMap
// holds the serving Secret's ca.crt and nothing else of it (no tls.key,
// no ca.key), follows a new CA, and a publisher that starts again undoes
// an edit of the ConfigMap; before the Secret exists, nothing is written.
func TestCAPublisherPublishesTheCAAlone(t *testing.T) {
	_, _, c := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	const ns, cmName = "certs", "published-ca"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	publisher := func() *certs.CAPublisher {
		return &certs.CAPublisher{Reader: c, Writer: c, Secret: types.NamespacedName{Namespace: ns, Name: "serving"},
			ConfigMap: cmName, Labels: map[string]string{"app.kubernetes.io/managed-by": "myoperator"}, FieldOwner: "test", Log: logr.Discard()}
	}
	published := func() *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cmName}, cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	p := publisher()
	if err := p.PublishOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cmName}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("before the Secret exists: %v, want no ConfigMap", err)
	}
	secret := func(ca *certstest.CA) *corev1.Secret {
		t.Helper()
		leaf, err := ca.Issue("localhost")
		if err != nil {
			t.Fatal(err)
		}
		s := certstest.Secret(ns, "serving", "serving", "ca-issuer", ca, leaf)
		s.Data["ca.key"] = []byte("the CA's key, as the operator's own rotator keeps it")
		return s
	}
	first, err := certstest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	s := secret(first)
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	check := func(what string, want []byte) {
		t.Helper()
		if err := p.PublishOnce(ctx); err != nil {
			t.Fatal(err)
		}
		cm := published()
		if len(cm.Data) != 1 || cm.Data["ca.crt"] != string(want) || len(cm.BinaryData) != 0 {
			t.Errorf("%s: the ConfigMap holds %d keys (ca.crt equal: %v), want ca.crt alone, the Secret's", what, len(cm.Data)+len(cm.BinaryData), cm.Data["ca.crt"] == string(want))
		}
		if cm.Labels["app.kubernetes.io/managed-by"] != "myoperator" {
			t.Errorf("%s: labels %v", what, cm.Labels)
		}
	}
	check("issued", s.Data["ca.crt"])

	second, err := certstest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	renewed := secret(second)
	renewed.ResourceVersion = ""
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
		t.Fatal(err)
	}
	s.Data = renewed.Data
	if err := c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	check("after a new CA", s.Data["ca.crt"])

	cm := published()
	cm.Data["ca.crt"] = "someone else's CA"
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	p = publisher() // a new leader
	check("after an edit and a new leader", s.Data["ca.crt"])
}
