package reconcile

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/opconfig"
)

// Reasons of the OperatorConfig's conditions.
const (
	ReasonRunning                = "Running"
	ReasonApplied                = "Applied"
	ReasonAsExpected             = "AsExpected"
	ReasonInvalidConfig          = "InvalidConfig"
	ReasonConfigKept             = "RecreatedConfigNotApplied"
	ReasonStorageMigrationFailed = "StorageMigrationFailed"
)

// setConfigReady: the operator runs with this config as written
// (Available and not Degraded), so kubectl wait --for=condition=Ready
// works; otherwise it carries Degraded's reason and message.
func setConfigReady(c *operatorv1alpha1.OperatorConfig) {
	deg := meta.FindStatusCondition(c.Status.Conditions, operatorv1alpha1.ConditionDegraded)
	if deg != nil && deg.Status == metav1.ConditionTrue {
		setCondition(&c.Status.Conditions, c.Generation, operatorv1alpha1.ConditionReady, metav1.ConditionFalse, deg.Reason, deg.Message)
		return
	}
	setCondition(&c.Status.Conditions, c.Generation, operatorv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonApplied,
		"the operator runs with this configuration; status.effective shows every value and its source")
}

// setConfigAvailable: the operator runs (with this config, the last
// accepted one or defaults).
func setConfigAvailable(c *operatorv1alpha1.OperatorConfig) {
	setCondition(&c.Status.Conditions, c.Generation, operatorv1alpha1.ConditionAvailable, metav1.ConditionTrue, ReasonRunning,
		"the operator is running with the effective configuration in status")
}

// setConfigProgressing: a config is applied in the reconcile that observes
// it, so nothing is left in progress once status is written.
func setConfigProgressing(c *operatorv1alpha1.OperatorConfig) {
	setCondition(&c.Status.Conditions, c.Generation, operatorv1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonApplied,
		"generation applied")
}

// setConfigDegraded: the spec breaks a rule (the operator then keeps the
// last accepted configuration), a recreated config asks to stop or move
// operands (which only an edit does), or the storage migration failed.
func setConfigDegraded(c *operatorv1alpha1.OperatorConfig, res opconfig.Result, migrationErr error) {
	switch {
	case res.State == opconfig.StateInvalid:
		setCondition(&c.Status.Conditions, c.Generation, operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonInvalidConfig,
			"running on the "+res.Source()+" (see status.effective) until the spec is valid: "+res.Invalid.ToAggregate().Error())
	case len(res.Kept) > 0:
		setCondition(&c.Status.Conditions, c.Generation, operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonConfigKept,
			strings.Join(res.Kept, "; "))
	case migrationErr != nil:
		setCondition(&c.Status.Conditions, c.Generation, operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonStorageMigrationFailed,
			"stored Drinks could not all be rewritten in the storage version; retrying: "+migrationErr.Error())
	default:
		setCondition(&c.Status.Conditions, c.Generation, operatorv1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected,
			"configuration valid")
	}
}
