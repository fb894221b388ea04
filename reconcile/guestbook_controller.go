package reconcile

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/internal/operandcache"
	"github.com/example/myoperator/internal/pause"
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
	// Records is the record of the accepted configuration, shared with the
	// OperatorConfig reconciler; nil reads it through Client each time.
	Records *opconfig.Records
	// Operands gives the informer cache of each operand namespace: the
	// operator may read pods, StatefulSets and Services only there.
	Operands *operandcache.Caches
	// ServiceAccount (namespace/name) is named in the RoleBinding that
	// status asks an admin to create for a new operand namespace.
	ServiceAccount string

	rights rightsCache
}

// +kubebuilder:rbac:groups=webapp.my.domain,resources=guestbooks,verbs=get;list;watch
// +kubebuilder:rbac:groups=webapp.my.domain,resources=guestbooks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
//
// Rights on the operands themselves (StatefulSets, Services, NetworkPolicies,
// pods and the Guestbook's ConfigMap) exist only in operand namespaces, through a
// RoleBinding to the ClusterRole in config/rbac/guestbook_operands_role.yaml;
// no marker here, since markers make cluster-wide rights.

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

	if pause.Requested(g.Annotations) {
		setGuestbookPaused(g, read)
		return ctrl.Result{}, nil
	}
	meta.RemoveStatusCondition(&g.Status.Conditions, pause.ConditionType)
	cfg, err := effectiveConfig(ctx, r.Client, r.Records, r.Namespace, &g.Status.Conditions)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cfg.ManagementState == operatorv1alpha1.Unmanaged {
		setGuestbookUnmanaged(g)
		return ctrl.Result{}, nil
	}
	ns := cfg.GuestbookNamespace
	if g.Status.OperandNamespace == "" {
		g.Status.OperandNamespace = ns
	}
	if err := r.rights.check(ctx, r.Client, r.APIReader, ns, r.ServiceAccount); err != nil {
		return r.failed(g, read, ReasonRightsCheckFailed, err)
	}
	operands, err := r.Operands.Get(ctx, ns)
	if err != nil {
		return r.failed(g, read, ReasonCacheFailed, err)
	}
	if err := r.ensureConfigMap(ctx, g, operands, ns); err != nil {
		return r.failed(g, read, ReasonConfigMapFailed, err)
	}
	if err := r.ensureNetworkPolicy(ctx, g, operands, ns); err != nil {
		return r.failed(g, read, ReasonNetworkPolicyFailed, err)
	}
	sts, err := r.ensureStatefulSet(ctx, g, operands, ns, cfg.GuestbookImage)
	if err != nil {
		return r.failed(g, read, ReasonStatefulSetFailed, err)
	}
	if err := r.ensureService(ctx, g, operands, ns); err != nil {
		return r.failed(g, read, ReasonServiceFailed, err)
	}
	roles, err := r.assignRoles(ctx, g, operands, sts)
	if err != nil {
		return r.failed(g, read, ReasonRoleAssignmentFailed, err)
	}
	if roles.failedOver() {
		r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, ReasonFailover, "Promote",
			"pod %s promoted to active: %s", roles.active, roles.reason)
	}
	setGuestbookRoles(g, roles)
	// After a move of the operand namespace, the old operands go only once
	// the new ones are Ready; until then status names the old namespace.
	if old := g.Status.OperandNamespace; old != ns && roles.complete(g.Spec.Size) {
		if err := r.removeOperandsIn(ctx, g, old); err != nil {
			return r.failed(g, read, ReasonCleanupFailed, err)
		}
		r.Recorder.Eventf(g, nil, corev1.EventTypeNormal, ReasonOperandsMoved, "Delete",
			"operands run in namespace %s; removed those in %s", ns, old)
		g.Status.OperandNamespace = ns
		// Nothing reads the old namespace's cache any more (the move
		// deletes by name, uncached), and its binding may go next: stop
		// watching there rather than retry forbidden lists forever.
		r.Operands.Forget(old)
		r.rights.forget(old)
	}
	return ctrl.Result{}, nil
}

// failed reports an operand the reconcile could not converge. A name taken
// by someone else's object is a conflict: Ready=False naming it, an event
// when that is new, and a recheck soon, since the object's deletion wakes
// no watch. Any other error is retried with backoff.
func (r *GuestbookReconciler) failed(g, read *webappv1.Guestbook, reason string, err error) (ctrl.Result, error) {
	var denied *RightsError
	if errors.As(err, &denied) {
		setGuestbookForbidden(g, denied)
		if readyChanged(read.Status.Conditions, g.Status.Conditions) {
			r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, ReasonOperandNamespaceForbidden, "CheckRights", "%s", denied.Error())
		}
		return ctrl.Result{RequeueAfter: rightsRecheck}, nil
	}
	var conflict *ConflictError
	if errors.As(err, &conflict) {
		setGuestbookConflict(g, conflict)
		return conflict.report(r.Recorder, g, read.Status.Conditions, g.Status.Conditions), nil
	}
	setGuestbookFailed(g, reason, err)
	return ctrl.Result{}, err
}

// SetupWithManager registers the reconciler. The Guestbook is
// cluster-scoped and its operands namespaced; they find their owner through
// the owner reference, and pods through their instance label. StatefulSets,
// Services, NetworkPolicies and pods are watched in each operand namespace's cache, added
// when the reconciler first works there.
func (r *GuestbookReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&webappv1.Guestbook{}).
		Watches(&operatorv1alpha1.OperatorConfig{}, revisitAll(r.Client, &webappv1.GuestbookList{})).
		WithOptions(opts).
		Build(&instrumented{controller: "guestbook", newObject: func() client.Object { return &webappv1.Guestbook{} },
			reader: mgr.GetClient(), recorder: r.Recorder, inner: r})
	if err != nil {
		return err
	}
	owner := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &webappv1.Guestbook{}, handler.OnlyControllerOwner())
	r.Operands.Controller = c
	r.Operands.Watches = []operandcache.Watch{
		{Object: &appsv1.StatefulSet{}, Handler: owner},
		{Object: &corev1.Service{}, Handler: owner},
		{Object: &networkingv1.NetworkPolicy{}, Handler: owner},
		// The Guestbook's ConfigMap lives in the operand namespace too: its
		// watch is there, not in the manager's cache, which with
		// --watch-namespaces holds only the served namespaces.
		{Object: &corev1.ConfigMap{}, Handler: owner},
		{Object: &corev1.Pod{}, Handler: handler.EnqueueRequestsFromMapFunc(podToGuestbook)},
	}
	return nil
}

func podToGuestbook(_ context.Context, o client.Object) []ctrl.Request {
	if name := o.GetLabels()[InstanceLabel]; name != "" && o.GetLabels()[NameLabel] == GuestbookAppName {
		return []ctrl.Request{{NamespacedName: client.ObjectKey{Name: name}}}
	}
	return nil
}
