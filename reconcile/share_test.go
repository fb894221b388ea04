package reconcile

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
)

// oneInformer is a cache whose every informer is inf: untilStopped only
// asks the cache for its informer, and what is under test is which
// handlers that informer calls, which no API server decides.
type oneInformer struct {
	cache.Cache
	inf toolscache.SharedIndexInformer
}

func (c oneInformer) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return c.inf, nil
}

// TestUntilStoppedRemovesItsHandler: a bucket controller's OperatorConfig
// source stops calling its handler once the controller stops, while the
// manager's informer it was added to runs on. source.Kind left its handler
// on the informer, so every handover added one more that queued into a
// stopped controller's queue.
func TestUntilStoppedRemovesItsHandler(t *testing.T) {
	events := watch.NewFake()
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &operatorv1alpha1.OperatorConfigList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return events, nil },
	}
	inf := toolscache.NewSharedIndexInformer(lw, &operatorv1alpha1.OperatorConfig{}, 0, toolscache.Indexers{})
	managerCtx, stopManager := context.WithCancel(context.Background())
	defer stopManager()
	go inf.RunWithContext(managerCtx)
	// The informer asks for a watch that starts with the initial objects
	// (none here) and ends them with a bookmark, as an API server sends.
	events.Action(watch.Bookmark, &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: "1", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}})
	if !toolscache.WaitForCacheSync(managerCtx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}

	var calls atomic.Int32
	count := handler.Funcs{
		CreateFunc: func(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			calls.Add(1)
		},
		UpdateFunc: func(context.Context, event.UpdateEvent, workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			calls.Add(1)
		},
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[ctrl.Request]())
	defer q.ShutDown()
	controllerCtx, stopController := context.WithCancel(context.Background())
	defer stopController()
	if err := untilStopped(oneInformer{inf: inf}, &operatorv1alpha1.OperatorConfig{}, count).Start(controllerCtx, q); err != nil {
		t.Fatal(err)
	}

	rv := 1
	config := func() *operatorv1alpha1.OperatorConfig {
		rv++
		return &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{
			Name: operatorv1alpha1.SingletonName, ResourceVersion: strconv.Itoa(rv),
		}}
	}
	events.Add(config())
	if err := wait.PollUntilContextTimeout(managerCtx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return calls.Load() == 1, nil
	}); err != nil {
		t.Fatalf("the running controller's handler did not see the OperatorConfig: %d calls", calls.Load())
	}

	stopController()
	// Each edit reaches the informer's store; the handler must stop
	// seeing them. Five edits in a row it did not see, 50 ms apart,
	// count as removed: a leaked handler sees each within microseconds.
	quiet := 0
	deadline := time.Now().Add(5 * time.Second)
	for quiet < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("the stopped controller's handler still sees OperatorConfig edits: %d calls", calls.Load())
		}
		before := calls.Load()
		events.Modify(config())
		time.Sleep(50 * time.Millisecond)
		if calls.Load() == before {
			quiet++
		} else {
			quiet = 0
		}
	}
	if _, ok, _ := inf.GetStore().GetByKey(operatorv1alpha1.SingletonName); !ok {
		t.Fatal("the manager's informer stopped with the controller")
	}
}

// failingController stops at once with err, as a controller whose
// sources cannot start does.
type failingController struct {
	controller.Controller
	err error
}

func (c failingController) Start(context.Context) error { return c.err }

// TestShareRunEndsWithItsController: when a share's controller stops on
// its own, shareRun stops the inventory and returns the error, so that the
// coordinator can give the share up and try again; before, it waited for
// the inventory, which waits for the share to be given up: never.
func TestShareRunEndsWithItsController(t *testing.T) {
	want := errors.New("source did not start")
	run := shareRun{controller: failingController{err: want}, inventory: &Inventory{NoDrinks: true, NoGuestbooks: true}}
	done := make(chan error, 1)
	go func() { done <- run.Start(context.Background()) }()
	select {
	case err := <-done:
		if !errors.Is(err, want) {
			t.Fatalf("Start returned %v, want %v", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after its controller stopped (it waits for a context nobody cancels)")
	}
}
