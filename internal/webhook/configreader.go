package webhook

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/freshread"
)

// liveConfigTimeout bounds the OperatorConfig read inside a Drink's
// admission: the webhook's own timeout is 5 s, and a slow read must end in
// the cached fallback, not in a refused Drink.
const liveConfigTimeout = 2 * time.Second

// liveConfigReader reads the OperatorConfig from the API server and
// everything else (the accepted-configuration record) from the manager's
// cache. A default size written into a Drink's spec stays there, so it
// must come from the OperatorConfig as stored, not from a cache that may
// still hold an older one: a replica that just started on a lagging API
// server's lists (or whose watch lags) would otherwise default a Drink
// created right after a defaultSize change to the previous size
// (test/faults TestStaleAndDroppedEvents, the held stale restart).
//
// The read is a request made while the API server waits on this webhook.
// config/manager/flowschema.yaml classifies it on a higher priority level
// than the operator's other requests, as the API Priority and Fairness
// documentation advises for such callbacks: squeezed together with them it
// queued behind the very requests that waited on it, and the webhook timed
// out (TestLeaseUnderAPFSqueeze). If the read still fails, the cached
// OperatorConfig is the best there is: a Drink is not refused for it.
//
// Reads are shared among the reviews waiting on them (internal/freshread):
// each review still gets a read begun after it arrived, but a flood of
// reviews, which anyone reaching the webhook port can send, costs at most
// one read at a time and ConfigReadsPerSecond.
type liveConfigReader struct {
	live   client.Reader
	cached client.Reader
	reads  *freshread.Group[*operatorv1alpha1.OperatorConfig]
}

// ConfigReadsPerSecond and ConfigReadBurst bound the live OperatorConfig
// reads: shared, one read answers every Drink admission that waited on
// it, so the rate follows the API server's latency, not the rate of Drink
// writes.
const (
	ConfigReadsPerSecond = 20
	ConfigReadBurst      = 5
)

func newLiveConfigReader(live, cached client.Reader) liveConfigReader {
	return liveConfigReader{live: live, cached: cached,
		reads: freshread.New[*operatorv1alpha1.OperatorConfig](ConfigReadsPerSecond, ConfigReadBurst, liveConfigTimeout)}
}

func (r liveConfigReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*operatorv1alpha1.OperatorConfig); !ok {
		return r.cached.Get(ctx, key, obj, opts...)
	}
	liveCtx, cancel := context.WithTimeout(ctx, liveConfigTimeout)
	defer cancel()
	read, err := r.reads.Do(liveCtx, key.String(), func(ctx context.Context) (*operatorv1alpha1.OperatorConfig, error) {
		oc := &operatorv1alpha1.OperatorConfig{}
		return oc, r.live.Get(ctx, key, oc, opts...)
	})
	if err == nil {
		// Shared with the other reviews that waited on the read: a copy.
		read.DeepCopyInto(obj.(*operatorv1alpha1.OperatorConfig))
		return nil
	}
	if apierrors.IsNotFound(err) {
		return err
	}
	if ctx.Err() != nil {
		// The review itself ended: the API server stopped waiting on the
		// webhook (its timeout) or its client left. Nobody reads this
		// answer, and the read did not fail for want of the API server:
		// not a fallback, which the metric and TestLeaseUnderAPFSqueeze
		// count (on a loaded machine, 14 reviews that the API server gave
		// up on within the same 7 ms were counted as fallbacks).
		return ctx.Err()
	}
	configReadFallbacks.Inc()
	logf.FromContext(ctx).Info("reading the OperatorConfig from the API server failed; defaulting from the cache", "error", err.Error())
	return r.cached.Get(ctx, key, obj, opts...)
}

func (r liveConfigReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.cached.List(ctx, list, opts...)
}
