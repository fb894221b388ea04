package shard_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/shard"
)

// TestIdentityOfDropped: a share's cache keeps of a dropped bucket's
// Drinks and ConfigMaps only what names them, and passes everything else
// to the trim it wraps. Without it, a Drink created in a dropped bucket
// is held in full ("spec kept").
func TestIdentityOfDropped(t *testing.T) {
	const kept, dropped, never = 3, 7, 9
	served := shard.NewServed([]int{kept, dropped})
	served.Drop([]int{dropped})()
	// The trim stands for the manager's: it marks what it saw.
	trim := func(obj any) (any, error) {
		o := obj.(metav1.Object)
		o.SetAnnotations(map[string]string{"trimmed": "yes"})
		return obj, nil
	}
	drink := func(b int) *drinksv1.Drink {
		return &drinksv1.Drink{
			ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", UID: shard.UIDIn(b), ResourceVersion: "12",
				Labels: map[string]string{"tenant": "x"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
			Spec:   drinksv1.DrinkSpec{DisplayName: "tea", Beverage: "tea"},
			Status: drinksv1.DrinkStatus{ConfigMapName: "d"},
		}
	}
	configMap := func(bucket string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", UID: "cm-uid", ResourceVersion: "13",
				Labels:          map[string]string{shard.BucketLabel: bucket, "app.kubernetes.io/managed-by": "myoperator"},
				OwnerReferences: []metav1.OwnerReference{{Kind: "Drink", Name: "d", UID: "u"}}},
			Data: map[string]string{"beverage": "tea"},
		}
	}
	droppedDrink := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", UID: shard.UIDIn(dropped), ResourceVersion: "12"}}
	droppedConfigMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", UID: "cm-uid", ResourceVersion: "13",
		Labels: map[string]string{shard.BucketLabel: shard.BucketValue(dropped)}}}
	trimmed := func(o metav1.Object) metav1.Object {
		o.SetAnnotations(map[string]string{"trimmed": "yes"})
		return o
	}
	for _, tc := range []struct {
		name string
		in   metav1.Object
		want metav1.Object
	}{
		{"a kept bucket's Drink is trimmed", drink(kept), trimmed(drink(kept))},
		{"a dropped bucket's Drink keeps its name", drink(dropped), droppedDrink},
		{"what it kept is kept again", droppedDrink.DeepCopy(), droppedDrink},
		{"a bucket never served is trimmed", drink(never), trimmed(drink(never))},
		{"a kept bucket's ConfigMap is trimmed", configMap(shard.BucketValue(kept)), trimmed(configMap(shard.BucketValue(kept)))},
		{"a dropped bucket's ConfigMap keeps its name and bucket", configMap(shard.BucketValue(dropped)), droppedConfigMap},
		{"a ConfigMap's label that is no bucket is trimmed", configMap("07"), trimmed(configMap("07"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := served.IdentityOfDropped(trim)(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	t.Run("without a trim, managed fields are stripped", func(t *testing.T) {
		got, err := served.IdentityOfDropped(nil)(drink(kept))
		if err != nil {
			t.Fatal(err)
		}
		if d := got.(*drinksv1.Drink); d.ManagedFields != nil || d.Spec.Beverage != "tea" {
			t.Errorf("got managed fields %v, spec %+v", d.ManagedFields, d.Spec)
		}
	})
}
