package bootstrap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
)

// The release step patches OperatorConfig cluster and records an event.
// +kubebuilder:rbac:groups=operator.example.com,resources=operatorconfigs,verbs=get;patch,resourceNames=cluster

// ReleasedAnnotation is set on the OperatorConfig by the step that removes
// the defaults an earlier release wrote into its spec: what it removed and
// when, so that a reader (or a rollback) can see why the spec shrank.
const ReleasedAnnotation = "operator.example.com/released-defaults"

// ReasonDefaultsReleased is the reason of the event that step records.
const ReasonDefaultsReleased = "DefaultsReleased"

// writtenField is a spec field that earlier releases' bootstraps wrote, by
// its path in the spec's JSON, with how to read and clear it.
type writtenField struct {
	path  []string
	get   func(*operatorv1alpha1.OperatorConfigSpec) string
	clear func(*operatorv1alpha1.OperatorConfigSpec)
}

var writtenFields = []writtenField{
	{[]string{"managementState"},
		func(s *operatorv1alpha1.OperatorConfigSpec) string { return string(s.ManagementState) },
		func(s *operatorv1alpha1.OperatorConfigSpec) { s.ManagementState = "" }},
	{[]string{"logLevel"},
		func(s *operatorv1alpha1.OperatorConfigSpec) string { return string(s.LogLevel) },
		func(s *operatorv1alpha1.OperatorConfigSpec) { s.LogLevel = "" }},
	{[]string{"drinks", "defaultSize"},
		func(s *operatorv1alpha1.OperatorConfigSpec) string { return string(s.Drinks.DefaultSize) },
		func(s *operatorv1alpha1.OperatorConfigSpec) { s.Drinks.DefaultSize = "" }},
	{[]string{"guestbook", "namespace"},
		func(s *operatorv1alpha1.OperatorConfigSpec) string { return s.Guestbook.Namespace },
		func(s *operatorv1alpha1.OperatorConfigSpec) { s.Guestbook.Namespace = "" }},
	{[]string{"guestbook", "image"},
		func(s *operatorv1alpha1.OperatorConfigSpec) string { return s.Guestbook.Image },
		func(s *operatorv1alpha1.OperatorConfigSpec) { s.Guestbook.Image = "" }},
}

func (f writtenField) name() string { return strings.Join(f.path, ".") }

// EarlierDefaults is, for each release whose bootstrap wrote its defaults
// into the spec of the OperatorConfig it created, the value it wrote for
// each field (read from that release's DefaultSpec, at the commit
// RELEASES.md names). Releases from this one on create an empty spec, so
// this list never grows.
var EarlierDefaults = []struct {
	Release string
	Spec    map[string]string
}{
	{"v0.1.0", v01Defaults},
	{"v0.2.0", v01Defaults},
}

// v01Defaults: v0.1.0 and v0.2.0 wrote the same values.
var v01Defaults = map[string]string{
	"managementState":     "Managed",
	"logLevel":            "Info",
	"drinks.defaultSize":  "Medium",
	"guestbook.namespace": "guestbook",
	"guestbook.image":     "registry.k8s.io/pause:3.10",
}

// Released is one value the step removed from the spec, and the releases
// whose default it was.
type Released struct {
	Field, Value, Releases string
}

// releasable lists the spec values of c that an earlier release's
// bootstrap wrote and nobody has claimed since: the field is owned by the
// bootstrap's own Update entry in managedFields and by no other entry, or
// by no entry at all (the previous release's CRD schema defaulted it: a
// write of a user's would own it), and its value is the default of a
// release that wrote defaults. A value any other manager set (an edit, an
// apply, even of the same value) is the user's, and so is one that differs
// from every written default.
func releasable(c *operatorv1alpha1.OperatorConfig) ([]Released, error) {
	ours, others := &fieldpath.Set{}, &fieldpath.Set{}
	for _, e := range c.ManagedFields {
		if e.FieldsV1 == nil || e.Subresource != "" {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		if e.Manager == FieldOwner && e.Operation == metav1.ManagedFieldsOperationUpdate {
			ours = ours.Union(s)
		} else {
			others = others.Union(s)
		}
	}
	var out []Released
	for _, f := range writtenFields {
		v := f.get(&c.Spec)
		p := fieldpath.MakePathOrDie(append([]any{"spec"}, toAny(f.path)...)...)
		if v == "" || others.Has(p) {
			continue
		}
		var by []string
		for _, r := range EarlierDefaults {
			if r.Spec[f.name()] == v {
				by = append(by, r.Release)
			}
		}
		if len(by) > 0 {
			out = append(out, Released{Field: f.name(), Value: v, Releases: strings.Join(by, ", ")})
		}
	}
	return out, nil
}

// releaseRetryFor bounds how long a pod's bootstrap keeps releasing
// defaults that come back. Each new pod of a rollout runs the step again,
// and by the later ones fewer (then none) of the previous release's pods
// answer its webhook, so a pod need not wait long: in the Helm adoption of
// a v0.2.0 install the old OperatorConfig webhook entry outlives the
// install (a strategic merge keeps it; the new pods answer it without a
// patch), and a 2-minute wait held the first new pod that long.
const releaseRetryFor = 30 * time.Second

// ReleaseEarlierDefaultsWithin is ReleaseEarlierDefaults until the spec
// holds no such default, checking every interval for at most timeout.
// While an upgrade rolls out, the previous release's CRD (whose schema
// defaults the spec) or its defaulting webhook may still be in place and
// write the values back at once; once the new CRD and webhook
// configuration are applied, a release sticks. If they still refill it
// after timeout, the step says so and lets the pod start: the next start
// of a pod releases them.
func ReleaseEarlierDefaultsWithin(ctx context.Context, log logr.Logger, c client.Client, interval, timeout time.Duration) error {
	if interval <= 0 {
		interval = 2 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		if err := ReleaseEarlierDefaults(ctx, log, c); err != nil {
			return err
		}
		cfg := &operatorv1alpha1.OperatorConfig{}
		err := c.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, cfg)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		left, err := releasable(cfg)
		if err != nil || len(left) == 0 {
			return err
		}
		if !time.Now().Before(deadline) {
			log.Info("the previous release's CRD or webhook still writes its defaults back into the spec; they stay until the next start of a pod",
				"fields", describeFields(left), "waited", timeout.String())
			return nil
		}
		log.Info("the defaults came back (the previous release's CRD or webhook is still in place); releasing them again", "fields", describeFields(left))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func toAny(path []string) []any {
	out := make([]any, len(path))
	for i, p := range path {
		out[i] = p
	}
	return out
}

// ReleaseEarlierDefaults removes from OperatorConfig cluster's spec the
// defaults an earlier release's bootstrap wrote there (releasable), so
// that those fields follow the running release's defaults. It patches
// with the resourceVersion it read as a precondition, so an edit made
// meanwhile is never overwritten (the step reads again and decides
// again). It logs what it removed, notes it in the ReleasedAnnotation and
// records an event on the OperatorConfig.
func ReleaseEarlierDefaults(ctx context.Context, log logr.Logger, c client.Client) error {
	var released []Released
	var cfg *operatorv1alpha1.OperatorConfig
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg = &operatorv1alpha1.OperatorConfig{}
		if err := c.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, cfg); err != nil {
			return err
		}
		var err error
		if released, err = releasable(cfg); err != nil || len(released) == 0 {
			return err
		}
		before := cfg.DeepCopy()
		for _, r := range released {
			for _, f := range writtenFields {
				if f.name() == r.Field {
					f.clear(&cfg.Spec)
				}
			}
		}
		if cfg.Annotations == nil {
			cfg.Annotations = map[string]string{}
		}
		cfg.Annotations[ReleasedAnnotation] = describe(released, time.Now())
		return c.Patch(ctx, cfg, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner))
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil // nothing to release; the next step creates it
	case err != nil:
		return fmt.Errorf("removing the defaults an earlier release wrote into OperatorConfig %s: %w", operatorv1alpha1.SingletonName, err)
	case len(released) == 0:
		log.Info("no default of an earlier release in the spec", "name", cfg.Name)
		return nil
	}
	msg := "removed from spec the defaults an earlier release wrote, so that they follow this release's defaults (status.effective shows them): " + describeFields(released)
	log.Info(msg, "name", cfg.Name, "resourceVersion", cfg.ResourceVersion)
	// The event is a courtesy: the annotation already records it.
	if err := recordEvent(ctx, c, cfg, msg); err != nil {
		log.Error(err, "recording the event; the annotation "+ReleasedAnnotation+" says the same")
	}
	return nil
}

func describeFields(released []Released) string {
	parts := make([]string, 0, len(released))
	for _, r := range released {
		parts = append(parts, fmt.Sprintf("spec.%s %q (the default of %s)", r.Field, r.Value, r.Releases))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func describe(released []Released, at time.Time) string {
	return at.UTC().Format(time.RFC3339) + ": " + describeFields(released)
}

// recordEvent records a Normal event about the OperatorConfig, in the
// default namespace (where events about cluster-scoped objects go).
func recordEvent(ctx context.Context, c client.Client, cfg *operatorv1alpha1.OperatorConfig, note string) error {
	now := metav1.NewMicroTime(time.Now())
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{GenerateName: cfg.Name + "-", Namespace: metav1.NamespaceDefault},
		EventTime:           now,
		ReportingController: "example.com/myoperator-bootstrap",
		ReportingInstance:   FieldOwner,
		Action:              "ReleaseDefaults",
		Reason:              ReasonDefaultsReleased,
		Type:                corev1.EventTypeNormal,
		Note:                note,
		Regarding: corev1.ObjectReference{
			APIVersion: operatorv1alpha1.GroupVersion.String(), Kind: "OperatorConfig",
			Name: cfg.Name, UID: cfg.UID, ResourceVersion: cfg.ResourceVersion,
		},
	}
	return c.Create(ctx, ev)
}
