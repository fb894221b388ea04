package opconfig

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/validation"
)

// State says where the effective configuration comes from.
type State string

const (
	// StateAccepted means the OperatorConfig is valid and in force.
	StateAccepted State = "Accepted"
	// StateInvalid means the OperatorConfig breaks a rule (its webhook was
	// bypassed); the operator keeps the last accepted configuration.
	StateInvalid State = "Invalid"
	// StateMissing means there is no OperatorConfig; the operator keeps the last
	// accepted configuration.
	StateMissing State = "Missing"
)

// States lists every State, for metrics that report one series per state.
var States = []State{StateAccepted, StateInvalid, StateMissing}

// Record is the last configuration the operator accepted and the
// OperatorConfig it came from. It tells an edit of that OperatorConfig (same
// UID, a field changed since) from a new one (another UID, for example
// recreated by the bootstrap with defaults).
type Record struct {
	// SourceUID is the UID of the accepted OperatorConfig.
	SourceUID types.UID `json:"sourceUID"`
	// Spec is its spec when it was accepted, defaults filled in (so that an
	// edit of guestbook.namespace is told from a default that stays).
	Spec operatorv1alpha1.OperatorConfigSpec `json:"spec"`
	// Effective is the configuration the operator ran with.
	Effective operatorv1alpha1.EffectiveConfig `json:"effective"`
}

// Result is the configuration the operator runs with and why.
type Result struct {
	Effective operatorv1alpha1.EffectiveConfig
	State     State
	// Invalid says what is wrong with the OperatorConfig (StateInvalid).
	Invalid field.ErrorList
	// Kept explains each field kept from the record although the
	// OperatorConfig says otherwise (it is not the one accepted before).
	Kept []string
	// FromRecord is true when a missing or invalid OperatorConfig left the
	// operator on its last accepted configuration (false: on defaults, none
	// was ever accepted).
	FromRecord bool
	// Record is what to persist when State is StateAccepted.
	Record *Record
	// Config is the OperatorConfig read by LoadResult, nil when missing.
	Config *operatorv1alpha1.OperatorConfig
}

// Defaults is the configuration of DefaultSpec: every value the running
// release's default.
func Defaults() operatorv1alpha1.EffectiveConfig {
	return Effective(operatorv1alpha1.OperatorConfigSpec{})
}

// Complete fills every omitted field of a spec with its default.
func Complete(s operatorv1alpha1.OperatorConfigSpec) operatorv1alpha1.OperatorConfigSpec {
	d := operatorv1alpha1.DefaultSpec()
	fill(&s.ManagementState, d.ManagementState)
	fill(&s.LogLevel, d.LogLevel)
	fill(&s.Drinks.DefaultSize, d.Drinks.DefaultSize)
	fill(&s.Guestbook.Namespace, d.Guestbook.Namespace)
	fill(&s.Guestbook.Image, d.Guestbook.Image)
	return s
}

func fill[T ~string](v *T, def T) {
	if *v == "" {
		*v = def
	}
}

// source is where a value of the spec comes from: the user's when set.
func source[T ~string](v T) operatorv1alpha1.Source {
	if v == "" {
		return operatorv1alpha1.SourceDefault
	}
	return operatorv1alpha1.SourceUser
}

// Effective is the one place the configuration in effect is computed from
// a spec: each field the spec sets, the running release's default for each
// it leaves out, and where each value came from.
func Effective(spec operatorv1alpha1.OperatorConfigSpec) operatorv1alpha1.EffectiveConfig {
	s := Complete(spec)
	e := operatorv1alpha1.EffectiveConfig{
		ManagementState:    s.ManagementState,
		LogLevel:           s.LogLevel,
		DrinkDefaultSize:   s.Drinks.DefaultSize,
		GuestbookNamespace: s.Guestbook.Namespace,
		GuestbookImage:     s.Guestbook.Image,
		Sources: operatorv1alpha1.EffectiveSources{
			ManagementState:    source(spec.ManagementState),
			LogLevel:           source(spec.LogLevel),
			DrinkDefaultSize:   source(spec.Drinks.DefaultSize),
			GuestbookNamespace: source(spec.Guestbook.Namespace),
			GuestbookImage:     source(spec.Guestbook.Image),
		},
	}
	e.Customized = customized(e)
	return e
}

// customized lists the spec fields whose value in effect differs from the
// running release's default, by their path in the spec.
func customized(e operatorv1alpha1.EffectiveConfig) []string {
	d := Complete(operatorv1alpha1.OperatorConfigSpec{})
	var out []string
	for _, f := range []struct {
		path      string
		is, isDef string
	}{
		{"managementState", string(e.ManagementState), string(d.ManagementState)},
		{"logLevel", string(e.LogLevel), string(d.LogLevel)},
		{"drinks.defaultSize", string(e.DrinkDefaultSize), string(d.Drinks.DefaultSize)},
		{"guestbook.namespace", e.GuestbookNamespace, d.Guestbook.Namespace},
		{"guestbook.image", e.GuestbookImage, d.Guestbook.Image},
	} {
		if f.is != f.isDef {
			out = append(out, f.path)
		}
	}
	return out
}

// kept is a configuration the operator keeps from its record while the
// OperatorConfig cannot be used: every value is the kept one, and what is
// customized is measured against the running release's defaults (which
// may have changed since the record was written).
func kept(e operatorv1alpha1.EffectiveConfig) operatorv1alpha1.EffectiveConfig {
	k := operatorv1alpha1.SourceKept
	e.Sources = operatorv1alpha1.EffectiveSources{ManagementState: k, LogLevel: k, DrinkDefaultSize: k, GuestbookNamespace: k, GuestbookImage: k}
	e.Customized = customized(e)
	return e
}

// Resolve decides the configuration from the OperatorConfig c (nil when
// missing) and the record of the last accepted one (nil when none):
//
//   - missing or invalid c: the record's configuration (defaults without
//     one), nothing is accepted;
//   - valid c: its spec over the running release's defaults, except
//     guestbook.namespace, which moves operands (the old ones are
//     deleted): it changes only through an edit of the accepted
//     OperatorConfig (same UID, the field differs from the recorded spec).
//     A new OperatorConfig (another UID, for example recreated by the
//     bootstrap) keeps the recorded namespace, and Kept says so.
//     managementState is not kept: Managed is what a valid config says,
//     and resuming destroys nothing.
func Resolve(c *operatorv1alpha1.OperatorConfig, rec *Record, operatorNamespace string) Result {
	fallback := Result{Effective: Defaults()}
	if rec != nil {
		fallback = Result{Effective: kept(rec.Effective), FromRecord: true}
	}
	if c == nil {
		fallback.State = StateMissing
		return fallback
	}
	if errs := validation.ValidateOperatorConfig(c, operatorNamespace); len(errs) > 0 {
		fallback.State, fallback.Invalid = StateInvalid, errs
		return fallback
	}
	spec := Complete(c.Spec)
	out := Result{State: StateAccepted, Effective: Effective(c.Spec)}
	if rec != nil {
		edited := func(was, is string) bool { return c.UID == rec.SourceUID && was != is }
		if e := &out.Effective; e.GuestbookNamespace != rec.Effective.GuestbookNamespace &&
			!edited(rec.Spec.Guestbook.Namespace, spec.Guestbook.Namespace) {
			out.Kept = append(out.Kept, keptMessage("guestbook.namespace", spec.Guestbook.Namespace, rec.Effective.GuestbookNamespace))
			e.GuestbookNamespace = rec.Effective.GuestbookNamespace
			e.Sources.GuestbookNamespace = operatorv1alpha1.SourceKept
			e.Customized = customized(*e)
		}
	}
	out.Record = &Record{SourceUID: c.UID, Spec: spec, Effective: out.Effective}
	return out
}

func keptMessage(field, spec, kept string) string {
	return fmt.Sprintf("spec.%s is %q, but this OperatorConfig is not the one the operator accepted %q from (it was recreated): %q stays in force until spec.%s of this OperatorConfig is edited",
		field, spec, kept, kept, field)
}

// LoadResult reads the OperatorConfig "cluster" through r and takes the
// record from records, and resolves them. An error means one of them could
// not be read; the result is then the record's configuration when it was
// read, else the defaults. A record that is not usable counts as none
// (the OperatorConfig reconciler reports it and writes it anew).
func LoadResult(ctx context.Context, r client.Reader, records *Records, operatorNamespace string) (Result, error) {
	if records == nil {
		// A caller without a shared Records (a test of one reconciler)
		// reads the record through r, each time.
		records = &Records{Reader: r, Namespace: operatorNamespace}
	}
	rec, recErr := records.Get(ctx)
	c := &operatorv1alpha1.OperatorConfig{}
	err := r.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, c)
	switch {
	case apierrors.IsNotFound(err):
		c = nil
	case err != nil:
		res := Resolve(nil, rec, operatorNamespace)
		return res, fmt.Errorf("reading OperatorConfig %s: %w", operatorv1alpha1.SingletonName, err)
	}
	res := Resolve(c, rec, operatorNamespace)
	res.Config = c
	return res, recErr
}

// Load returns the effective configuration (LoadResult's). The error says
// why it is not the OperatorConfig as written, if it is not.
func Load(ctx context.Context, r client.Reader, records *Records, operatorNamespace string) (operatorv1alpha1.EffectiveConfig, error) {
	res, err := LoadResult(ctx, r, records, operatorNamespace)
	if err != nil {
		return res.Effective, err
	}
	switch res.State {
	case StateInvalid:
		return res.Effective, fmt.Errorf("OperatorConfig %s is invalid, running on the %s: %w",
			operatorv1alpha1.SingletonName, res.Source(), res.Invalid.ToAggregate())
	case StateMissing:
		return res.Effective, fmt.Errorf("OperatorConfig %s is missing, running on the %s", operatorv1alpha1.SingletonName, res.Source())
	}
	return res.Effective, nil
}

// Source names where a fallback configuration comes from, for messages.
func (r Result) Source() string {
	if r.FromRecord {
		return "last accepted configuration"
	}
	return "built-in defaults (no configuration was ever accepted)"
}
