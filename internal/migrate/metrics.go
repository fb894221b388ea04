package migrate

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// The migration's progress, for an alert on a migration that does not
// finish and for an admin watching a long one: until pending is 0, the
// CRD still names a version the next release may no longer serve.
var (
	migrationPending = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "myoperator_storage_migration_pending",
		Help: "1 while the Drink CRD's status.storedVersions holds more than the storage version (a storage migration has not finished), else 0. Exported by the leader.",
	})
	migrationRemaining = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "myoperator_storage_migration_objects_remaining",
		Help: "Drinks the running storage migration has still to rewrite in its current listing (0 when none runs). Exported by the leader.",
	})
	migrationFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "myoperator_storage_migration_failed_attempts_total",
		Help: "Storage migration attempts that failed and will be retried (the OperatorConfig's Degraded condition says why).",
	})
)

func init() {
	metrics.Registry.MustRegister(migrationPending, migrationRemaining, migrationFailures)
}

func setPending(pending bool) {
	v := 0.0
	if pending {
		v = 1
	}
	migrationPending.Set(v)
	if !pending {
		migrationRemaining.Set(0)
	}
}

// setRemaining records, after a page, how many Drinks the listing has
// still to return: the API server counts them for a paginated list
// (remainingItemCount); without that count the last value stays.
func setRemaining(list *drinksv1.DrinkList) {
	switch {
	case list.Continue == "":
		migrationRemaining.Set(0)
	case list.RemainingItemCount != nil:
		migrationRemaining.Set(float64(*list.RemainingItemCount))
	}
}
