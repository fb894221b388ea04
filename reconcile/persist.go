package reconcile

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// persistStatus is the one status write of a reconcile: a merge patch of
// obj against read (the object as the reconcile read it), sent only when
// status(obj) differs from status(read), so that a reconcile that finds
// everything in place writes nothing. The patch carries read's
// resourceVersion: a status computed for one state of the object must not
// land on a later one, least of all on an object deleted and recreated
// under the same name meanwhile (it would be Ready with the dead one's
// status). The API server refuses such a patch (409); that is not an error
// here, since the change that caused it brings a new reconcile of the
// current object. An object deleted meanwhile is not an error either.
func persistStatus[T client.Object](ctx context.Context, c client.Client, read, obj T, status func(T) any) error {
	if apiequality.Semantic.DeepEqual(status(read), status(obj)) {
		return nil
	}
	err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(read, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// enqueueAll maps any event to a request for every object of the list's
// kind in the cache: an OperatorConfig change can change what every
// Drink or Guestbook should look like.
func enqueueAll(c client.Client, list client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []ctrl.Request {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing after an OperatorConfig change")
			return nil
		}
		var reqs []ctrl.Request
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	}
}

// revisitAll is enqueueAll as an event handler that queues the revisits at
// controller-runtime's low priority (its priority queue is on by default),
// as it does for the objects of an informer's initial list: after an
// OperatorConfig edit a Drink created or changed meanwhile is queued at the
// normal priority and goes before the revisit of every other one instead
// of waiting behind all of them (2.8 s to Ready behind 1,000 revisits;
// TestRevisitQueuedBehindNewDrinks).
func revisitAll(c client.Client, list client.ObjectList) handler.EventHandler {
	all := enqueueAll(c, list)
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		reqs := all(ctx, o)
		if pq, ok := q.(priorityqueue.PriorityQueue[ctrl.Request]); ok {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, reqs...)
			return
		}
		for _, r := range reqs {
			q.Add(r)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			add(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			add(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			add(ctx, e.Object, q)
		},
	}
}
