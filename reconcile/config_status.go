package reconcile

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/opconfig"
)

// effectiveConfig reads the configuration a reconcile of obj runs with and
// reports a missing OperatorConfig in obj's conditions, with an event when
// that is new. An error means the configuration could not be read: acting on
// a guess could undo what the accepted one says (Unmanaged, a namespace),
// so the caller retries instead.
func effectiveConfig(ctx context.Context, c client.Reader, namespace string, recorder events.EventRecorder,
	obj runtime.Object, conds *[]metav1.Condition, generation int64) (operatorv1alpha1.EffectiveConfig, error) {
	res, err := opconfig.LoadResult(ctx, c, namespace)
	if err != nil {
		return res.Effective, err
	}
	if setConfigMissingCondition(conds, generation, res) {
		recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonConfigMissing, "UseAcceptedConfig",
			"OperatorConfig cluster is missing: running on the %s", res.Source())
	}
	return res.Effective, nil
}

// ConditionConfigDegraded is set on Drinks and Guestbooks while the
// OperatorConfig is missing: the operator keeps running them on the last
// accepted configuration, and each object says so.
const ConditionConfigDegraded = "ConfigDegraded"

// ReasonConfigMissing is the reason of ConditionConfigDegraded and of the
// event that announces it.
const ReasonConfigMissing = "ConfigMissing"

// setConfigMissingCondition reports whether the OperatorConfig is missing
// on an object the operator manages. It returns true when the condition is
// new, so that the caller records an event only then.
func setConfigMissingCondition(conds *[]metav1.Condition, generation int64, res opconfig.Result) bool {
	if res.State != opconfig.StateMissing {
		meta.RemoveStatusCondition(conds, ConditionConfigDegraded)
		return false
	}
	isNew := !meta.IsStatusConditionTrue(*conds, ConditionConfigDegraded)
	setCondition(conds, generation, ConditionConfigDegraded, metav1.ConditionTrue, ReasonConfigMissing,
		"OperatorConfig cluster is missing: running on the "+res.Source()+"; create it again (the bootstrap does when the operator restarts)")
	return isNew
}

func setConfigStateMetric(s opconfig.State) {
	for _, st := range opconfig.States {
		v := 0.0
		if st == s {
			v = 1
		}
		configState.WithLabelValues(string(st)).Set(v)
	}
}
