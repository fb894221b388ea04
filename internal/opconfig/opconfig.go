package opconfig

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/validation"
)

// Defaults is the configuration used when there is no usable OperatorConfig.
func Defaults() operatorv1alpha1.EffectiveConfig {
	return operatorv1alpha1.EffectiveConfig{
		ManagementState:    operatorv1alpha1.DefaultManagementState,
		LogLevel:           operatorv1alpha1.DefaultLogLevel,
		DrinkDefaultSize:   operatorv1alpha1.DefaultDrinkSize,
		GuestbookNamespace: operatorv1alpha1.DefaultGuestbookNamespace,
		GuestbookImage:     operatorv1alpha1.DefaultGuestbookImage,
	}
}

// Resolve returns the effective configuration of an OperatorConfig: its spec
// with defaults for every omitted field. When the spec breaks a rule, the
// result is the built-in defaults and the errors say why.
func Resolve(c *operatorv1alpha1.OperatorConfig, operatorNamespace string) (operatorv1alpha1.EffectiveConfig, field.ErrorList) {
	eff := Defaults()
	if errs := validation.ValidateOperatorConfig(c, operatorNamespace); len(errs) > 0 {
		return eff, errs
	}
	s := c.Spec
	if s.ManagementState != "" {
		eff.ManagementState = s.ManagementState
	}
	if s.LogLevel != "" {
		eff.LogLevel = s.LogLevel
	}
	if s.Drinks.DefaultSize != "" {
		eff.DrinkDefaultSize = s.Drinks.DefaultSize
	}
	if s.Guestbook.Namespace != "" {
		eff.GuestbookNamespace = s.Guestbook.Namespace
	}
	if s.Guestbook.Image != "" {
		eff.GuestbookImage = s.Guestbook.Image
	}
	return eff, nil
}

// Load reads the OperatorConfig "cluster" and resolves it. A missing object
// gives the defaults and no error; an invalid one gives the defaults and an
// error that says what is wrong.
func Load(ctx context.Context, r client.Reader, operatorNamespace string) (operatorv1alpha1.EffectiveConfig, error) {
	c := &operatorv1alpha1.OperatorConfig{}
	err := r.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, c)
	if apierrors.IsNotFound(err) {
		return Defaults(), nil
	}
	if err != nil {
		return Defaults(), fmt.Errorf("reading OperatorConfig %s: %w", operatorv1alpha1.SingletonName, err)
	}
	eff, errs := Resolve(c, operatorNamespace)
	if len(errs) > 0 {
		return eff, fmt.Errorf("OperatorConfig %s is invalid, running on defaults: %w", c.Name, errs.ToAggregate())
	}
	return eff, nil
}
