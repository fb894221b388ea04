package leaderlock

import (
	"context"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
)

// Lock is a Lease lock that can be released once, before the leader
// elector itself stops. After Release it never writes the Lease again:
// controller-runtime keeps its elector running until every runnable has
// stopped and then releases the Lease itself, by then perhaps another
// replica's (client-go's release checks only the holder it last saw).
type Lock struct {
	resourcelock.Interface

	// mu orders Release with the elector's reads and writes, which share
	// the Lease object (and its resourceVersion) inside the wrapped lock.
	mu       sync.Mutex
	released bool
}

// New returns the lock of the Lease namespace/name. The holder identity is
// <podName>_<uuid>, or <hostname>_<uuid> (controller-runtime's) without a
// pod name: the optional fence (config/leader-fence) compares its prefix
// with the pod name in the request's bound token. Its client times out
// after half the renew deadline, as controller-runtime's does, so that a
// hung request cannot take the whole deadline.
func New(cfg *rest.Config, namespace, name, podName string, renewDeadline time.Duration) (*Lock, error) {
	if podName == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, err
		}
		podName = host
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	cfg.Timeout = max(renewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	id := podName + "_" + string(uuid.NewUUID())
	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	inner, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, cs.CoreV1(), cs.CoordinationV1(),
		// client-go's scheme, built when the process starts, knows the
		// Lease the events are about; a scheme of the project's own was a
		// second copy of every Kubernetes type, about 1 MiB of every
		// replica's heap (test/bench/results/HISTORY.md).
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: events.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: id})})
	if err != nil {
		return nil, err
	}
	return &Lock{Interface: inner}, nil
}

// Get reads the Lease.
func (l *Lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Interface.Get(ctx)
}

// Create creates the Lease, unless the lock was released.
func (l *Lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	return l.Interface.Create(ctx, ler)
}

// Update writes the Lease, unless the lock was released: then it writes
// nothing and reports success, so that the elector, which controller-runtime
// stops only after the webhook drain, neither retakes the Lease nor
// releases it a second time over a new holder; the process leads nothing
// any more (its reconcilers have stopped and do not start again).
func (l *Lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	return l.Interface.Update(ctx, ler)
}

// Release gives the Lease up if this process holds it, as client-go's
// release does (no holder, a one-second duration, the transitions kept),
// so that a waiting replica takes it at its next try instead of after the
// lease duration. From then on the lock writes nothing.
func (l *Lock) Release(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return false, nil
	}
	rec, _, err := l.Interface.Get(ctx)
	if err != nil {
		// Not released: client-go's own release at the very end tries
		// again, as it would have without this lock.
		return false, err
	}
	l.released = true
	if rec.HolderIdentity != l.Identity() {
		return false, nil
	}
	now := metav1.Now()
	return true, l.Interface.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	})
}
