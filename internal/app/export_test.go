package app

import (
	"fmt"
	"sync/atomic"

	"github.com/example/myoperator/internal/migrate"
)

// managers numbers the managers this test process builds, for names that
// must be unique per process.
var managers atomic.Int64

// InProcess returns o set up as one of several managers in this test
// process: controller names are unique per process, so each manager after
// the first would otherwise fail to build. The binary runs one manager and
// never needs it.
func InProcess(o Options) Options {
	o.inProcess.skipNameValidation = true
	o.inProcess.rotatorName = fmt.Sprintf("cert-rotator-%d", managers.Add(1))
	return o
}

// WithMigrationTuning returns o, in process, with tune applied to the
// storage migrator before the manager runs it (a shorter page size and
// back-off, a hook between pages).
func WithMigrationTuning(o Options, tune func(*migrate.Migrator)) Options {
	o = InProcess(o)
	o.inProcess.tuneMigration = tune
	return o
}
