package reconcile

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/apis/drinks/conversion"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// The empty patch below is a write of the Drink itself; the storage
// migration holds the same right.
// +kubebuilder:rbac:groups=example.com,resources=drinks,verbs=patch

// courseFieldsAlone: the Drink holds the course's fields of v1 (name,
// drink) without the fields they stand for (displayName, beverage). The
// mutating webhook fills those on every write, so only a Drink stored
// before this operator served the CRD is like that: one the course's
// operator stored. v1's printer columns (BEVERAGE) and every reader of the
// v1 fields would show it empty.
func courseFieldsAlone(t drinksversions.Table, d *drinksv1.Drink) bool {
	s := d.Spec.DeepCopy()
	conversion.AgreeCourseFields(t, s, nil)
	return !apiequality.Semantic.DeepEqual(*s, d.Spec)
}

// agreeCourseFields writes the Drink once, unchanged (an empty merge
// patch), so that the API server passes it through the mutating webhook,
// which fills v1's fields from the course's (DefaultDrinkIn). That write is
// this reconcile's one persist: its event brings the next reconcile, which
// renders the ConfigMap and the status as usual. done is false when the
// webhook filled nothing (a cluster without the operator's webhook
// configuration): the reconcile then goes on as for any Drink, and the
// next one tries again (a patch that changes nothing writes nothing to
// etcd and brings no event).
func (r *DrinkReconciler) agreeCourseFields(ctx context.Context, d *drinksv1.Drink) (done bool, err error) {
	before := d.ResourceVersion
	if err := r.Client.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte("{}"))); err != nil {
		return false, fmt.Errorf("writing Drink %s/%s stored in the course's form, for the webhook to fill v1's fields: %w", d.Namespace, d.Name, err)
	}
	if d.ResourceVersion == before || courseFieldsAlone(r.versions(), d) {
		ctrl.LoggerFrom(ctx).Info("a Drink stored in the course's form was written, but no webhook filled v1's fields; left as it is")
		return false, nil
	}
	ctrl.LoggerFrom(ctx).Info("filled v1's fields of a Drink stored in the course's form", "beverage", d.Spec.Beverage, "displayName", d.Spec.DisplayName)
	return true, nil
}
