package reconcile

import (
	"context"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/logging"
	"github.com/example/myoperator/internal/migrate"
	"github.com/example/myoperator/internal/opconfig"
)

// OperatorConfigReconciler applies the OperatorConfig to the running
// operator (the log level at once; the other fields are read by each
// reconcile) and reports what the operator runs with.
type OperatorConfigReconciler struct {
	Client client.Client
	// Level is the zap level of the manager's logger.
	Level zap.AtomicLevel
	// Namespace is the operator's namespace.
	Namespace string
	// Migration is the storage migration's outcome, reported as Degraded.
	Migration *migrate.Status
	// MigrationDone triggers a reconcile when the migration finishes.
	MigrationDone <-chan event.GenericEvent
	// Elected is closed once this replica leads. Every replica applies the
	// log level to itself, but only the leader, which runs the migration,
	// writes status, so that replicas never disagree in it.
	Elected <-chan struct{}
}

// +kubebuilder:rbac:groups=operator.example.com,resources=operatorconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=operator.example.com,resources=operatorconfigs/status,verbs=get;update;patch

// Reconcile applies the configuration and writes status when it changed.
func (r *OperatorConfigReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	c := &operatorv1alpha1.OperatorConfig{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, c)
	if apierrors.IsNotFound(err) {
		// No OperatorConfig: run on defaults; there is no status to write.
		logging.SetLevel(r.Level, string(opconfig.Defaults().LogLevel))
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	eff, errs := opconfig.Resolve(c, r.Namespace)
	logging.SetLevel(r.Level, string(eff.LogLevel))
	ctrl.LoggerFrom(ctx).V(1).Info("configuration applied", "effective", eff)

	if !r.leading() {
		return ctrl.Result{}, nil
	}
	read := c.DeepCopy()
	c.Status.Effective = &eff
	c.Status.ObservedGeneration = c.Generation
	setConfigAvailable(c)
	setConfigProgressing(c)
	var migrationErr error
	if r.Migration != nil {
		_, migrationErr = r.Migration.Get()
	}
	setConfigDegraded(c, errs, migrationErr)
	return ctrl.Result{}, persistStatus(ctx, r.Client, read, c, func(c *operatorv1alpha1.OperatorConfig) any { return &c.Status })
}

func (r *OperatorConfigReconciler) leading() bool {
	if r.Elected == nil {
		return true
	}
	select {
	case <-r.Elected:
		return true
	default:
		return false
	}
}

// SetupWithManager registers the reconciler. It runs on every replica, not
// only the leader: each replica applies the log level to its own process.
func (r *OperatorConfigReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	everyReplica := false
	opts.NeedLeaderElection = &everyReplica
	b := ctrl.NewControllerManagedBy(mgr).
		For(&operatorv1alpha1.OperatorConfig{}).
		WithOptions(opts)
	if r.MigrationDone != nil {
		b = b.WatchesRawSource(source.Channel(r.MigrationDone, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}
