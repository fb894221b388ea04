package reconcile_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/logging"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/test/framework/testenv"
)

// operatorNS is the namespace the operator runs in.
const operatorNS = "myoperator-system"

var (
	env     *envtest.Environment
	cfg     *rest.Config
	k8s     client.Client
	logs    = &syncBuffer{}
	level   zap.AtomicLevel
	testCtx = context.Background()
)

// TestMain starts the project-built API server with config/crd and
// config/webhook, and the whole manager (app.New: webhooks, migration and
// every reconciler) in this process, logging into a buffer the tests read.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if env, err = testenv.New(testenv.Options{Webhooks: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the API server:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	var log logr.Logger
	log, level = logging.NewTo(logs, false)
	ctrl.SetLogger(log)
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The operator's namespace and the default operand namespace, as the
	// install creates them: the manager records the accepted configuration
	// in the first, and does not create namespaces.
	for _, ns := range []string{operatorNS, operandNS} {
		if err := k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := testenv.StartManager(ctx, env, cfg, app.Options{LogLevel: level, Namespace: operatorNS}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// syncBuffer is a log sink the tests can read while the manager writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// namespace creates a namespace of the test's own and removes it after.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rec-"}}
	if err := k8s.Create(testCtx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, ns) })
	return ns.Name
}

// kstatusOf computes the kstatus of an object as the API server serves it.
func kstatusOf(t *testing.T, obj client.Object) status.Status {
	t.Helper()
	u := &unstructured.Unstructured{}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u.Object = m
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
