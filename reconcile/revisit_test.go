package reconcile

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
)

// drinkLister answers List with n Drinks: what the manager's cache holds
// when an OperatorConfig edit makes the controller revisit all of them.
// Only the queue's order is under test here; the revisit against a real
// API server is measured by make bench.
type drinkLister struct {
	client.Client
	n int
}

func (l drinkLister) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	dl := list.(*drinksv1.DrinkList)
	for i := range l.n {
		dl.Items = append(dl.Items, drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("old-%d", i)}})
	}
	return nil
}

// TestRevisitQueuedBehindNewDrinks: after an OperatorConfig edit queues
// every Drink, a Drink created meanwhile is the next one a worker takes.
func TestRevisitQueuedBehindNewDrinks(t *testing.T) {
	fresh := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "new"}}
	cfg := &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName, ResourceVersion: "1"}}
	// An edit: a new resourceVersion (controller-runtime already lowers
	// the priority of an update that changed nothing, a resync).
	edited := cfg.DeepCopy()
	edited.ResourceVersion = "2"
	for _, tc := range []struct {
		name string
		ev   func(q priorityqueue.PriorityQueue[ctrl.Request], h handler.EventHandler)
	}{
		{"update", func(q priorityqueue.PriorityQueue[ctrl.Request], h handler.EventHandler) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: cfg, ObjectNew: edited}, q)
		}},
		{"create", func(q priorityqueue.PriorityQueue[ctrl.Request], h handler.EventHandler) {
			h.Create(context.Background(), event.CreateEvent{Object: cfg}, q)
		}},
	} {
		q := priorityqueue.New[ctrl.Request]("revisit-" + tc.name)
		h := revisitAll(drinkLister{n: 1000}, &drinksv1.DrinkList{})
		tc.ev(q, h)
		q.Add(fresh) // the new Drink's own event, at the normal priority
		got, _ := q.Get()
		t.Logf("%s: %d queued, first taken: %s", tc.name, q.Len()+1, got.Name)
		if got != fresh {
			t.Errorf("%s: a worker took %s first; the new Drink waits behind the revisit of 1000", tc.name, got.Name)
		}
		q.ShutDown()
	}
}
