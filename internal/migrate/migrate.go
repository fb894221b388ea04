package migrate

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/names"
)

// maxListings bounds how often one run starts its listing again after an
// expired continue token; past it the run fails and the back-off retries.
const maxListings = 5

// DefaultBackoff spaces the attempts of a failing migration: from 2 s,
// doubling, at most 5 minutes apart, for as long as the leader runs.
var DefaultBackoff = wait.Backoff{Duration: 2 * time.Second, Factor: 2, Jitter: 0.1, Steps: 10, Cap: 5 * time.Minute}

// +kubebuilder:rbac:groups=example.com,resources=drinks,verbs=get;list;patch
// +kubebuilder:rbac:groups=example.com,resources=drinks/status,verbs=patch

// Migrator rewrites every Drink in the storage version once, at start-up of
// the leader.
type Migrator struct {
	// Client talks to the API server directly (no cache): the migration
	// reads each page once and must see the stored objects.
	Client   client.Client
	Log      logr.Logger
	PageSize int64
	// Workers is how many Drinks are rewritten at once; 0 means 4.
	Workers int
	// Status receives the outcome, for the OperatorConfig's conditions.
	Status *Status
	// Notify, when set, receives an event for the OperatorConfig after
	// each attempt, so that its status reports the outcome.
	Notify chan<- event.GenericEvent
	// Backoff spaces failed attempts; its Steps only limit how often the
	// delay grows, never how often it retries. Zero uses DefaultBackoff.
	Backoff wait.Backoff
	// AfterPage, when set, is called after each page is rewritten and
	// before the next is listed (tests force an etcd compaction there).
	AfterPage func(context.Context, Page)
	// versions is the history of the Drink API that the migration knows:
	// every version any release served, and the legacy one. Empty (as the
	// binary leaves it) means drinksversions.Drinks; only the package's
	// tests set another.
	versions drinksversions.Table
}

// Page tells where a migration stands after a page.
type Page struct {
	// Attempt counts the runs since Start, Listing the listings of this
	// run (a new one begins after an expired continue token), Number the
	// pages of this listing; all from 1.
	Attempt, Listing, Number int
	// Continue is the token the next page is listed with ("" after the
	// last page).
	Continue string
}

// Status is the outcome of the last migration, safe for concurrent use.
type Status struct {
	mu  sync.Mutex
	err error
	ran bool
}

// Set records an outcome.
func (s *Status) Set(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err, s.ran = err, true
}

// Get returns the last outcome; ran is false until a migration finished.
func (s *Status) Get() (ran bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ran, s.err
}

// NeedLeaderElection returns true: only the leader rewrites objects.
func (m *Migrator) NeedLeaderElection() bool { return true }

// Start runs the migration until it succeeds or the manager stops,
// retrying with a capped back-off. A failure never stops the manager: it
// is logged and reported through Status after every attempt.
func (m *Migrator) Start(ctx context.Context) error {
	attempt := 0
	retryUntilDone(ctx, clock.RealClock{}, m.backoff().DelayFunc(), func(ctx context.Context) error {
		attempt++
		err := m.run(ctx, attempt)
		if ctx.Err() != nil {
			return err // stopping: this outcome says nothing about the cluster
		}
		m.report(ctx, err)
		if err != nil {
			migrationFailures.Inc()
			m.Log.Error(err, "storage migration failed; will retry", "attempt", attempt)
		}
		return err
	})
	return nil
}

// report records the outcome and tells the OperatorConfig reconciler.
func (m *Migrator) report(ctx context.Context, err error) {
	if m.Status != nil {
		m.Status.Set(err)
	}
	if m.Notify == nil {
		return
	}
	select {
	case m.Notify <- event.GenericEvent{Object: &operatorv1alpha1.OperatorConfig{
		ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}}:
	case <-ctx.Done():
	}
}

// Run migrates once: when storedVersions holds more than the storage
// version, every Drink is rewritten (page by page) and, only when all were,
// storedVersions is trimmed to the storage version; then, when the CRD does
// not serve every version, managedFields entries of the versions it does
// not serve are removed from every Drink (cleanAll). It is idempotent. A
// Drink that cannot be rewritten does not stop the others: the error lists
// the failures (an *Error).
func (m *Migrator) Run(ctx context.Context) error { return m.run(ctx, 1) }

func (m *Migrator) run(ctx context.Context, attempt int) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := m.Client.Get(ctx, client.ObjectKey{Name: names.DrinkCRD}, crd); err != nil {
		return fmt.Errorf("reading CRD %s: %w", names.DrinkCRD, err)
	}
	storage := storageVersion(crd)
	stored := crd.Status.StoredVersions
	setPending(len(stored) != 1 || stored[0] != storage)
	if len(stored) == 1 && stored[0] == storage {
		m.Log.V(1).Info("storage migration not needed", "storedVersions", stored)
	} else if err := m.migrate(ctx, attempt, stored, storage); err != nil {
		return err
	}
	// After the migration, so that every Drink the cleanup lists is stored
	// in the storage version already.
	return m.cleanAll(ctx, crd, attempt)
}

// migrate rewrites every Drink in the storage version, then trims
// storedVersions.
func (m *Migrator) migrate(ctx context.Context, attempt int, stored []string, storage string) error {
	m.Log.Info("storage migration started", "from", stored, "to", storage, "attempt", attempt)
	total, err := m.rewriteAll(ctx, attempt, legacyVersion(m.table(), stored))
	if err != nil {
		return err
	}
	if err := m.trim(ctx, storage); err != nil {
		return err
	}
	setPending(false)
	m.Log.Info("storage migration done", "migrated", total, "storedVersions", []string{storage})
	return nil
}

// rewriteAll rewrites every Drink in one complete listing and returns how
// many it saw. An expired continue token (410 Gone, after an etcd
// compaction) starts the listing again from the start: rewrites are
// idempotent and cost no write for a Drink already stored as the storage
// version, and only a complete listing proves that none was missed.
func (m *Migrator) rewriteAll(ctx context.Context, attempt int, legacy string) (int, error) {
	for listing := 1; ; listing++ {
		total, err := m.rewriteListing(ctx, Page{Attempt: attempt, Listing: listing}, legacy)
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			return total, err
		}
		if listing == maxListings {
			return total, fmt.Errorf("listing Drinks: %d listings in a row expired before they ended: %w", listing, err)
		}
		m.Log.Info("storage migration listing expired; listing again from the start", "listing", listing, "reason", err.Error())
	}
}

// rewriteListing lists the Drinks page by page from the start and rewrites
// each one. It returns the listing's error as is, so that the caller can
// tell an expired token, or an *Error naming every Drink it could not
// rewrite.
func (m *Migrator) rewriteListing(ctx context.Context, at Page, legacy string) (int, error) {
	failed := &Error{}
	list := &drinksv1.DrinkList{}
	for {
		if err := m.Client.List(ctx, list, client.Limit(m.pageSize()), client.Continue(list.Continue)); err != nil {
			return failed.Total, fmt.Errorf("listing Drinks (page %d): %w", at.Number+1, err)
		}
		at.Number++
		failed.Failures = append(failed.Failures, m.rewritePage(ctx, list.Items, legacy)...)
		setRemaining(list)
		failed.Total += len(list.Items)
		if err := ctx.Err(); err != nil {
			return failed.Total, err
		}
		m.Log.Info("storage migration progress", "seen", failed.Total, "failed", len(failed.Failures),
			"page", at.Number, "listing", at.Listing, "attempt", at.Attempt)
		at.Continue = list.Continue
		if m.AfterPage != nil {
			m.AfterPage(ctx, at)
		}
		if list.Continue == "" {
			break
		}
	}
	if len(failed.Failures) > 0 {
		return failed.Total, failed
	}
	return failed.Total, nil
}

// rewritePage rewrites the Drinks of one page, a few at a time (each
// rewrite waits mostly on the API server and its webhooks), and returns
// those that failed, in page order.
func (m *Migrator) rewritePage(ctx context.Context, items []drinksv1.Drink, legacy string) []Failure {
	errs := make([]error, len(items))
	next := make(chan int)
	var wg sync.WaitGroup
	for range m.workers() {
		wg.Go(func() {
			for i := range next {
				errs[i] = m.rewrite(ctx, &items[i], legacy)
			}
		})
	}
	for i := range items {
		next <- i
	}
	close(next)
	wg.Wait()
	var failed []Failure
	for i, err := range errs {
		if err != nil {
			failed = append(failed, Failure{Namespace: items[i].Namespace, Name: items[i].Name, Err: err})
		}
	}
	return failed
}

// trim sets status.storedVersions to the storage version alone.
func (m *Migrator) trim(ctx context.Context, storage string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := m.Client.Get(ctx, client.ObjectKey{Name: names.DrinkCRD}, crd); err != nil {
			return err
		}
		crd.Status.StoredVersions = []string{storage}
		return m.Client.Status().Update(ctx, crd)
	})
	if err != nil {
		return fmt.Errorf("trimming status.storedVersions of %s: %w", names.DrinkCRD, err)
	}
	return nil
}

func (m *Migrator) pageSize() int64 {
	if m.PageSize > 0 {
		return m.PageSize
	}
	return 500
}

func (m *Migrator) workers() int {
	if m.Workers > 0 {
		return m.Workers
	}
	return 4
}

func (m *Migrator) backoff() wait.Backoff {
	if m.Backoff == (wait.Backoff{}) {
		return DefaultBackoff
	}
	return m.Backoff
}

func (m *Migrator) table() drinksversions.Table { return m.versions.OrDrinks() }

// legacyVersion returns the legacy version of t (drinksversions.Version's
// Legacy) when it is among the CRD's stored versions: Drinks without an
// authored-version record were written in it. "" when it is not.
func legacyVersion(t drinksversions.Table, stored []string) string {
	if v, ok := t.Legacy(); ok && slices.Contains(stored, v.Name) {
		return v.Name
	}
	return ""
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}
