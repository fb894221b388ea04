package reconcile

import (
	"context"
	"fmt"
	"maps"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/logging"
	"github.com/example/myoperator/internal/migrate"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/opconfig"
)

// OperatorConfigReconciler applies the OperatorConfig to the running
// operator (the log level at once; the other fields are read by each
// reconcile), records the configuration it accepts so that a restart during
// an outage of the OperatorConfig keeps it, and reports what the operator
// runs with.
type OperatorConfigReconciler struct {
	Client client.Client
	// Level is the zap level of the manager's logger.
	Level zap.AtomicLevel
	// Namespace is the operator's namespace, where the record lives.
	Namespace string
	// Recorder records the event that says the OperatorConfig is missing.
	Recorder events.EventRecorder
	// Migration is the storage migration's outcome, reported as Degraded.
	Migration *migrate.Status
	// MigrationDone triggers a reconcile when the migration finishes.
	MigrationDone <-chan event.GenericEvent
	// Elected is closed once this replica leads. Every replica applies the
	// log level to itself, but only the leader, which runs the migration,
	// writes the record and status, so that replicas never disagree in it.
	Elected <-chan struct{}
	// Records is the record of the accepted configuration, shared with the
	// Drink and Guestbook reconcilers and the Drink webhook: each reconcile
	// here reads it again from the API server; nil makes one.
	Records *opconfig.Records

	// reported is the unusable record's problem last reported, so that it
	// is reported once, not on every reconcile.
	reported string
}

// +kubebuilder:rbac:groups=operator.example.com,resources=operatorconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=operator.example.com,resources=operatorconfigs/status,verbs=get;update;patch

// Reconcile applies the configuration, records it when accepted, and writes
// status when it changed.
func (r *OperatorConfigReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	problem, err := r.Records.Refresh(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.reportUnusableRecord(ctx, problem); err != nil {
		return ctrl.Result{}, err
	}
	res, err := opconfig.LoadResult(ctx, r.Client, r.Records, r.Namespace)
	if err != nil {
		// Keep running on what was resolved (the record or defaults); the
		// read is retried with backoff.
		return ctrl.Result{}, err
	}
	logging.SetLevel(r.Level, string(res.Effective.LogLevel))
	setConfigStateMetric(res.State)
	log.V(1).Info("configuration applied", "state", res.State, "effective", res.Effective)
	if res.State == opconfig.StateMissing {
		log.Info("OperatorConfig is missing; running on the "+res.Source(), "effective", res.Effective)
		if !r.leading() {
			return ctrl.Result{}, nil
		}
		// No object to write status to: the record says it, once.
		return ctrl.Result{}, r.markMissing(ctx, res)
	}
	if !r.leading() {
		return ctrl.Result{}, nil
	}
	if res.Record != nil {
		if err := r.persistRecord(ctx, res.Record); err != nil {
			return ctrl.Result{}, err
		}
	}
	// The object LoadResult read: its status is written from the same read.
	read, c := res.Config, res.Config.DeepCopy()
	c.Status.Effective = &res.Effective
	c.Status.ObservedGeneration = c.Generation
	setConfigAvailable(c)
	setConfigProgressing(c)
	var migrationErr error
	if r.Migration != nil {
		_, migrationErr = r.Migration.Get()
	}
	setConfigDegraded(c, res, migrationErr)
	setConfigReady(c)
	return ctrl.Result{}, persistStatus(ctx, r.Client, read, c, func(c *operatorv1alpha1.OperatorConfig) any { return &c.Status })
}

// persistRecord writes the record of the accepted configuration when it
// differs from the stored one: it is what the operator keeps running on if
// the OperatorConfig goes missing or becomes invalid, across restarts.
func (r *OperatorConfigReconciler) persistRecord(ctx context.Context, rec *opconfig.Record) error {
	want, err := opconfig.RecordConfigMap(r.Namespace, rec)
	if err != nil {
		return err
	}
	// Labelled, or the cache (which holds only what the operator writes)
	// would never see it, and every persist would try to create it again.
	want.Labels = map[string]string{names.ManagedByLabel: names.ManagedByValue}
	// Read from the API server, not the cache: a record that lost its label
	// is not in the cache, and a create would then fail on every reconcile.
	have := &corev1.ConfigMap{}
	err = r.Records.Reader.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want, client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("recording the accepted configuration in ConfigMap %s/%s: %w", want.Namespace, want.Name, err)
		}
		r.Records.Set(rec)
		return nil
	case err != nil:
		return err
	}
	_, missing := have.Annotations[MissingSinceAnnotation]
	if maps.Equal(have.Data, want.Data) && have.Labels[names.ManagedByLabel] == names.ManagedByValue && !missing {
		return nil
	}
	have.Data = want.Data
	delete(have.Annotations, MissingSinceAnnotation)
	if have.Labels == nil {
		have.Labels = map[string]string{}
	}
	have.Labels[names.ManagedByLabel] = names.ManagedByValue
	if err := r.Client.Update(ctx, have, client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("recording the accepted configuration in ConfigMap %s/%s: %w", want.Namespace, want.Name, err)
	}
	r.Records.Set(rec)
	return nil
}

// ReasonRecordUnusable is the reason of the Warning event that says the
// stored record is ignored.
const ReasonRecordUnusable = "RecordUnusable"

// reportUnusableRecord says, once per problem, that the stored record does
// not decode or validate: the operator runs as if there were none, and the
// accepted OperatorConfig, if there is one, writes it anew in the same
// reconcile (persistRecord), which a change of the record sets off. The
// leader reports it, on the record.
func (r *OperatorConfigReconciler) reportUnusableRecord(ctx context.Context, problem error) error {
	if problem == nil {
		r.reported = ""
		return nil
	}
	if problem.Error() == r.reported || !r.leading() {
		return nil
	}
	ctrl.LoggerFrom(ctx).Error(problem, "the configuration record is ignored; the accepted OperatorConfig, when there is one, writes it anew")
	have := &corev1.ConfigMap{}
	if err := r.Records.Reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: opconfig.RecordName}, have); err != nil {
		return client.IgnoreNotFound(err)
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(have, nil, corev1.EventTypeWarning, ReasonRecordUnusable, "IgnoreRecord", "%s", problem.Error())
	}
	r.reported = problem.Error()
	return nil
}

// MissingSinceAnnotation is set on the record while the OperatorConfig is
// missing, to the time it was found missing; the next accepted
// OperatorConfig removes it.
const MissingSinceAnnotation = "operator.example.com/operatorconfig-missing-since"

// markMissing says, once per outage, that the OperatorConfig is missing:
// the record's MissingSinceAnnotation and a Warning event on the record.
// Without a record (none was ever accepted) there is nothing to keep and
// nowhere to write; the log and the metric say it.
func (r *OperatorConfigReconciler) markMissing(ctx context.Context, res opconfig.Result) error {
	// Read whole from the API server: the cache keeps only its identity.
	have := &corev1.ConfigMap{}
	err := r.Records.Reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: opconfig.RecordName}, have)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, marked := have.Annotations[MissingSinceAnnotation]; marked {
		return nil
	}
	if have.Annotations == nil {
		have.Annotations = map[string]string{}
	}
	have.Annotations[MissingSinceAnnotation] = time.Now().UTC().Format(time.RFC3339)
	if err := r.Client.Update(ctx, have, client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("marking ConfigMap %s/%s: %w", have.Namespace, have.Name, err)
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(have, nil, corev1.EventTypeWarning, ReasonConfigMissing, "UseAcceptedConfig",
			"OperatorConfig cluster is missing: the operator keeps running every Drink and Guestbook on the %s (this record); create it again, or restart the operator (its bootstrap creates it)", res.Source())
	}
	return nil
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
	if r.Records == nil {
		r.Records = &opconfig.Records{Reader: mgr.GetAPIReader(), Namespace: r.Namespace, Elected: r.Elected}
	}
	// A change of the record (a restore from an old backup, a write past
	// its admission policy) is reconciled at once: an unusable one is then
	// written anew from the accepted OperatorConfig within seconds, not at
	// its next change.
	records, err := recordCache(mgr, r.Namespace)
	if err != nil {
		return err
	}
	singleton := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrlreconcile.Request {
		return []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Name: operatorv1alpha1.SingletonName}}}
	})
	b := ctrl.NewControllerManagedBy(mgr).
		For(&operatorv1alpha1.OperatorConfig{}).
		WatchesRawSource(source.Kind(records, client.Object(&corev1.ConfigMap{}), singleton)).
		WithOptions(opts)
	if r.MigrationDone != nil {
		b = b.WatchesRawSource(source.Channel(r.MigrationDone, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(&instrumented{controller: "operatorconfig", newObject: func() client.Object { return &operatorv1alpha1.OperatorConfig{} },
		reader: mgr.GetClient(), inner: r})
}

// recordCache is a cache of the record alone, by name in the operator's
// namespace, that starts with the manager's caches on every replica. The
// manager's cache holds every ConfigMap with the operator's label (every
// Drink's): watching the record there made each replica that shares the
// Drinks, where this controller runs too, hold all of them, and doubled its
// heap (docs/sharding.md). By name it also sees a record that lost the
// label. RBAC: list and watch of that one name (config/namespace-scope
// grants no more).
func recordCache(mgr ctrl.Manager, namespace string) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{namespace: {
				FieldSelector: fields.OneTermEqualSelector("metadata.name", opconfig.RecordName),
			}}},
		},
	})
	if err != nil {
		return nil, err
	}
	return c, mgr.Add(inCacheGroup{c})
}

// inCacheGroup puts a cache in the manager's cache group: started on every
// replica, leader or not, and synced before the controllers start.
type inCacheGroup struct{ cache.Cache }

func (c inCacheGroup) GetCache() cache.Cache { return c.Cache }
