package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/opconfig"
)

// effectiveConfig reads the configuration a reconcile of obj runs with. An
// error means the configuration could not be read: acting on a guess could
// undo what the accepted one says (Unmanaged, a namespace), so the caller
// retries instead.
//
// A missing or invalid OperatorConfig is not reported on obj: obj's outcome
// does not change (the operator keeps the last accepted configuration), and
// saying it on every object would cost a status write and an event per
// Drink and Guestbook, twice per outage. The OperatorConfig reconciler says
// it once: in the OperatorConfig's status or on the record, in the log, an
// event and the myoperator_config_state metric.
func effectiveConfig(ctx context.Context, c client.Reader, records *opconfig.Records, namespace string, conds *[]metav1.Condition) (operatorv1alpha1.EffectiveConfig, error) {
	res, err := opconfig.LoadResult(ctx, c, records, namespace)
	if err != nil {
		return res.Effective, err
	}
	// Earlier releases set this condition while the OperatorConfig was
	// missing; it goes with the object's next status write.
	meta.RemoveStatusCondition(conds, ConditionConfigDegraded)
	return res.Effective, nil
}

// ConditionConfigDegraded is the condition earlier releases set on Drinks
// and Guestbooks while the OperatorConfig was missing; a reconcile removes
// it.
const ConditionConfigDegraded = "ConfigDegraded"

// ReasonConfigMissing is the reason of the event and the record's
// annotation that say the OperatorConfig is missing.
const ReasonConfigMissing = "ConfigMissing"

func setConfigStateMetric(s opconfig.State) {
	for _, st := range opconfig.States {
		v := 0.0
		if st == s {
			v = 1
		}
		configState.WithLabelValues(string(st)).Set(v)
	}
}
