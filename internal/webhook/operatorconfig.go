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

// The OperatorConfig webhook fails open (failurePolicy=ignore): the
// bootstrap initContainer creates the OperatorConfig before the manager, and
// so its webhook server, first runs. The schema and its CEL rules still
// hold, and the manager reports what only the webhook checks as Degraded,
// running on the last accepted configuration meanwhile.
//
// There is no defaulting webhook: the spec holds only what users chose, and
// an omitted field follows the running release's default
// (opconfig.Effective), which a default written into the spec could not.
// +kubebuilder:webhook:path=/validate-operator-example-com-v1alpha1-operatorconfig,mutating=false,failurePolicy=ignore,sideEffects=None,groups=operator.example.com,resources=operatorconfigs,verbs=create;update,versions=v1alpha1,name=voperatorconfig.operator.example.com,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5

// OperatorConfigWebhook validates the OperatorConfig.
type OperatorConfigWebhook struct {
	// Namespace is the operator's namespace, where operands may not go.
	Namespace string
}

var _ admission.Validator[*operatorv1alpha1.OperatorConfig] = &OperatorConfigWebhook{}

// ValidateCreate checks a new OperatorConfig.
func (w *OperatorConfigWebhook) ValidateCreate(_ context.Context, c *operatorv1alpha1.OperatorConfig) (admission.Warnings, error) {
	return nil, w.validate(c)
}

// ValidateUpdate checks a changed OperatorConfig and warns when operands
// are about to move.
func (w *OperatorConfigWebhook) ValidateUpdate(_ context.Context, old, c *operatorv1alpha1.OperatorConfig) (admission.Warnings, error) {
	var warnings admission.Warnings
	// An omitted namespace is the default one: setting the default, or
	// removing it, moves nothing.
	was, is := opconfig.Complete(old.Spec).Guestbook.Namespace, opconfig.Complete(c.Spec).Guestbook.Namespace
	if was != is {
		warnings = append(warnings, fmt.Sprintf(
			"spec.guestbook.namespace changed from %q to %q: Guestbook operands are recreated in the new namespace", was, is))
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
