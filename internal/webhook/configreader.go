package webhook

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
)

// liveConfigReader reads the OperatorConfig from the API server and
// everything else from the manager's cache. A default written into a
// Drink's spec stays there, so it must come from the OperatorConfig as
// stored, not from a cache that may still hold an older one: a replica
// that just started (or whose watch lags) would otherwise default a Drink
// created right after a config change with the previous size
// (test/faults TestStaleAndDroppedEvents found it with informers held on
// old lists after a restart). One GET of one small object per Drink write.
type liveConfigReader struct {
	live   client.Reader
	cached client.Reader
}

func (r liveConfigReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*operatorv1alpha1.OperatorConfig); ok {
		return r.live.Get(ctx, key, obj, opts...)
	}
	return r.cached.Get(ctx, key, obj, opts...)
}

func (r liveConfigReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.cached.List(ctx, list, opts...)
}
