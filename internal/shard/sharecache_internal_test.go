package shard

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// TestShareCacheReducesDropped: the cache of a share passes its Drinks and
// ConfigMaps through Served.IdentityOfDropped, so that once a bucket is
// dropped what the cache goes on receiving of it is kept by name only,
// while the buckets kept are cached whole. Built with the bare trims, the
// dropped bucket's Drink keeps its spec.
func TestShareCacheReducesDropped(t *testing.T) {
	const kept, dropped = 3, 7
	served := NewServed([]int{kept, dropped})
	opts, err := shareCacheOptions(Options{ConfigMaps: labels.Everything()}, served, func() {})
	if err != nil {
		t.Fatal(err)
	}
	served.Drop([]int{dropped})()
	transform := func(obj client.Object) any {
		for o, by := range opts.ByObject {
			if _, same := o.(*drinksv1.Drink); same == isDrink(obj) {
				if by.Transform == nil {
					return obj
				}
				got, err := by.Transform(obj)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
		}
		t.Fatalf("no cache options for %T", obj)
		return nil
	}
	for _, tc := range []struct {
		name      string
		bucket    int
		wantWhole bool
	}{
		{"kept", kept, true},
		{"dropped", dropped, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := transform(&drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Name: "d", UID: UIDIn(tc.bucket)},
				Spec: drinksv1.DrinkSpec{Beverage: "tea"}}).(*drinksv1.Drink)
			if whole := d.Spec.Beverage == "tea"; whole != tc.wantWhole {
				t.Errorf("Drink cached whole: %v, want %v", whole, tc.wantWhole)
			}
			cm := transform(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d",
				Labels: map[string]string{BucketLabel: BucketValue(tc.bucket)}}, Data: map[string]string{"beverage": "tea"}}).(*corev1.ConfigMap)
			if whole := cm.Data["beverage"] == "tea"; whole != tc.wantWhole {
				t.Errorf("ConfigMap cached whole: %v, want %v", whole, tc.wantWhole)
			}
		})
	}
}

func isDrink(obj client.Object) bool {
	_, ok := obj.(*drinksv1.Drink)
	return ok
}
