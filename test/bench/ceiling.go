package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CeilingStep is the plain client's create rate at one concurrency.
type CeilingStep struct {
	Workers  int
	Rate     float64 // creates per second
	P50, P99 float64 // seconds
	Creates  int
}

// payload makes each ConfigMap carry 1 KiB of data, about the size of a
// Drink with its status.
var payload = strings.Repeat("x", 1024)

// Ceiling creates 1 KiB ConfigMaps in ns with each worker count in turn for
// d, and returns each step. No webhook and no controller sees these
// ConfigMaps, so the plateau of the rate is the API server's (and etcd's)
// own write limit on this machine.
func Ceiling(ctx context.Context, cs *kubernetes.Clientset, ns string, workers []int, d time.Duration) ([]CeilingStep, error) {
	steps := make([]CeilingStep, 0, len(workers))
	for _, w := range workers {
		load := runWorkers(ctx, w, until(d), func(ctx context.Context, i int) error {
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d-%d", w, i), Namespace: ns},
				Data:       map[string]string{"payload": payload},
			}
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			return err
		})
		if load.FirstErr != nil {
			return steps, fmt.Errorf("ceiling with %d workers: %d creates failed, first: %w", w, load.Errors, load.FirstErr)
		}
		lat := seconds(load.Latencies)
		steps = append(steps, CeilingStep{
			Workers: w, Creates: len(lat), Rate: float64(len(lat)) / load.Elapsed.Seconds(),
			P50: Percentile(lat, 50), P99: Percentile(lat, 99),
		})
	}
	return steps, nil
}

// BestWorkers is the worker count with the highest create rate.
func BestWorkers(steps []CeilingStep) CeilingStep {
	best := CeilingStep{}
	for _, s := range steps {
		if s.Rate > best.Rate {
			best = s
		}
	}
	return best
}
