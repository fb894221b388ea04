package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/internal/pause"
	"github.com/example/myoperator/internal/render"
	"github.com/example/myoperator/internal/shard"
)

// DrinkReconciler renders every Drink, whatever version it was written in,
// into a ConfigMap of the same name in its namespace, in the layout of its
// authored version.
type DrinkReconciler struct {
	Client client.Client
	// APIReader reads what the cache does not hold: the cache keeps only
	// ConfigMaps labelled as the operator's, and on a miss one read tells
	// a free name from one taken by someone else's ConfigMap.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Namespace is the operator's namespace (for resolving OperatorConfig).
	Namespace string
	// Records is the record of the accepted configuration, shared with the
	// OperatorConfig reconciler; nil reads it through Client each time.
	Records *opconfig.Records

	// share, when set, is this replica's share of the Drinks, the replicas
	// sharing them (internal/shard): the reconciler serves only the Drinks
	// it matches, whatever else the cache holds (an API server without the
	// ShardedListAndWatch feature sends every Drink), and labels their
	// ConfigMaps with their bucket, by which replicas select them.
	share *shard.Served

	// writes keeps a reconcile from acting on a cached copy older than
	// its own last status write (ownwrites.go).
	writes ownWrites
}

// forShare is r for one share of the Drinks: r's settings, with c to read
// and write through and m to match the share, and a record of its own
// writes that goes with the share when the replica stops serving it.
func (r *DrinkReconciler) forShare(c client.Client, m *shard.Served) *DrinkReconciler {
	return &DrinkReconciler{Client: c, APIReader: r.APIReader, Recorder: r.Recorder, Namespace: r.Namespace,
		Records: r.Records, share: m}
}

// serves reports whether this replica reconciles d.
func (r *DrinkReconciler) serves(d *drinksv1.Drink) bool {
	if r.share == nil {
		return true
	}
	ok, err := r.share.Matches(d)
	return err == nil && ok
}

// bucketLabel is the bucket label d's ConfigMap carries: "" without
// sharding, where no label is written or compared.
func (r *DrinkReconciler) bucketLabel(d *drinksv1.Drink) string {
	if r.share == nil {
		return ""
	}
	return shard.BucketValue(shard.BucketOf(d.UID))
}

// versions is the table of Drink versions whose layouts the ConfigMaps
// take. The tests of another table (a fourth version) call the functions
// that take one (render.ConfigMapDataIn, staleKeys), not the reconciler.
func (r *DrinkReconciler) versions() drinksversions.Table { return drinksversions.Drinks }

// +kubebuilder:rbac:groups=example.com,resources=drinks,verbs=get;list;watch
// +kubebuilder:rbac:groups=example.com,resources=drinks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one Drink's ConfigMap and status up to date, persisting
// the status at most once, and only when it changed.
func (r *DrinkReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	log := ctrl.LoggerFrom(ctx)
	d := &drinksv1.Drink{}
	if err := r.Client.Get(ctx, req.NamespacedName, d); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !d.DeletionTimestamp.IsZero() || !r.serves(d) {
		// The garbage collector removes a deleted Drink's ConfigMap; a
		// Drink of another replica's share is that replica's.
		return ctrl.Result{}, nil
	}
	if r.writes.behind(req.NamespacedName, d.ResourceVersion, time.Now()) {
		// The cache has yet to show this reconciler's last status write;
		// that write's event brings the reconcile of the current copy.
		log.V(1).Info("cache behind the last status write; waiting for its event", "resourceVersion", d.ResourceVersion)
		return ctrl.Result{}, nil
	}
	log.V(1).Info("reconciling Drink", "generation", d.Generation, "authoredVersion", render.AuthoredVersion(d))
	read := d.DeepCopy()
	defer func() {
		err := persistStatus(ctx, r.Client, read, d, func(d *drinksv1.Drink) any { return &d.Status })
		if err == nil && d.ResourceVersion != read.ResourceVersion {
			r.writes.record(req.NamespacedName, d.ResourceVersion, time.Now())
		}
		retErr = kerrors.NewAggregate([]error{retErr, err})
	}()

	if pause.Requested(d.Annotations) {
		setDrinkPaused(d, read)
		return ctrl.Result{}, nil
	}
	meta.RemoveStatusCondition(&d.Status.Conditions, pause.ConditionType)
	d.Status.AuthoredVersion = render.AuthoredVersion(d)
	cfg, err := effectiveConfig(ctx, r.Client, r.Records, r.Namespace, &d.Status.Conditions)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cfg.ManagementState == operatorv1alpha1.Unmanaged {
		setDrinkUnmanaged(d)
		return ctrl.Result{}, nil
	}
	if courseFieldsAlone(r.versions(), read) {
		done, err := r.agreeCourseFields(ctx, read.DeepCopy())
		if err != nil || done {
			// The write of the Drink was this reconcile's one persist.
			d.Status = *read.Status.DeepCopy()
			return ctrl.Result{}, err
		}
	}
	data, err := render.ConfigMapDataIn(r.versions(), d)
	var unknown *render.UnknownVersionError
	if errors.As(err, &unknown) {
		setDrinkStalled(d, unknown)
		return ctrl.Result{}, nil // nothing to retry until the Drink changes
	}
	changed, err := r.ensureConfigMap(ctx, d, data)
	if errors.Is(err, errDrinkGone) {
		d.Status = *read.Status.DeepCopy() // no status write for a Drink that is gone
		return ctrl.Result{}, nil
	}
	var conflict *ConflictError
	if errors.As(err, &conflict) {
		setDrinkConflict(d, conflict)
		return conflict.report(r.Recorder, d, read.Status.Conditions, d.Status.Conditions), nil
	}
	if err != nil {
		setDrinkApplyFailed(d, err)
		return ctrl.Result{}, err
	}
	d.Status.ConfigMapName = d.Name
	// Events mark what the user did not ask for: a ConfigMap restored after
	// someone deleted it, or corrected after someone changed it; each is
	// drift, and counted. The first render of a new Drink, and the render of
	// a changed spec, are what the user asked for: the Ready condition at
	// the new generation reports them, so they cost the minimum of two
	// writes (ConfigMap, status) and no entry in the event recorder's cache.
	switch {
	case changed == ReasonConfigMapRestored && read.Status.ConfigMapName == "":
		changed = ""
	case changed == ReasonConfigMapCorrected && !renderedBefore(read):
		changed = ""
	}
	if changed == ReasonConfigMapRestored || changed == ReasonConfigMapCorrected {
		driftCorrectionsTotal.WithLabelValues("ConfigMap").Inc()
	}
	if changed != "" {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, changed, "ApplyConfigMap",
			"ConfigMap %s in the %s layout", d.Name, render.LayoutName(r.versions(), d))
	}
	setDrinkReady(d, render.LayoutName(r.versions(), d))
	return ctrl.Result{}, nil
}

// renderedBefore: the ConfigMap was in place for this very spec and
// authored version when the Drink was last reconciled (Ready at its
// generation), so a difference now is someone else's doing, not the
// user's edit.
func renderedBefore(read *drinksv1.Drink) bool {
	c := meta.FindStatusCondition(read.Status.Conditions, drinksv1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == read.Generation &&
		read.Status.AuthoredVersion == render.AuthoredVersion(read)
}

// SetupWithManager registers the reconciler: it watches Drinks, the
// ConfigMaps they own, and the OperatorConfig (a change there may concern
// every Drink).
func (r *DrinkReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&drinksv1.Drink{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&operatorv1alpha1.OperatorConfig{}, revisitAll(r.Client, &drinksv1.DrinkList{})).
		WithOptions(opts).
		Complete(r.instrumented(mgr.GetClient()))
}

// instrumented wraps r; a panic is reported on the Drink read through
// reader, not r.Client, whose read may be what panicked.
func (r *DrinkReconciler) instrumented(reader client.Reader) *instrumented {
	return &instrumented{controller: "drink", newObject: func() client.Object { return &drinksv1.Drink{} },
		reader: reader, recorder: r.Recorder, inner: r}
}

// ShareController is the hook through which internal/shard serves buckets
// of the Drinks (shard.Reconciler): a Drink controller over the buckets'
// cache, and the inventory of their Drinks, both until the buckets move.
// The reconciler reads and writes through s.Client and serves only the
// Drinks s.Served matches, each reconcile inside s.Served.Hold.
func (r *DrinkReconciler) ShareController(mgr ctrl.Manager, s shard.Share) (manager.Runnable, error) {
	rs := r.forShare(s.Client, s.Served)
	c, err := rs.newShareController(mgr, s.Cache, s.Options, s.Slots)
	if err != nil {
		return nil, err
	}
	return shareRun{controller: c, inventory: &Inventory{Reader: s.Cache, NoGuestbooks: true, InShare: rs.serves}}, nil
}

// newShareController builds the Drink controller of one share of the
// Drinks, with the same watches as SetupWithManager: Drinks and their
// ConfigMaps from share, the cache of that share, and the OperatorConfig
// from the manager's cache. It is not added to the manager: the caller
// starts it, with share, for as long as the replica serves the share,
// and r.Client reads Drinks and ConfigMaps from share.
//
// Its reconciles run only while they hold one of slots, which the
// controllers of every bucket a replica serves share: together they run no
// more reconciles at once than the leader's one controller would.
func (r *DrinkReconciler) newShareController(mgr ctrl.Manager, share cache.Cache, opts controller.Options, slots chan struct{}) (controller.Controller, error) {
	// Each share's controller is a new one under the same name, so that
	// its metrics continue the last one's.
	opts.SkipNameValidation = ptr.To(true)
	opts.Logger = mgr.GetLogger()
	opts.Reconciler = limited{slots: slots, served: r.share, inner: r.instrumented(share)}
	opts.LogConstructor = func(req *ctrl.Request) logr.Logger {
		log := mgr.GetLogger().WithValues("controller", "drink", "controllerGroup", drinksv1.GroupVersion.Group, "controllerKind", "Drink")
		if req != nil {
			log = log.WithValues("Drink", klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name)
		}
		return log
	}
	c, err := controller.NewUnmanaged("drink", opts)
	if err != nil {
		return nil, err
	}
	// The predicate keeps the queue to this share's Drinks when the
	// cache holds more (an API server without the feature gate).
	inShare := predicate.NewPredicateFuncs(func(o client.Object) bool {
		d, ok := o.(*drinksv1.Drink)
		return ok && r.serves(d)
	})
	for _, src := range []source.Source{
		source.Kind(share, client.Object(&drinksv1.Drink{}), &handler.EnqueueRequestForObject{}, inShare),
		source.Kind(share, client.Object(&corev1.ConfigMap{}),
			handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &drinksv1.Drink{}, handler.OnlyControllerOwner())),
		untilStopped(mgr.GetCache(), &operatorv1alpha1.OperatorConfig{}, revisitAll(r.Client, &drinksv1.DrinkList{})),
	} {
		if err := c.Watch(src); err != nil {
			return nil, err
		}
	}
	return c, nil
}
