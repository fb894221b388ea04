package webhook

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/internal/validation"
)

// The OperatorConfig webhooks fail open (failurePolicy=ignore): the
// bootstrap initContainer creates the OperatorConfig before the manager, and
// so its webhook server, first runs. The schema's defaults and CEL rules
// still hold, and the manager reports what only the webhook checks as
// Degraded, running on defaults meanwhile.
// +kubebuilder:webhook:path=/mutate-operator-example-com-v1alpha1-operatorconfig,mutating=true,failurePolicy=ignore,sideEffects=None,groups=operator.example.com,resources=operatorconfigs,verbs=create;update,versions=v1alpha1,name=moperatorconfig.operator.example.com,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5
// +kubebuilder:webhook:path=/validate-operator-example-com-v1alpha1-operatorconfig,mutating=false,failurePolicy=ignore,sideEffects=None,groups=operator.example.com,resources=operatorconfigs,verbs=create;update,versions=v1alpha1,name=voperatorconfig.operator.example.com,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5

// OperatorConfigWebhook defaults and validates the OperatorConfig.
type OperatorConfigWebhook struct {
	// Namespace is the operator's namespace, where operands may not go.
	Namespace string
}

var (
	_ admission.Defaulter[*operatorv1alpha1.OperatorConfig] = &OperatorConfigWebhook{}
	_ admission.Validator[*operatorv1alpha1.OperatorConfig] = &OperatorConfigWebhook{}
)

// Default spells out every default in the spec.
func (w *OperatorConfigWebhook) Default(_ context.Context, c *operatorv1alpha1.OperatorConfig) error {
	DefaultOperatorConfig(c)
	return nil
}

// DefaultOperatorConfig fills every omitted spec field with its default. It
// is idempotent.
func DefaultOperatorConfig(c *operatorv1alpha1.OperatorConfig) {
	c.Spec = opconfig.Complete(c.Spec)
}

// ValidateCreate checks a new OperatorConfig.
func (w *OperatorConfigWebhook) ValidateCreate(_ context.Context, c *operatorv1alpha1.OperatorConfig) (admission.Warnings, error) {
	return nil, w.validate(c)
}

// ValidateUpdate checks a changed OperatorConfig and warns when operands
// are about to move.
func (w *OperatorConfigWebhook) ValidateUpdate(_ context.Context, old, c *operatorv1alpha1.OperatorConfig) (admission.Warnings, error) {
	var warnings admission.Warnings
	if old.Spec.Guestbook.Namespace != c.Spec.Guestbook.Namespace {
		warnings = append(warnings, fmt.Sprintf(
			"spec.guestbook.namespace changed from %q to %q: Guestbook operands are recreated in the new namespace",
			old.Spec.Guestbook.Namespace, c.Spec.Guestbook.Namespace))
	}
	return warnings, w.validate(c)
}

// ValidateDelete allows the delete; the operator then keeps the last
// configuration it accepted.
func (w *OperatorConfigWebhook) ValidateDelete(context.Context, *operatorv1alpha1.OperatorConfig) (admission.Warnings, error) {
	return admission.Warnings{"the operator keeps running on the last configuration it accepted until an OperatorConfig named cluster exists again"}, nil
}

func (w *OperatorConfigWebhook) validate(c *operatorv1alpha1.OperatorConfig) error {
	if errs := validation.ValidateOperatorConfig(c, w.Namespace); len(errs) > 0 {
		return apierrors.NewInvalid(operatorv1alpha1.GroupVersion.WithKind("OperatorConfig").GroupKind(), c.Name, errs)
	}
	return nil
}
