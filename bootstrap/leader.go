package bootstrap

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LeaderRelease releases the defaults an earlier release wrote into the
// spec once more, from the manager, when it starts leading. Each pod's
// bootstrap already tries, but while a rollout replaces an earlier
// release, that release's pods still answer the OperatorConfig webhook
// entry it installed and write the defaults straight back. The API server
// keeps one connection to a webhook Service, and kube-proxy pins a
// connection to one pod, so the bootstrap of every new pod may meet an
// old one for its whole retry window; in a Helm adoption, where the old
// entry outlives the install, the defaults then stayed until a pod
// restarted. A leader of this release starts leading once the leader
// before it has gone, which in a rollout is the last old pod or nearly,
// so by then (or within Timeout) nobody writes them back.
type LeaderRelease struct {
	// Client reads and patches OperatorConfig cluster uncached: the
	// decision rests on managedFields.
	Client client.Client
	Log    logr.Logger
	// Interval between attempts while the defaults come back, and Timeout
	// bounds them (ReleaseEarlierDefaultsWithin).
	Interval, Timeout time.Duration
}

// NeedLeaderElection returns true: one writer, and the one of the running
// release that leads.
func (r *LeaderRelease) NeedLeaderElection() bool { return true }

// Start releases the defaults and returns. An error is logged, not
// returned: the manager runs without it, as the defaults only mean the
// fields keep an earlier release's value, and the next leader tries again.
func (r *LeaderRelease) Start(ctx context.Context) error {
	if err := ReleaseEarlierDefaultsWithin(ctx, r.Log, r.Client, r.Interval, r.Timeout); err != nil {
		r.Log.Error(err, "releasing the defaults an earlier release wrote; the next leader tries again")
	}
	return nil
}
