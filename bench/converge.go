package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// convergence watches one namespace's Drinks and the operator's ConfigMaps
// and notes the moment every one of n Drinks is done with a correct
// ConfigMap. Watching, rather than listing in a loop, keeps the observer's
// own load on the API server small while the operator is measured.
type convergence struct {
	n      int
	drinks map[string]*drinksv1.Drink
	cms    map[string]*corev1.ConfigMap
	done   map[string]bool
}

// watchConvergence starts the watches; call it before the first create.
// The events are consumed at once (a watcher that falls behind is closed by
// the API server); the returned function blocks until convergence or
// timeout and returns when it happened.
func watchConvergence(ctx context.Context, c client.WithWatch, ns string, n int, timeout time.Duration) (func() (time.Time, error), error) {
	dw, err := c.Watch(ctx, &drinksv1.DrinkList{}, client.InNamespace(ns))
	if err != nil {
		return nil, fmt.Errorf("watching Drinks: %w", err)
	}
	cw, err := c.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns), client.MatchingLabels{managedByLabel: managedByValue})
	if err != nil {
		dw.Stop()
		return nil, fmt.Errorf("watching ConfigMaps: %w", err)
	}
	cv := &convergence{n: n, drinks: map[string]*drinksv1.Drink{}, cms: map[string]*corev1.ConfigMap{}, done: map[string]bool{}}
	type result struct {
		at  time.Time
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer dw.Stop()
		defer cw.Stop()
		at, err := cv.run(dw.ResultChan(), cw.ResultChan(), timeout)
		done <- result{at, err}
	}()
	return func() (time.Time, error) {
		r := <-done
		return r.at, r.err
	}, nil
}

func (cv *convergence) run(drinks, cms <-chan watch.Event, timeout time.Duration) (time.Time, error) {
	deadline := time.After(timeout)
	for {
		var name string
		select {
		case ev, ok := <-drinks:
			if !ok {
				return time.Time{}, errors.New("the Drink watch closed")
			}
			d, isDrink := ev.Object.(*drinksv1.Drink)
			if !isDrink {
				continue
			}
			name = d.Name
			cv.drinks[name] = d
		case ev, ok := <-cms:
			if !ok {
				return time.Time{}, errors.New("the ConfigMap watch closed")
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM {
				continue
			}
			name = cm.Name
			cv.cms[name] = cm
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
