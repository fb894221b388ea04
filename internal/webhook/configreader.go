package webhook

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
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
type liveConfigReader struct {
	live   client.Reader
	cached client.Reader
}

func (r liveConfigReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*operatorv1alpha1.OperatorConfig); !ok {
		return r.cached.Get(ctx, key, obj, opts...)
	}
	liveCtx, cancel := context.WithTimeout(ctx, liveConfigTimeout)
	defer cancel()
	err := r.live.Get(liveCtx, key, obj, opts...)
	if err == nil || apierrors.IsNotFound(err) {
		return err
	}
	configReadFallbacks.Inc()
	logf.FromContext(ctx).Info("reading the OperatorConfig from the API server failed; defaulting from the cache", "error", err.Error())
	return r.cached.Get(ctx, key, obj, opts...)
}

func (r liveConfigReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.cached.List(ctx, list, opts...)
}
