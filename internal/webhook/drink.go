package webhook

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/example/myoperator/apis/drinks/conversion"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/internal/validation"
)

// +kubebuilder:webhook:path=/mutate-example-com-v1-drink,mutating=true,failurePolicy=fail,sideEffects=None,groups=example.com,resources=drinks,verbs=create;update,versions=v1,name=mdrink.example.com,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5,reinvocationPolicy=IfNeeded
// +kubebuilder:webhook:path=/validate-example-com-v1-drink,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=drinks,verbs=create;update,versions=v1,name=vdrink.example.com,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5

// DrinkWebhook defaults and validates Drinks. The API server sends every
// version's requests in the hub version (matchPolicy Equivalent) and names
// the version the client used in requestKind.
type DrinkWebhook struct {
	// Config reads the OperatorConfig for the default size.
	Config client.Reader
	// Namespace is the operator's namespace.
	Namespace string
	// Records is the record of the accepted configuration, the fallback
	// while the OperatorConfig is missing or invalid; nil reads it through
	// Config.
	Records *opconfig.Records
	// versions is the table of Drink versions; empty (as the binary
	// leaves it) means drinksversions.Drinks. Only tests set another,
	// through export_test.go.
	versions drinksversions.Table
}

var (
	_ admission.Defaulter[*drinksv1.Drink] = &DrinkWebhook{}
	_ admission.Validator[*drinksv1.Drink] = &DrinkWebhook{}
)

// Default fills in the size and records the authored version.
func (w *DrinkWebhook) Default(ctx context.Context, d *drinksv1.Drink) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return err
	}
	var old *drinksv1.Drink
	if req.Operation == admissionv1.Update {
		old = &drinksv1.Drink{}
		if err := decodeOld(req, old); err != nil {
			return err
		}
	}
	DefaultDrinkIn(w.versions, d, old, requestVersion(req), func() drinksv1.Size {
		// A missing or invalid OperatorConfig must not block Drinks: Load
		// falls back to the last accepted configuration (else the built-in
		// defaults) and the OperatorConfig's status reports the problem.
		cfg, _ := opconfig.Load(ctx, w.Config, w.Records, w.Namespace)
		return drinksv1.Size(cfg.DrinkDefaultSize)
	})
	return nil
}

// DefaultDrinkIn defaults d as written through requestVersion, old being the
// stored object on update (nil on create), with the table of versions t
// (empty means drinksversions.Drinks), which says what requestVersion cannot
// express. It is idempotent.
//
//   - Fields the request version cannot express are kept from old: a client
//     of an older version may drop the conversion-data annotation, and must
//     not erase what a newer client wrote.
//   - The course's fields of v1 (name, drink) fill displayName and beverage,
//     and of a pair that differs the one the write changed wins
//     (conversion.AgreeCourseFields).
//   - An omitted size keeps the old size, else gets defaultSize(), which
//     is called only then: it reads the OperatorConfig from the API server,
//     a request that most writes (a size given or kept) do not need.
//   - The authored-version annotation becomes requestVersion when the spec
//     changes and is kept (or taken as written, for objects that never had
//     one) when it does not.
func DefaultDrinkIn(t drinksversions.Table, d, old *drinksv1.Drink, requestVersion string, defaultSize func() drinksv1.Size) {
	var oldSpec *drinksv1.DrinkSpec
	if old != nil {
		// Fields the request version has no field for are kept from old.
		conversion.CopySpecFields(&d.Spec, &old.Spec, t.OrDrinks().HubOnly(requestVersion))
		oldSpec = &old.Spec
	}
	// The course's names of displayName and beverage (v1's course form)
	// and the fields they stand for hold one value.
	conversion.AgreeCourseFields(t, &d.Spec, oldSpec)
	if d.Spec.Size == "" {
		if old != nil && old.Spec.Size != "" {
			d.Spec.Size = old.Spec.Size
		} else {
			d.Spec.Size = defaultSize()
		}
	}
	specChanged := true
	if old != nil {
		oldSpec := old.Spec.DeepCopy()
		if oldSpec.Size == "" {
			oldSpec.Size = d.Spec.Size
		}
		specChanged = !apiequality.Semantic.DeepEqual(*oldSpec, d.Spec)
	}
	authored, record := requestVersion, true
	if !specChanged {
		if v, ok := old.Annotations[drinksv1.AuthoredVersionAnnotation]; ok {
			authored = v
		} else if v, ok := d.Annotations[drinksv1.AuthoredVersionAnnotation]; ok {
			authored = v
		} else {
			// Written before versions were recorded and not changed now:
			// nothing is known, so nothing is recorded.
			record = false
		}
	}
	if !record {
		return
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[drinksv1.AuthoredVersionAnnotation] = authored
}

// ValidateCreate checks a new Drink.
func (w *DrinkWebhook) ValidateCreate(ctx context.Context, d *drinksv1.Drink) (admission.Warnings, error) {
	return w.validate(ctx, nil, d)
}

// ValidateUpdate checks a changed Drink; what did not change is not checked
// again (ratcheting, as the API server does for CRD rules).
func (w *DrinkWebhook) ValidateUpdate(ctx context.Context, old, d *drinksv1.Drink) (admission.Warnings, error) {
	return w.validate(ctx, old, d)
}

// ValidateDelete allows every delete.
func (w *DrinkWebhook) ValidateDelete(context.Context, *drinksv1.Drink) (admission.Warnings, error) {
	return nil, nil
}

// validate checks the hub form of a Drink written through any version
// against every v1 rule: the API server has checked only the rules of the
// version the client wrote in, and values kept in the conversion-data
// annotation reach v1 without any check.
func (w *DrinkWebhook) validate(ctx context.Context, old, d *drinksv1.Drink) (admission.Warnings, error) {
	versions := w.versions.OrDrinks()
	rules := validation.NewDrinkValidator(versions)
	version := versions.Hub().Name
	var warnings admission.Warnings
	if req, err := admission.RequestFromContext(ctx); err == nil {
		version = requestVersion(req)
		warnings = rules.Warnings(version)
	}
	if errs := rules.ValidateHub(ctx, old, d, version); len(errs) > 0 {
		return warnings, apierrors.NewInvalid(drinksv1.GroupVersion.WithKind("Drink").GroupKind(), d.Name, errs)
	}
	if v, ok := versions.Lookup(version); ok && v.Deprecated {
		deprecatedWrites.WithLabelValues("Drink", version).Inc()
	}
	return warnings, nil
}

// requestVersion is the API version the client wrote in.
func requestVersion(req admission.Request) string {
	if req.RequestKind != nil {
		return req.RequestKind.Version
	}
	return req.Kind.Version
}

// decodeOld decodes the stored object of an update request.
func decodeOld(req admission.Request, into client.Object) error {
	if len(req.OldObject.Raw) == 0 {
		return fmt.Errorf("update request %s has no old object", req.UID)
	}
	return jsonUnmarshal(req.OldObject.Raw, into)
}
