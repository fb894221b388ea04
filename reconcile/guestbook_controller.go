package reconcile

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/opconfig"
)

// GuestbookReconciler runs each Guestbook as an active/standby application
// in the operand namespace: a StatefulSet of size pods mounting the
// Guestbook's ConfigMap, exactly one Ready pod labelled active, the others
// standby, and a Service that selects the active pod.
type GuestbookReconciler struct {
	Client client.Client
	// APIReader reads what the cache does not hold: a ConfigMap the user
	// created, which carries none of the operator's labels.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Namespace string
}

// +kubebuilder:rbac:groups=webapp.my.domain,resources=guestbooks,verbs=get;list;watch
// +kubebuilder:rbac:groups=webapp.my.domain,resources=guestbooks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create

// Reconcile converges one Guestbook and persists its status once.
func (r *GuestbookReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	log := ctrl.LoggerFrom(ctx)
	g := &webappv1.Guestbook{}
	if err := r.Client.Get(ctx, req.NamespacedName, g); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !g.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector removes the operands
	}
	log.V(1).Info("reconciling Guestbook", "generation", g.Generation)
	read := g.DeepCopy()
	defer func() {
		retErr = kerrors.NewAggregate([]error{retErr, persistStatus(ctx, r.Client, read, g, func(g *webappv1.Guestbook) any { return &g.Status })})
	}()

	cfg, _ := opconfig.Load(ctx, r.Client, r.Namespace)
	if cfg.ManagementState == operatorv1alpha1.Unmanaged {
		setGuestbookUnmanaged(g)
		return ctrl.Result{}, nil
	}
	ns := cfg.GuestbookNamespace
	if err := r.ensureNamespace(ctx, ns); err != nil {
		return r.failed(g, read, "NamespaceFailed", err)
	}
	if err := r.ensureConfigMap(ctx, g, ns); err != nil {
		return r.failed(g, read, "ConfigMapFailed", err)
	}
	sts, err := r.ensureStatefulSet(ctx, g, ns, cfg.GuestbookImage)
	if err != nil {
		return r.failed(g, read, "StatefulSetFailed", err)
	}
	if err := r.ensureService(ctx, g, ns); err != nil {
		return r.failed(g, read, "ServiceFailed", err)
	}
	roles, err := r.assignRoles(ctx, g, sts)
	if err != nil {
		return r.failed(g, read, "RoleAssignmentFailed", err)
	}
	if roles.failedOver() {
		r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, "Failover", "Promote",
			"pod %s promoted to active: %s", roles.active, roles.reason)
	}
	setGuestbookRoles(g, roles)
	// After a move of the operand namespace, the old operands go only once
	// the new ones are Ready.
	if roles.complete(g.Spec.Size) {
		if err := r.removeStaleOperands(ctx, g, ns); err != nil {
			return r.failed(g, read, "CleanupFailed", err)
		}
	}
	return ctrl.Result{}, nil
}

// failed reports an operand the reconcile could not converge. A name taken
// by someone else's object is a conflict: Ready=False naming it, an event
// when that is new, and a recheck soon, since the object's deletion wakes
// no watch. Any other error is retried with backoff.
func (r *GuestbookReconciler) failed(g, read *webappv1.Guestbook, reason string, err error) (ctrl.Result, error) {
	var conflict *ConflictError
	if errors.As(err, &conflict) {
		setGuestbookConflict(g, conflict)
		if readyChanged(read.Status.Conditions, g.Status.Conditions) {
			r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, conflict.Reason(), "Create"+conflict.Kind, "%s", conflict.Error())
			conflictsTotal.WithLabelValues(conflict.Kind).Inc()
		}
		return ctrl.Result{RequeueAfter: conflictRecheck}, nil
	}
	setGuestbookFailed(g, reason, err)
	return ctrl.Result{}, err
}

// SetupWithManager registers the reconciler. The Guestbook is
// cluster-scoped and its operands namespaced; they find their owner through
// the owner reference, and pods through their instance label.
func (r *GuestbookReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&webappv1.Guestbook{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToGuestbook)).
		Watches(&operatorv1alpha1.OperatorConfig{}, handler.EnqueueRequestsFromMapFunc(enqueueAll(r.Client, &webappv1.GuestbookList{}))).
		WithOptions(opts).
		Complete(r)
}

func podToGuestbook(_ context.Context, o client.Object) []ctrl.Request {
	if name := o.GetLabels()[InstanceLabel]; name != "" && o.GetLabels()[NameLabel] == GuestbookAppName {
		return []ctrl.Request{{NamespacedName: client.ObjectKey{Name: name}}}
	}
	return nil
}
