package reconcile

import (
	"context"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/example/myoperator/internal/shard"
)

// shareRun runs one share's Drink controller and the inventory of its
// Drinks until the share moves; the count goes with the controller.
type shareRun struct {
	controller controller.Controller
	inventory  *Inventory
}

func (s shareRun) Start(ctx context.Context) error {
	// Deferred in this order so that they run cancel first, then wait: a
	// controller that stops on its own (an error) ends the inventory too,
	// and the share is handed back, rather than waiting for ctx forever.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() { _ = s.inventory.Start(ctx) })
	return s.controller.Start(ctx)
}

// limited runs a reconcile only while it holds one of slots, and inside
// served.Hold, so that a bucket dropped from served is written no more
// once Drop returns.
type limited struct {
	slots  chan struct{}
	served *shard.Served
	inner  crreconcile.Reconciler
}

func (l limited) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		// The controller is stopping (its bucket moves): the queue is
		// shut down and drops this; otherwise it comes back.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	defer func() { <-l.slots }()
	defer l.served.Hold()()
	return l.inner.Reconcile(ctx, req)
}

// untilStopped is a source of obj's events from c's informer, through h,
// whose handler is removed when the controller stops: a bucket's
// controller lives as long as the replica serves the bucket, the manager's
// cache as long as the process, and source.Kind leaves its handler on the
// informer, one more at every handover.
func untilStopped(c cache.Cache, obj client.Object, h handler.EventHandler) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[ctrl.Request]) error {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		object := func(o any) (client.Object, bool) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			co, ok := o.(client.Object)
			return co, ok
		}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) {
				if co, ok := object(o); ok {
					h.Create(ctx, event.CreateEvent{Object: co}, q)
				}
			},
			UpdateFunc: func(old, o any) {
				oc, ok1 := object(old)
				nc, ok2 := object(o)
				if ok1 && ok2 {
					h.Update(ctx, event.UpdateEvent{ObjectOld: oc, ObjectNew: nc}, q)
				}
			},
			DeleteFunc: func(o any) {
				if co, ok := object(o); ok {
					h.Delete(ctx, event.DeleteEvent{Object: co}, q)
				}
			},
		})
		if err != nil {
			return err
		}
		go func() {
			<-ctx.Done()
			_ = inf.RemoveEventHandler(reg)
		}()
		return nil
	})
}
