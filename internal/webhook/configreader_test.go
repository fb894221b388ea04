package webhook

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
)

// reader answers every Get with err, or else by naming the object after
// itself, so that a test sees which reader answered.
type reader struct {
	name string
	err  error
}

func (r reader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.err != nil {
		return r.err
	}
	obj.SetName(r.name)
	return nil
}

func (r reader) List(context.Context, client.ObjectList, ...client.ListOption) error { return r.err }

// TestLiveConfigReader: which reader answers the Drink defaulter's reads.
// The live read is an HTTP request that can fail (timeout, 429, a broken
// connection); what the API server answers when it does succeed is the
// envtest suites' (TestStaleAndDroppedEvents, TestLeaseUnderAPFSqueeze).
func TestLiveConfigReader(t *testing.T) {
	cached := reader{name: "cached"}
	gone := apierrors.NewNotFound(schema.GroupResource{Group: operatorv1alpha1.GroupVersion.Group, Resource: "operatorconfigs"}, "cluster")
	// The review's own context, ended: the API server stopped waiting on
	// the webhook (its timeout), so the live read ends with it.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name          string
		ctx           context.Context
		live          reader
		obj           client.Object
		want          string
		wantErr       bool
		wantFallbacks float64
	}{
		{"OperatorConfig read live", context.Background(), reader{name: "live"}, &operatorv1alpha1.OperatorConfig{}, "live", false, 0},
		{"OperatorConfig missing: NotFound, not the cache's", context.Background(), reader{err: gone}, &operatorv1alpha1.OperatorConfig{}, "", true, 0},
		{"live read failed: the cache's, counted", context.Background(), reader{err: errors.New("context deadline exceeded")}, &operatorv1alpha1.OperatorConfig{}, "cached", false, 1},
		{"review ended: its error, no fallback counted", ended, reader{err: context.Canceled}, &operatorv1alpha1.OperatorConfig{}, "", true, 0},
		{"the accepted-configuration record from the cache", context.Background(), reader{name: "live"}, &corev1.ConfigMap{}, "cached", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(configReadFallbacks)
			err := newLiveConfigReader(tc.live, cached).Get(tc.ctx, client.ObjectKey{Name: "cluster"}, tc.obj)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %t", err, tc.wantErr)
			}
			if got := tc.obj.GetName(); got != tc.want {
				t.Errorf("answered by %q, want %q", got, tc.want)
			}
			if got := testutil.ToFloat64(configReadFallbacks) - before; got != tc.wantFallbacks {
				t.Errorf("fallbacks counted: %v, want %v", got, tc.wantFallbacks)
			}
		})
	}
}
