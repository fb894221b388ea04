package reconcile

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/pause"
	"github.com/example/myoperator/internal/render"
	"github.com/example/myoperator/internal/shard"
)

// TestTrimmedConfigMapMatchesAsTheWholeOne: for every way a ConfigMap can
// differ from what its Drink wants, the trimmed copy in the cache gives
// the same answer as the whole object; a wrong "matches" would leave drift
// uncorrected, a wrong "differs" would cost a read per reconcile.
func TestTrimmedConfigMapMatchesAsTheWholeOne(t *testing.T) {
	drink := func(version string) *drinksv1.Drink {
		return &drinksv1.Drink{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "latte", UID: "drink-uid",
				Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: version}},
			Spec: drinksv1.DrinkSpec{DisplayName: "Latte", Beverage: "coffee", Size: drinksv1.SizeLarge, SugarCubes: 2, Extras: []string{"milk"}},
		}
	}
	tests := []struct {
		name    string
		version string // the Drink's authored version
		edit    func(cm *corev1.ConfigMap)
		// bucket is the bucket label the replica serving the Drink wants
		// ("": the replicas do not share the Drinks).
		bucket string
		want   bool
	}{
		{name: "as written", version: "v1", edit: func(*corev1.ConfigMap) {}, want: true},
		{name: "another writer's key", version: "v1", edit: func(cm *corev1.ConfigMap) { cm.Data["note"] = "mine" }, want: true},
		{name: "another writer's label and annotation", version: "v1", edit: func(cm *corev1.ConfigMap) {
			cm.Labels["team"], cm.Annotations["note"] = "a", "b"
		}, want: true},
		{name: "a layout value changed", version: "v1", edit: func(cm *corev1.ConfigMap) { cm.Data["beverage"] = "tea" }, want: false},
		{name: "a layout key removed", version: "v1", edit: func(cm *corev1.ConfigMap) { delete(cm.Data, "extras") }, want: false},
		{name: "a value moved to another key", version: "v1", edit: func(cm *corev1.ConfigMap) {
			cm.Data["beverage"], cm.Data["displayName"] = cm.Data["displayName"], cm.Data["beverage"]
		}, want: false},
		{name: "no data", version: "v1", edit: func(cm *corev1.ConfigMap) { cm.Data = nil }, want: false},
		{name: "the Drink label names another Drink", version: "v1", edit: func(cm *corev1.ConfigMap) { cm.Labels[names.DrinkLabel] = "mocha" }, want: false},
		{name: "the managed-by label changed", version: "v1", edit: func(cm *corev1.ConfigMap) { cm.Labels[names.ManagedByLabel] = "helm" }, want: false},
		{name: "another layout", version: "v1", edit: func(cm *corev1.ConfigMap) { cm.Annotations[names.LayoutAnnotation] = "v1beta1" }, want: false},
		{name: "the Drink is no longer controller", version: "v1", edit: func(cm *corev1.ConfigMap) {
			cm.OwnerReferences[0].Controller = nil
		}, want: false},
		{name: "a second owner", version: "v1", edit: func(cm *corev1.ConfigMap) {
			cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "pod-uid"})
		}, want: true},
		{name: "v1alpha1 as written", version: "v1alpha1", edit: func(*corev1.ConfigMap) {}, want: true},
		{name: "v1alpha1 with a v1 key left over", version: "v1alpha1", edit: func(cm *corev1.ConfigMap) { cm.Data["extras"] = "milk" }, want: true},
		{name: "v1beta1 sugar changed", version: "v1beta1", edit: func(cm *corev1.ConfigMap) { cm.Data["sugar"] = "9" }, want: false},
		{name: "shared: labelled with its bucket", version: "v1", edit: func(cm *corev1.ConfigMap) { cm.Labels[shard.BucketLabel] = "17" },
			bucket: "17", want: true},
		{name: "shared: no bucket label", version: "v1", edit: func(*corev1.ConfigMap) {}, bucket: "17", want: false},
		{name: "shared: another bucket", version: "v1", edit: func(cm *corev1.ConfigMap) { cm.Labels[shard.BucketLabel] = "3" },
			bucket: "17", want: false},
		{name: "not shared: a bucket label left over", version: "v1", edit: func(cm *corev1.ConfigMap) { cm.Labels[shard.BucketLabel] = "3" },
			want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := drink(tt.version)
			data, err := render.ConfigMapData(d)
			if err != nil {
				t.Fatal(err)
			}
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name, UID: "cm-uid", ResourceVersion: "7",
					Labels:          map[string]string{names.ManagedByLabel: names.ManagedByValue, names.DrinkLabel: d.Name},
					Annotations:     map[string]string{names.LayoutAnnotation: tt.version},
					OwnerReferences: []metav1.OwnerReference{drinkOwnerRef(d)},
					ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: FieldOwner}}},
				Data: map[string]string{},
			}
			for k, v := range data {
				cm.Data[k] = v
			}
			tt.edit(cm)
			whole := configMapMatches(cm, d, tt.version, data, tt.bucket)
			out, err := TrimConfigMap(cm.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			trimmed := out.(*corev1.ConfigMap)
			if !isTrimmed(trimmed) {
				t.Fatalf("a Drink's ConfigMap was not trimmed: %+v", trimmed)
			}
			if trimmed.Data != nil || trimmed.Labels != nil || trimmed.ManagedFields != nil {
				t.Errorf("the trimmed ConfigMap keeps data %v, labels %v or managed fields %v", trimmed.Data, trimmed.Labels, trimmed.ManagedFields)
			}
			if trimmed.Name != cm.Name || trimmed.Namespace != cm.Namespace || trimmed.UID != cm.UID || trimmed.ResourceVersion != cm.ResourceVersion ||
				!apiequality.Semantic.DeepEqual(trimmed.OwnerReferences, cm.OwnerReferences) {
				t.Errorf("the trimmed ConfigMap lost its identity or owners: %+v", trimmed.ObjectMeta)
			}
			if got := trimmedMatches(trimmed, d, tt.version, data, tt.bucket); whole != tt.want || got != whole {
				t.Errorf("matches: the whole ConfigMap %v, the trimmed one %v, want %v", whole, got, tt.want)
			}
			// The informer may transform an object it already holds.
			again, err := TrimConfigMap(trimmed.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(again, trimmed) {
				t.Errorf("trimmed twice: %+v, once: %+v", again, trimmed)
			}
		})
	}
}

// TestTrimConfigMapKeepsOthersIdentity: a ConfigMap that is not a Drink's
// (a Guestbook's, or anyone's that carries the operator's label) keeps
// only its identity and owner references, whatever it holds, and its
// empty digest matches no Drink; trimmed again, it stays as it is.
func TestTrimConfigMapKeepsOthersIdentity(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "webapp.my.domain/v1", Kind: "Guestbook", Name: "gb", UID: "g", Controller: ptr.To(true)}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tenants", UID: "u", ResourceVersion: "7",
			Labels:          map[string]string{names.ManagedByLabel: names.ManagedByValue, "big": strings.Repeat("x", 63)},
			Annotations:     map[string]string{cacheDigestAnnotation: "forged", "keep": strings.Repeat("y", 1<<18)},
			OwnerReferences: []metav1.OwnerReference{owner}, Finalizers: []string{"example.com/f"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: FieldOwner}}},
		Data:       map[string]string{"config": strings.Repeat("z", 1<<20)},
		BinaryData: map[string][]byte{"blob": make([]byte, 1<<10)},
	}
	out, err := TrimConfigMap(cm.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tenants", UID: "u", ResourceVersion: "7",
		OwnerReferences: []metav1.OwnerReference{owner}, Annotations: map[string]string{cacheDigestAnnotation: ""}}}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tenants", UID: "g"}}
	if trimmedMatches(got, d, "v1", map[string]string{"config": cm.Data["config"]}, "") {
		t.Error("an identity-only ConfigMap matched a Drink's data")
	}
	if again, _ := TrimConfigMap(got); !apiequality.Semantic.DeepEqual(again, want) {
		t.Errorf("trimmed twice: %+v", again)
	}
	// A tombstone of a deleted object passes as it is.
	if out, _ := TrimConfigMap("tombstone"); out != "tombstone" {
		t.Errorf("tombstone became %v", out)
	}
}

// TestTrimDrinkKeepsWhatItReads: a trimmed Drink equals the decoded one
// without managed fields, labels, finalizers and every annotation but the
// authored version, whatever its annotations.
func TestTrimDrinkKeepsWhatItReads(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        map[string]string
	}{
		{name: "the webhook's annotation only", annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1beta1"},
			want: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1beta1"}},
		{name: "a tenant's annotations too", annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1", "note": strings.Repeat("x", 1<<17)},
			want: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}},
		{name: "an unknown version", annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v9", "note": "x"},
			want: map[string]string{drinksv1.AuthoredVersionAnnotation: "v9"}},
		{name: "a tenant's only", annotations: map[string]string{"note": "x"}, want: nil},
		{name: "paused", annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1", pause.Annotation: "true", "note": "x"},
			want: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1", pause.Annotation: "true"}},
		{name: "resumed", annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1", pause.Annotation: "false"},
			want: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}},
		{name: "none", annotations: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &drinksv1.Drink{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "latte", UID: "u", Annotations: tt.annotations,
					Labels: map[string]string{"team": "a"}, Finalizers: []string{"example.com/f"},
					ManagedFields: []metav1.ManagedFieldsEntry{{Manager: FieldOwner}}},
				Spec: drinksv1.DrinkSpec{DisplayName: "Latte", Beverage: "coffee", Size: drinksv1.SizeSmall, Extras: []string{"milk", "honey"}},
			}
			d.Status.ConfigMapName, d.Status.AuthoredVersion = "latte", "v1"
			setDrinkReady(d, render.AuthoredVersion(d))
			want := d.DeepCopy()
			want.ManagedFields, want.Labels, want.Finalizers, want.Annotations = nil, nil, nil, tt.want
			out, err := TrimDrink(d)
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(out, want) {
				t.Errorf("got %+v, want %+v", out, want)
			}
			if render.AuthoredVersion(out.(*drinksv1.Drink)) != render.AuthoredVersion(want) {
				t.Errorf("authored version %q, want %q", render.AuthoredVersion(out.(*drinksv1.Drink)), render.AuthoredVersion(want))
			}
			if again, _ := TrimDrink(out); !apiequality.Semantic.DeepEqual(again, want) {
				t.Errorf("trimmed twice: %+v, want %+v", again, want)
			}
		})
	}
}
