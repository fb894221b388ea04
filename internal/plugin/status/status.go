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

// Report is what status shows; -o json and -o yaml print it as it is.
// A value the cluster does not have is empty (the text shows "-").
type Report struct {
	Operator Operator `json:"operator"`
	// Webhooks are the operator's webhooks and conversion webhooks, each
	// with where the API server sends its calls.
	Webhooks []Webhook `json:"webhooks"`
	// Certificate is the webhook serving certificate.
	Certificate Certificate `json:"certificate"`
	Drinks      []Drink     `json:"drinks"`
	// DrinksByAuthoredVersion counts the Drinks by the version they were
	// written in ("-" for none recorded yet).
	DrinksByAuthoredVersion map[string]int `json:"drinksByAuthoredVersion"`
	Guestbooks              []Guestbook    `json:"guestbooks"`
	// OperatorConfig is the OperatorConfig cluster; nil when missing.
	OperatorConfig *OperatorConfig `json:"operatorConfig"`
}

// Operator is the manager's Deployment, pods and leader.
type Operator struct {
	Namespace       string `json:"namespace"`
	DeploymentFound bool   `json:"deploymentFound"`
	Pods            []Pod  `json:"pods"`
	// Leader is the pod holding the leader election Lease.
	Leader string `json:"leader,omitempty"`
}

// Pod is one manager pod.
type Pod struct {
	Name  string `json:"name"`
	Phase string `json:"phase,omitempty"`
	Ready string `json:"ready,omitempty"`
	Node  string `json:"node,omitempty"`
}

// Webhook is one webhook and where it is served.
type Webhook struct {
	Name string `json:"name"`
	// Service is namespace/name of the Service; URL is set instead when
	// the configuration names one.
	Service string `json:"service,omitempty"`
	URL     string `json:"url,omitempty"`
}

// Certificate is the webhook serving certificate, or what is wrong with
// it.
type Certificate struct {
	Secret   string     `json:"secret,omitempty"`
	NotAfter *time.Time `json:"notAfter,omitempty"`
	// DaysLeft is negative once it expired; absent with Problem, so that
	// a script never reads a missing certificate as expiring today.
	DaysLeft *int   `json:"daysLeft,omitempty"`
	Problem  string `json:"problem,omitempty"`
}

// Drink is one Drink: the version it was written in, the layout of its
// ConfigMap, its Ready condition, and why the operator leaves it alone.
type Drink struct {
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	AuthoredVersion string `json:"authoredVersion,omitempty"`
	Layout          string `json:"layout,omitempty"`
	Ready           string `json:"ready,omitempty"`
	LeftAlone       string `json:"leftAlone,omitempty"`
}

// Guestbook is one Guestbook and its roles.
type Guestbook struct {
	Name             string   `json:"name"`
	OperandNamespace string   `json:"operandNamespace,omitempty"`
	Active           string   `json:"active,omitempty"`
	Standby          []string `json:"standby,omitempty"`
	Ready            string   `json:"ready,omitempty"`
}

// OperatorConfig is the effective state of the OperatorConfig cluster.
type OperatorConfig struct {
	ManagementState string   `json:"managementState,omitempty"`
	Ready           string   `json:"ready,omitempty"`
	Customized      []string `json:"customized,omitempty"`
}

// Read reads the installation in operatorNS and the Drinks of namespace
// ("" for all). now dates the certificate's expiry.
func Read(ctx context.Context, c client.Reader, operatorNS, namespace string, now time.Time) (*Report, error) {
	s, err := doctor.Read(ctx, c, operatorNS, namespace)
	if err != nil {
		return nil, err
	}
	r := &Report{
		Operator:                Operator{Namespace: operatorNS, DeploymentFound: s.Install.Found, Pods: []Pod{}},
		Webhooks:                []Webhook{},
		Certificate:             certificate(s.CertSecret, now),
		Drinks:                  []Drink{},
		DrinksByAuthoredVersion: map[string]int{},
		Guestbooks:              []Guestbook{},
	}
	for _, p := range s.Pods {
		phase := string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		r.Operator.Pods = append(r.Operator.Pods, Pod{Name: p.Name, Phase: phase, Ready: podReady(&p), Node: p.Spec.NodeName})
	}
	if s.Lease != nil && s.Lease.Spec.HolderIdentity != nil {
		r.Operator.Leader, _, _ = strings.Cut(*s.Lease.Spec.HolderIdentity, "_")
	}
	for _, h := range s.Webhooks() {
		w := Webhook{Name: h.Name, URL: h.URL}
		if h.Service != nil {
			w.Service = h.Service.Namespace + "/" + h.Service.Name
		}
		r.Webhooks = append(r.Webhooks, w)
	}
	for i := range s.Drinks {
		d := &s.Drinks[i]
		out := Drink{Namespace: d.Namespace, Name: d.Name, AuthoredVersion: d.Status.AuthoredVersion,
			Ready: condition(d.Status.Conditions, drinksv1.ConditionReady), LeftAlone: s.Exempt(d)}
		if cm := configMap(s, d); cm != nil {
			out.Layout = cm.Annotations[names.LayoutAnnotation]
		}
		r.Drinks = append(r.Drinks, out)
		r.DrinksByAuthoredVersion[or(d.Status.AuthoredVersion)]++
	}
	if _, ok := s.CRDs[names.GuestbookCRD]; ok {
		gbs := &webappv1.GuestbookList{}
		if err := c.List(ctx, gbs); err != nil {
			return nil, fmt.Errorf("listing Guestbooks: %w", err)
		}
		for _, g := range gbs.Items {
			r.Guestbooks = append(r.Guestbooks, Guestbook{Name: g.Name, OperandNamespace: g.Status.OperandNamespace,
				Active: g.Status.Active, Standby: g.Status.Standby, Ready: condition(g.Status.Conditions, "Ready")})
		}
	}
	if oc := s.OperatorConfig; oc != nil {
		r.OperatorConfig = &OperatorConfig{Ready: condition(oc.Status.Conditions, "Ready")}
		if e := oc.Status.Effective; e != nil {
			r.OperatorConfig.ManagementState = string(e.ManagementState)
			r.OperatorConfig.Customized = e.Customized
		}
	}
	return r, nil
}

// Text writes the report as tables, one section each.
func Text(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer func() { _ = tw.Flush() }()
	section := func(title string) { fmt.Fprintf(tw, "\n== %s\n", title) }

	section("The operator (namespace " + r.Operator.Namespace + ")")
	if !r.Operator.DeploymentFound {
		fmt.Fprintf(tw, "  no Deployment %s\n", names.Deployment)
	}
	fmt.Fprintln(tw, "  POD\tPHASE\tREADY\tNODE\t")
	for _, p := range r.Operator.Pods {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", p.Name, or(p.Phase), or(p.Ready), or(p.Node))
	}
	leader := "none (no Lease)"
	if r.Operator.Leader != "" {
		leader = r.Operator.Leader
	}
	fmt.Fprintf(tw, "  leader: %s\n", leader)

	section("Webhooks served")
	for _, h := range r.Webhooks {
		to := h.URL
		if h.Service != "" {
			to = "service " + h.Service
		}
		fmt.Fprintf(tw, "  %s\t%s\t\n", h.Name, to)
	}
	fmt.Fprintf(tw, "  certificate: %s\n", r.Certificate.text())

	section("Drinks")
	fmt.Fprintln(tw, "  NAMESPACE\tNAME\tAUTHORED\tLAYOUT\tREADY\t")
	for _, d := range r.Drinks {
		ready := or(d.Ready)
		if d.LeftAlone != "" {
			ready += " (" + d.LeftAlone + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", d.Namespace, d.Name, or(d.AuthoredVersion), or(d.Layout), ready)
	}
	var counts []string
	for _, v := range append(drinksversions.Drinks.Names(), "-") {
		if n := r.DrinksByAuthoredVersion[v]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", v, n))
		}
	}
	fmt.Fprintf(tw, "  by authored version: %s\n", or(strings.Join(counts, ", ")))

	section("Guestbooks")
	fmt.Fprintln(tw, "  NAME\tNAMESPACE\tACTIVE\tSTANDBY\tREADY\t")
	for _, g := range r.Guestbooks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", g.Name, or(g.OperandNamespace), or(g.Active),
			or(strings.Join(g.Standby, ",")), or(g.Ready))
	}

	section("OperatorConfig " + operatorv1alpha1.SingletonName)
	oc := r.OperatorConfig
	if oc == nil {
		fmt.Fprintln(tw, "  missing")
		return
	}
	customized := "none"
	if len(oc.Customized) > 0 {
		customized = strings.Join(oc.Customized, ", ")
	}
	fmt.Fprintf(tw, "  state: %s\tReady: %s\tcustomized: %s\n", or(oc.ManagementState), or(oc.Ready), customized)
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
	return ""
}

func podReady(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return string(c.Status)
		}
	}
	return ""
}

func or(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// certificate reads the serving certificate of the Secret (tls.crt):
// when it expires, and how far away that is.
func certificate(s *corev1.Secret, now time.Time) Certificate {
	if s == nil {
		return Certificate{Problem: "no certificate Secret"}
	}
	c := Certificate{Secret: s.Namespace + "/" + s.Name}
	b, _ := pem.Decode(s.Data["tls.crt"])
	if b == nil {
		c.Problem = "secret " + c.Secret + " holds no tls.crt"
		return c
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		c.Problem = "tls.crt does not parse: " + err.Error()
		return c
	}
	notAfter := cert.NotAfter.UTC()
	c.NotAfter = &notAfter
	days := int(notAfter.Sub(now).Hours() / 24)
	if notAfter.Before(now) && days == 0 {
		days = -1
	}
	c.DaysLeft = &days
	return c
}

// text describes the certificate as status prints it.
func (c Certificate) text() string {
	if c.Problem != "" {
		return c.Problem
	}
	when := fmt.Sprintf("in %d days", *c.DaysLeft)
	if *c.DaysLeft < 0 {
		when = "EXPIRED"
	}
	return fmt.Sprintf("secret %s, expires %s (%s)", c.Secret, c.NotAfter.Format(time.RFC3339), when)
}
