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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
)

// DrinkCRD is the CRD whose objects are migrated.
const DrinkCRD = "drinks.example.com"

// LegacyVersion is the only version of the release before versions were
// recorded: a Drink stored then, with no authored-version record, was
// written in it.
const LegacyVersion = "v1alpha1"

// +kubebuilder:rbac:groups=example.com,resources=drinks,verbs=list;update

// Migrator rewrites every Drink in the storage version once, at start-up of
// the leader.
type Migrator struct {
	// Client talks to the API server directly (no cache): the migration
	// reads each page once and must see the stored objects.
	Client   client.Client
	Log      logr.Logger
	PageSize int64
	// Status receives the outcome, for the OperatorConfig's conditions.
	Status *Status
	// Notify, when set, receives an event for the OperatorConfig after
	// each attempt, so that its status reports the outcome.
	Notify chan<- event.GenericEvent
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

// Start runs the migration, retrying with backoff until it succeeds or the
// manager stops. A failure never stops the manager: it is logged and
// reported through Status.
func (m *Migrator) Start(ctx context.Context) error {
	backoff := wait.Backoff{Duration: 2 * time.Second, Factor: 2, Steps: 8, Cap: 5 * time.Minute}
	_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		err := m.Run(ctx)
		if m.Status != nil {
			m.Status.Set(err)
		}
		if m.Notify != nil {
			select {
			case m.Notify <- event.GenericEvent{Object: &operatorv1alpha1.OperatorConfig{
				ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}}:
			case <-ctx.Done():
			}
		}
		if err != nil {
			m.Log.Error(err, "storage migration failed; will retry")
			return false, nil
		}
		return true, nil
	})
	return nil
}

// Run migrates once: when storedVersions holds more than the storage
// version, every Drink is rewritten (page by page) and storedVersions is
// trimmed to the storage version. It is idempotent.
func (m *Migrator) Run(ctx context.Context) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := m.Client.Get(ctx, client.ObjectKey{Name: DrinkCRD}, crd); err != nil {
		return fmt.Errorf("reading CRD %s: %w", DrinkCRD, err)
	}
	storage := storageVersion(crd)
	stored := crd.Status.StoredVersions
	if len(stored) == 1 && stored[0] == storage {
		m.Log.V(1).Info("storage migration not needed", "storedVersions", stored)
		return nil
	}
	m.Log.Info("storage migration started", "from", stored, "to", storage)
	legacy := slices.Contains(stored, LegacyVersion)
	migrated, pages := 0, 0
	list := &drinksv1.DrinkList{}
	for {
		if err := m.Client.List(ctx, list, client.Limit(m.pageSize()), client.Continue(list.Continue)); err != nil {
			return fmt.Errorf("listing Drinks (page %d): %w", pages+1, err)
		}
		pages++
		for i := range list.Items {
			if err := m.rewrite(ctx, &list.Items[i], legacy); err != nil {
				return err
			}
			migrated++
		}
		m.Log.Info("storage migration progress", "migrated", migrated, "pages", pages)
		if list.Continue == "" {
			break
		}
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := m.Client.Get(ctx, client.ObjectKey{Name: DrinkCRD}, crd); err != nil {
			return err
		}
		crd.Status.StoredVersions = []string{storage}
		return m.Client.Status().Update(ctx, crd)
	}); err != nil {
		return fmt.Errorf("trimming status.storedVersions of %s: %w", DrinkCRD, err)
	}
	m.Log.Info("storage migration done", "migrated", migrated, "storedVersions", []string{storage})
	return nil
}

// rewrite writes a Drink back unchanged, which makes the API server store
// it in the storage version. A Drink from before versions were recorded
// gets its authored version, known from the stored versions, in the same
// write.
func (m *Migrator) rewrite(ctx context.Context, d *drinksv1.Drink, legacy bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if _, ok := d.Annotations[drinksv1.AuthoredVersionAnnotation]; !ok && legacy {
			if d.Annotations == nil {
				d.Annotations = map[string]string{}
			}
			d.Annotations[drinksv1.AuthoredVersionAnnotation] = LegacyVersion
		}
		err := m.Client.Update(ctx, d, client.FieldOwner("myoperator-storage-migration"))
		if apierrors.IsConflict(err) {
			// Someone else wrote it meanwhile (in the storage version, then);
			// read it again and write it back anyway, cheaply.
			if gerr := m.Client.Get(ctx, client.ObjectKeyFromObject(d), d); gerr != nil {
				return gerr
			}
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile: nothing left to migrate
	}
	if err != nil {
		return fmt.Errorf("rewriting Drink %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

func (m *Migrator) pageSize() int64 {
	if m.PageSize > 0 {
		return m.PageSize
	}
	return 500
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}
