package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/scheme"
)

// convergence follows one namespace's Drinks and the operator's ConfigMaps
// and notes the moment every one of n Drinks is done with a correct
// ConfigMap. It watches rather than lists in a loop, to keep the observer's
// own load on the API server small while the operator is measured, and it
// watches through informers: under full load the API server closes a
// watcher that falls behind, and an informer resumes where it stopped.
type convergence struct {
	n      int
	drinks map[string]*drinksv1.Drink
	cms    map[string]*corev1.ConfigMap
	done   map[string]bool
}

// watchConvergence starts the informers and waits for their first sync;
// call it before the first create. The returned function blocks until
// convergence or timeout and returns when it happened.
func watchConvergence(ctx context.Context, cfg *rest.Config, ns string, n int, timeout time.Duration) (func() (time.Time, error), error) {
	ctx, cancel := context.WithCancel(ctx)
	c, err := cache.New(cfg, cache.Options{
		Scheme:            scheme.New(),
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{managedByLabel: managedByValue})},
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	events := make(chan client.Object, 1024)
	send := func(obj any) {
		if o, ok := obj.(client.Object); ok {
			select {
			case events <- o:
			case <-ctx.Done(): // converged or given up: nobody reads any more
			}
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{AddFunc: send, UpdateFunc: func(_, obj any) { send(obj) }}
	for _, obj := range []client.Object{&drinksv1.Drink{}, &corev1.ConfigMap{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			cancel()
			return nil, err
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			cancel()
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("the bench's informers in %s did not sync", ns)
	}
	cv := &convergence{n: n, drinks: map[string]*drinksv1.Drink{}, cms: map[string]*corev1.ConfigMap{}, done: map[string]bool{}}
	type result struct {
		at  time.Time
		err error
	}
	done := make(chan result, 1)
	go func() {
		at, err := cv.run(events, timeout)
		cancel()
		done <- result{at, err}
	}()
	return func() (time.Time, error) {
		r := <-done
		return r.at, r.err
	}, nil
}

func (cv *convergence) run(events <-chan client.Object, timeout time.Duration) (time.Time, error) {
	deadline := time.After(timeout)
	for {
		var name string
		select {
		case obj := <-events:
			name = obj.GetName()
			switch o := obj.(type) {
			case *drinksv1.Drink:
				cv.drinks[name] = o
			case *corev1.ConfigMap:
				cv.cms[name] = o
			}
		case <-deadline:
			return time.Time{}, fmt.Errorf("after %s only %d of %d Drinks converged", timeout, len(cv.done), cv.n)
		}
		d := cv.drinks[name]
		if d != nil && drinkDone(d) && configMapCorrect(cv.cms[name], d) {
			cv.done[name] = true
		} else {
			delete(cv.done, name)
		}
		if len(cv.done) == cv.n {
			return time.Now(), nil
		}
	}
}
