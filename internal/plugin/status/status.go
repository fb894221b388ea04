package status

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/plugin/doctor"
)

// Print reads the installation in operatorNS and the Drinks of namespace
// ("" for all) and writes the summary. now dates the certificate's
// expiry.
func Print(ctx context.Context, w io.Writer, c client.Reader, operatorNS, namespace string, now time.Time) error {
	s, err := doctor.Read(ctx, c, operatorNS, namespace)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	section := func(title string) { fmt.Fprintf(tw, "\n== %s\n", title) }

	section("The operator (namespace " + operatorNS + ")")
	if !s.Install.Found {
		fmt.Fprintf(tw, "  no Deployment %s\n", names.Deployment)
	}
	fmt.Fprintln(tw, "  POD\tPHASE\tREADY\tNODE\t")
	for _, p := range s.Pods {
		phase := string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", p.Name, or(phase), podReady(&p), or(p.Spec.NodeName))
	}
	leader := "none (no Lease)"
	if s.Lease != nil && s.Lease.Spec.HolderIdentity != nil {
		leader, _, _ = strings.Cut(*s.Lease.Spec.HolderIdentity, "_")
	}
	fmt.Fprintf(tw, "  leader: %s\n", leader)

	section("Webhooks served")
	for _, h := range s.Webhooks() {
		to := h.URL
		if h.Service != nil {
			to = "service " + h.Service.Namespace + "/" + h.Service.Name
		}
		fmt.Fprintf(tw, "  %s\t%s\t\n", h.Name, to)
	}
	fmt.Fprintf(tw, "  certificate: %s\n", certificate(s.CertSecret, now))

	section("Drinks")
	fmt.Fprintln(tw, "  NAMESPACE\tNAME\tAUTHORED\tLAYOUT\tREADY\t")
	byVersion := map[string]int{}
	for i := range s.Drinks {
		d := &s.Drinks[i]
		layout := "-"
		if cm := configMap(s, d); cm != nil {
			layout = or(cm.Annotations[names.LayoutAnnotation])
		}
		ready := condition(d.Status.Conditions, drinksv1.ConditionReady)
		if why := s.Exempt(d); why != "" {
			ready += " (" + why + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", d.Namespace, d.Name, or(d.Status.AuthoredVersion), layout, ready)
		byVersion[or(d.Status.AuthoredVersion)]++
	}
	var counts []string
	for _, v := range append(drinksversions.Drinks.Names(), "-") {
		if n := byVersion[v]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", v, n))
		}
	}
	fmt.Fprintf(tw, "  by authored version: %s\n", or(strings.Join(counts, ", ")))

	section("Guestbooks")
	gbs := &webappv1.GuestbookList{}
	if _, ok := s.CRDs[names.GuestbookCRD]; ok {
		if err := c.List(ctx, gbs); err != nil {
			return fmt.Errorf("listing Guestbooks: %w", err)
		}
	}
	fmt.Fprintln(tw, "  NAME\tNAMESPACE\tACTIVE\tSTANDBY\tREADY\t")
	for _, g := range gbs.Items {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", g.Name, or(g.Status.OperandNamespace), or(g.Status.Active),
			or(strings.Join(g.Status.Standby, ",")), condition(g.Status.Conditions, "Ready"))
	}

	section("OperatorConfig " + operatorv1alpha1.SingletonName)
	oc := s.OperatorConfig
	if oc == nil {
		fmt.Fprintln(tw, "  missing")
		return nil
	}
	state, customized := "-", "none"
	if e := oc.Status.Effective; e != nil {
		state = string(e.ManagementState)
		if len(e.Customized) > 0 {
			customized = strings.Join(e.Customized, ", ")
		}
	}
	fmt.Fprintf(tw, "  state: %s\tReady: %s\tcustomized: %s\n", state, condition(oc.Status.Conditions, "Ready"), customized)
	return nil
}

func configMap(s *doctor.State, d *drinksv1.Drink) *corev1.ConfigMap {
	for i := range s.ConfigMaps {
		if cm := &s.ConfigMaps[i]; cm.Namespace == d.Namespace && cm.Name == d.Name {
			return cm
		}
	}
	return nil
}

func condition(conds []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return "-"
}

func podReady(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return string(c.Status)
		}
	}
	return "-"
}

func or(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// certificate describes the serving certificate of the Secret (tls.crt):
// when it expires, and how far away that is.
func certificate(s *corev1.Secret, now time.Time) string {
	if s == nil {
		return "no certificate Secret"
	}
	b, _ := pem.Decode(s.Data["tls.crt"])
	if b == nil {
		return "secret " + s.Namespace + "/" + s.Name + " holds no tls.crt"
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return "tls.crt does not parse: " + err.Error()
	}
	left := c.NotAfter.Sub(now)
	when := fmt.Sprintf("in %d days", int(left.Hours()/24))
	if left < 0 {
		when = "EXPIRED"
	}
	return fmt.Sprintf("secret %s/%s, expires %s (%s)", s.Namespace, s.Name, c.NotAfter.UTC().Format(time.RFC3339), when)
}
