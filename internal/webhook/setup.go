package webhook

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/example/myoperator/apis/drinks/conversion"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// Setup registers every webhook of the operator on the manager's webhook
// server.
func Setup(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &drinksv1.Drink{}).
		WithConverter(conversion.NewConverter()).
		Complete(); err != nil {
		return fmt.Errorf("drink webhooks: %w", err)
	}
	return nil
}
