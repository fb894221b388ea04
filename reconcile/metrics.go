package reconcile

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/render"
	"github.com/example/myoperator/internal/writecount"
)

// The metrics about what the operator manages. None carries an object's
// name or namespace: a label per object would grow the series with the
// cluster (and with what any tenant creates); the events and conditions of
// each object tell which one.
var (
	// Counters of what the operator found others doing to its operands, by
	// operand kind: names taken when it needed them (counted once per
	// report, not per recheck), and fields it owns that another writer
	// changed, or operands another writer deleted, that it put back.
	conflictsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "myoperator_operand_conflicts_total",
		Help: "Operand names found taken by an object the owner does not control, counted when the owner starts reporting it.",
	}, []string{"kind"})
	driftCorrectionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "myoperator_drift_corrections_total",
		Help: "Operands changed or deleted by another writer and put back by the operator, by operand kind.",
	}, []string{"kind"})
	failoversTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "myoperator_guestbook_failovers_total",
		Help: "Guestbook failovers: a Ready standby pod promoted to active because the active pod went away or stopped being Ready.",
	})
	// configState: 1 for the current state, 0 for the others, so that an
	// alert can select one state without knowing the others.
	configState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "myoperator_config_state",
		Help: "State of the OperatorConfig as the operator sees it (1 for the current state): Accepted, Invalid (running on the last accepted configuration) or Missing.",
	}, []string{"state"})
	// reconcileWrites: one reconcile that finds everything in place writes
	// nothing; a new Drink costs two writes (ConfigMap, status). A tail
	// here means a reconcile that fights another writer or itself.
	reconcileWrites = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "myoperator_reconcile_writes",
		Help:    "API writes (operands and status; events are sent apart) made by one reconcile, by controller.",
		Buckets: []float64{0, 1, 2, 3, 5, 8, 13},
	}, []string{"controller"})
	inventory = &inventoryCollector{}
)

func init() {
	metrics.Registry.MustRegister(conflictsTotal, driftCorrectionsTotal, failoversTotal, configState, reconcileWrites, inventory)
	// Every operand kind's series exists at 0 from the start, so that
	// increase() over it sees the first conflict or correction.
	for _, kind := range []string{"ConfigMap", "StatefulSet", "Service"} {
		conflictsTotal.WithLabelValues(kind)
		driftCorrectionsTotal.WithLabelValues(kind)
	}
}

// instrumented wraps a reconciler so that the writes of each reconcile are
// observed in myoperator_reconcile_writes (counted at the manager's HTTP
// transport, writecount.Transport, from the reconcile's context) and a
// panic is reported on the object it happened on: a Warning event
// ReconcilePanic, read back through reader (the cache; the reconciler's
// own client may be what panicked). The panic then goes on to
// controller-runtime, which counts it in controller_runtime_reconcile_panics_total,
// recovers it and retries the object with backoff, so that one bad object
// never stops the others.
type instrumented struct {
	controller string
	newObject  func() client.Object
	reader     client.Reader
	recorder   events.EventRecorder
	inner      crreconcile.Reconciler
}

func (i *instrumented) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ctx, writes := writecount.Start(ctx)
	defer func() {
		if p := recover(); p != nil {
			i.reportPanic(ctx, req, p)
			panic(p)
		}
	}()
	res, err := i.inner.Reconcile(ctx, req)
	reconcileWrites.WithLabelValues(i.controller).Observe(float64(writes()))
	return res, err
}

// reportPanic puts an event on the object whose reconcile panicked. It must
// not panic itself: that would hide the first panic.
func (i *instrumented) reportPanic(ctx context.Context, req ctrl.Request, p any) {
	defer func() { _ = recover() }()
	ctrl.LoggerFrom(ctx).Error(fmt.Errorf("%v", p), "reconcile panicked; retrying with backoff", "stack", string(debug.Stack()))
	if i.recorder == nil {
		return
	}
	obj := i.newObject()
	if err := i.reader.Get(ctx, req.NamespacedName, obj); err != nil {
		return
	}
	i.recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonReconcilePanic, "Reconcile",
		"the operator's reconcile of this object panicked (%v); it is retried with backoff, and the operator's log has the stack", p)
}

// ReasonReconcilePanic is the reason of the event on an object whose
// reconcile panicked.
const ReasonReconcilePanic = "ReconcilePanic"

// Inventory exports the number of Drinks (by authored version and Ready
// status) and Guestbooks (by Ready status), counted from the manager's
// cache when metrics are scraped, as kube-state-metrics does: counts kept
// up to date by the reconcilers would drift on every missed delete. Only
// the leader exports them (it runs the controllers, so its cache holds
// these kinds; a standby would have to start informers for them), so a
// sum over replicas counts each object once. With the Drinks shared among
// the replicas, each runs one over the cache of its share instead.
type Inventory struct {
	// Reader is the manager's cache.
	Reader client.Reader
	// NoDrinks and NoGuestbooks leave a kind out: with the Drinks shared,
	// the leader exports the Guestbooks and each share its Drinks.
	NoDrinks, NoGuestbooks bool
	// InShare, when set, counts only the Drinks it accepts (a share's
	// cache may hold others: an API server without the shard selector).
	InShare func(*drinksv1.Drink) bool
}

// NeedLeaderElection returns true: see Inventory.
func (i *Inventory) NeedLeaderElection() bool { return true }

// Start exports the counts until the context ends (leadership lost or
// the manager stopping).
func (i *Inventory) Start(ctx context.Context) error {
	d := &drinkSource{reader: i.Reader, versions: drinksversions.Drinks, inShare: i.InShare}
	if !i.NoDrinks {
		inventory.setDrinks(d)
	}
	if !i.NoGuestbooks {
		inventory.setGuestbooks(i.Reader)
	}
	<-ctx.Done()
	inventory.clear(d, i.Reader)
	return nil
}

var (
	drinksDesc = prometheus.NewDesc("myoperator_drinks",
		"Drinks by the API version their spec was last written in (unknown: never recorded) and by their Ready condition (true, false, unknown). Exported by the leader only, or with --shard-drinks by each replica for its share.",
		[]string{"authored_version", "ready"}, nil)
	guestbooksDesc = prometheus.NewDesc("myoperator_guestbooks",
		"Guestbooks by their Ready condition (true, false, unknown). Exported by the leader only.",
		[]string{"ready"}, nil)
)

// inventoryCollector is the one registered collector behind Inventory: the
// registry is global, a manager (and its cache) is not.
type inventoryCollector struct {
	mu sync.Mutex
	// drinks are summed: a replica sharing the Drinks serves its buckets
	// through several caches at once, one per bucket.
	drinks     []*drinkSource
	guestbooks client.Reader
}

// drinkSource is where the Drinks are counted from.
type drinkSource struct {
	reader   client.Reader
	versions drinksversions.Table
	inShare  func(*drinksv1.Drink) bool
}

func (c *inventoryCollector) setDrinks(d *drinkSource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drinks = append(c.drinks, d)
}

func (c *inventoryCollector) setGuestbooks(r client.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.guestbooks = r
}

// clear stops exporting d's and r's counts; r's only unless another
// manager of the process has taken over since.
func (c *inventoryCollector) clear(d *drinkSource, r client.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drinks = slices.DeleteFunc(c.drinks, func(x *drinkSource) bool { return x == d })
	if c.guestbooks == r {
		c.guestbooks = nil
	}
}

func (c *inventoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- drinksDesc
	ch <- guestbooksDesc
}

func (c *inventoryCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ds, gr := slices.Clone(c.drinks), c.guestbooks
	c.mu.Unlock()
	// The cache answers from memory; the bound only guards a scrape against
	// an informer that has not synced.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if len(ds) > 0 {
		collectDrinks(ctx, ds, ch)
	}
	if gr == nil {
		return
	}
	guestbooks := &webappv1.GuestbookList{}
	if err := gr.List(ctx, guestbooks, client.UnsafeDisableDeepCopy); err == nil {
		counts := map[string]int{"true": 0, "false": 0, "unknown": 0}
		for i := range guestbooks.Items {
			counts[readyLabel(guestbooks.Items[i].Status.Conditions, webappv1.ConditionReady)]++
		}
		for s, n := range counts {
			ch <- prometheus.MustNewConstMetric(guestbooksDesc, prometheus.GaugeValue, float64(n), s)
		}
	}
}

// collectDrinks counts the Drinks of every source by authored version
// and Ready; a source that cannot list adds nothing.
func collectDrinks(ctx context.Context, sources []*drinkSource, ch chan<- prometheus.Metric) {
	// Every served version and status appears, at 0 when none: an alert on
	// "no Drink authored in a deprecated version" needs a series to read.
	counts := map[[2]string]int{}
	for _, v := range sources[0].versions.Served() {
		for _, s := range []string{"true", "false", "unknown"} {
			counts[[2]string{v, s}] = 0
		}
	}
	listed := false
	for _, d := range sources {
		listed = d.count(ctx, counts) || listed
	}
	if !listed {
		return
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(drinksDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}

// count adds d's Drinks to counts and says whether it could list them.
func (d *drinkSource) count(ctx context.Context, counts map[[2]string]int) bool {
	return d.each(ctx, func(dr *drinksv1.Drink) {
		if d.inShare != nil && !d.inShare(dr) {
			return
		}
		v := render.AuthoredVersion(dr)
		if v == "" {
			v = "unknown"
		}
		counts[[2]string{v, readyLabel(dr.Status.Conditions, drinksv1.ConditionReady)}]++
	})
}

// each calls fn with every Drink d's reader holds, which fn must not
// change, and says whether it could read them. From a cache it walks the
// informer's store: a List into a DrinkList, even without deep copies,
// copies every Drink into one new slice (meta.SetList stores values), so
// every scrape allocated as many bytes as the cached Drinks' structs (5.3
// MiB a scrape for each of four replicas sharing 50,000 Drinks, in the
// bench's heap profiles; about 85 MiB for one leader of 200,000). An
// informer that has not synced counts as unreadable, as the List would
// after waiting; a cache whose informers have no store (one per
// namespace, --watch-namespaces) is listed.
func (d *drinkSource) each(ctx context.Context, fn func(*drinksv1.Drink)) bool {
	if infs, ok := d.reader.(cache.Informers); ok {
		inf, err := infs.GetInformer(ctx, &drinksv1.Drink{}, cache.BlockUntilSynced(false))
		if err != nil {
			return false
		}
		if st, ok := inf.(interface{ GetStore() toolscache.Store }); ok {
			if !inf.HasSynced() {
				return false
			}
			for _, o := range st.GetStore().List() {
				if dr, ok := o.(*drinksv1.Drink); ok {
					fn(dr)
				}
			}
			return true
		}
	}
	drinks := &drinksv1.DrinkList{}
	if err := d.reader.List(ctx, drinks, client.UnsafeDisableDeepCopy); err != nil {
		return false
	}
	for i := range drinks.Items {
		fn(&drinks.Items[i])
	}
	return true
}

// readyLabel is the Ready condition's status as a label value; a missing
// condition (not reconciled yet) is unknown.
func readyLabel(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return "unknown"
	}
	return strings.ToLower(string(c.Status))
}
