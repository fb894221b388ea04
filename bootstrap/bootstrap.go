package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/names"
)

// FieldOwner names the initContainer in the managedFields of the
// OperatorConfig it creates, apart from the manager (reconcile.FieldOwner).
const FieldOwner = "myoperator-bootstrap"

// The initContainer runs as the manager's ServiceAccount; it needs these.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get,resourceNames=operatorconfigs.operator.example.com
// +kubebuilder:rbac:groups=operator.example.com,resources=operatorconfigs,verbs=create

// Step is one named thing the initContainer does, in order.
type Step struct {
	Name string
	Run  func(ctx context.Context, log logr.Logger) error
}

// Options configure the steps.
type Options struct {
	// Timeout bounds the wait for the CRD.
	Timeout time.Duration
	// Interval is how often the CRD is checked and progress is logged.
	Interval time.Duration
}

// Steps returns the initContainer's steps: wait for the OperatorConfig CRD,
// remove from the spec the defaults an earlier release wrote there, then
// create the OperatorConfig when it is absent.
func Steps(c client.Client, opts Options) []Step {
	return []Step{
		{Name: "wait for the OperatorConfig CRD", Run: func(ctx context.Context, log logr.Logger) error {
			return WaitForCRD(ctx, log, c, names.OperatorConfigCRD, opts)
		}},
		{Name: "release the defaults an earlier release wrote", Run: func(ctx context.Context, log logr.Logger) error {
			return ReleaseEarlierDefaultsWithin(ctx, log, c, opts.Interval, min(opts.Timeout, releaseRetryFor))
		}},
		{Name: "create the default OperatorConfig", Run: func(ctx context.Context, log logr.Logger) error {
			return CreateDefaultConfig(ctx, log, c)
		}},
	}
}

// Run runs the steps in order and stops at the first failure.
func Run(ctx context.Context, log logr.Logger, steps []Step) error {
	for i, s := range steps {
		log := log.WithValues("step", s.Name)
		log.Info("step started", "number", i+1, "of", len(steps))
		if err := s.Run(ctx, log); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		log.Info("step done")
	}
	return nil
}

// ErrCRDMissing means the CRD was not established within the timeout.
var ErrCRDMissing = errors.New("CRD not established")

// WaitForCRD waits, bounded by opts.Timeout, until the named CRD exists and
// is Established, logging progress at every check.
func WaitForCRD(ctx context.Context, log logr.Logger, c client.Client, name string, opts Options) error {
	started := time.Now()
	var last string
	err := wait.PollUntilContextTimeout(ctx, opts.Interval, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, crd)
		switch {
		case apierrors.IsNotFound(err):
			last = "not found"
		case err != nil:
			// The API server may still be starting or the network flaky:
			// keep waiting within the bound, but say why.
			last = err.Error()
		case established(crd):
			return true, nil
		default:
			last = "found but not established yet"
		}
		log.Info("waiting for CRD", "crd", name, "state", last,
			"waited", time.Since(started).Round(time.Second).String(), "timeout", opts.Timeout.String())
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w: %s is %s after %s; install the CRDs first (kubectl apply -k config/crd, or make install)",
			ErrCRDMissing, name, last, opts.Timeout)
	}
	log.Info("CRD established", "crd", name)
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// DefaultConfig is the OperatorConfig the initContainer creates: an empty
// spec. The spec holds only what users choose; every field they leave out
// follows the running release's default, which status.effective shows
// with its source. (Releases up to v0.2.0 wrote every default here, and
// so could never change one: ReleaseEarlierDefaults undoes that.)
func DefaultConfig() *operatorv1alpha1.OperatorConfig {
	return &operatorv1alpha1.OperatorConfig{
		ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName},
	}
}

// CreateDefaultConfig creates the OperatorConfig "cluster" when it is absent.
// It only ever creates: an existing OperatorConfig belongs to its users (or
// their GitOps tool) and is left exactly as it is.
func CreateDefaultConfig(ctx context.Context, log logr.Logger, c client.Client) error {
	cfg := DefaultConfig()
	err := c.Create(ctx, cfg, client.FieldOwner(FieldOwner))
	switch {
	case apierrors.IsAlreadyExists(err):
		log.Info("OperatorConfig exists; left untouched", "name", cfg.Name)
		return nil
	case err != nil:
		return fmt.Errorf("creating OperatorConfig %s: %w", cfg.Name, err)
	}
	log.Info("created OperatorConfig with an empty spec: every value is the release's default (see status.effective)", "name", cfg.Name, "resourceVersion", cfg.ResourceVersion)
	return nil
}
