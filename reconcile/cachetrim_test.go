package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
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
		{name: "a layout no table has", version: "v1", edit: func(cm *corev1.ConfigMap) { cm.Annotations[names.LayoutAnnotation] = "v9" }, want: false},
		{name: "no layout", version: "v1", edit: func(cm *corev1.ConfigMap) { delete(cm.Annotations, names.LayoutAnnotation) }, want: false},
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
		{name: "shared: a bucket label that is no bucket number", version: "v1", edit: func(cm *corev1.ConfigMap) { cm.Labels[shard.BucketLabel] = "017" },
			bucket: "17", want: false},
		{name: "a second Drink's reference", version: "v1", edit: func(cm *corev1.ConfigMap) {
			cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "example.com/v1alpha1", Kind: "Drink", Name: "old", UID: "old-uid"})
		}, want: true},
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
			// References to other kinds than the operator's are left out.
			drinks := slices.DeleteFunc(slices.Clone(cm.OwnerReferences), func(ref metav1.OwnerReference) bool { return ref.Kind != "Drink" })
			if trimmed.Name != cm.Name || trimmed.Namespace != cm.Namespace || trimmed.UID != cm.UID || trimmed.ResourceVersion != cm.ResourceVersion ||
				!apiequality.Semantic.DeepEqual(trimmed.OwnerReferences, drinks) {
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
// authored version, whatever its annotations, and an authored version no
// version's name could be is cut to its start; the reconciler renders
// the same from it (or stalls on the same unknown version).
func TestTrimDrinkKeepsWhatItReads(t *testing.T) {
	long := strings.Repeat("v", 1<<10) // no version's name; a tenant's may be 256 KiB
	cut := strings.Repeat("v", 60) + cutVersionMark
	tests := []struct {
		name        string
		annotations map[string]string
		// course: the Drink holds the course's fields alone, so that
		// without an authored version it would count as authored in v1.
		course bool
		want   map[string]string
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
		{name: "an unknown version of 63 bytes", annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: strings.Repeat("v", 63)},
			want: map[string]string{drinksv1.AuthoredVersionAnnotation: strings.Repeat("v", 63)}},
		{name: "an unknown version of 1 KiB", annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: long},
			want: map[string]string{drinksv1.AuthoredVersionAnnotation: cut}},
		{name: "an unknown version of 1 KiB in the course form", annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: long},
			course: true, want: map[string]string{drinksv1.AuthoredVersionAnnotation: cut}},
		{name: "an unknown version of 1 KiB ending as a course layout", annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: long + drinksversions.CourseSuffix},
			course: true, want: map[string]string{drinksv1.AuthoredVersionAnnotation: cut}},
		{name: "an unknown version cut on a rune", annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: strings.Repeat("v", 59) + strings.Repeat("é", 100)},
			want: map[string]string{drinksv1.AuthoredVersionAnnotation: strings.Repeat("v", 59) + cutVersionMark}},
		{name: "paused, an unknown version of 1 KiB", annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: long, pause.Annotation: "true"},
			want: map[string]string{drinksv1.AuthoredVersionAnnotation: cut, pause.Annotation: "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &drinksv1.Drink{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "latte", UID: "u", Annotations: tt.annotations,
					Labels: map[string]string{"team": "a"}, Finalizers: []string{"example.com/f"},
					ManagedFields: []metav1.ManagedFieldsEntry{{Manager: FieldOwner}}},
				Spec: drinksv1.DrinkSpec{DisplayName: "Latte", Beverage: "coffee", Size: drinksv1.SizeSmall, Extras: []string{"milk", "honey"}},
			}
			if tt.course {
				d.Spec = drinksv1.DrinkSpec{Name: "Latte", Drink: "coffee", Size: drinksv1.SizeSmall}
			}
			d.Status.ConfigMapName, d.Status.AuthoredVersion = "latte", "v1"
			setDrinkReady(d, render.AuthoredVersion(d))
			whole := d.DeepCopy()
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
			gotData, gotErr := render.ConfigMapData(out.(*drinksv1.Drink))
			wantData, wantErr := render.ConfigMapData(whole)
			var gotUnknown, wantUnknown *render.UnknownVersionError
			if !maps.Equal(gotData, wantData) || errors.As(gotErr, &gotUnknown) != errors.As(wantErr, &wantUnknown) {
				t.Errorf("rendered from the trimmed Drink: %v, %.80v; from the whole one: %v, %.80v", gotData, gotErr, wantData, wantErr)
			}
			if again, _ := TrimDrink(out); !apiequality.Semantic.DeepEqual(again, want) {
				t.Errorf("trimmed twice: %+v, want %+v", again, want)
			}
		})
	}
}

// maxTrimmedBytes bounds the strings of a trimmed ConfigMap, whatever its
// whole object holds: the name, identity and layout of a Drink's
// ConfigMap, its digest and at most three owner references of names of up
// to 253 bytes.
const maxTrimmedBytes = 2 << 10

// TestTrimConfigMapBoundsATenantsConfigMap: a ConfigMap a tenant labels
// as a Drink's, with a layout annotation of 250 KiB that no other object
// has, 100 finalizers and 1,000 owner references of the Drink kind with
// names longer than an object's, costs the cache less than
// maxTrimmedBytes of strings, and the 250 KiB stays out of the intern
// table. The reconciler still decides as on the whole object: the same
// write, conflict or nothing, from the cache or after reading the whole
// ConfigMap from the API server, never from references the trim left out.
func TestTrimConfigMapBoundsATenantsConfigMap(t *testing.T) {
	d := &drinksv1.Drink{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "latte", UID: "drink-uid",
			Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}},
		Spec: drinksv1.DrinkSpec{DisplayName: "Latte", Beverage: "coffee", Size: drinksv1.SizeLarge, Extras: []string{"milk"}},
	}
	data, err := render.ConfigMapData(d)
	if err != nil {
		t.Fatal(err)
	}
	// drinkRefs are n references of the Drink kind, each with a name of
	// nameBytes; the one at uidAt (if any) carries the Drink's UID.
	drinkRefs := func(n, nameBytes, uidAt int) []metav1.OwnerReference {
		refs := make([]metav1.OwnerReference, n)
		for i := range refs {
			refs[i] = metav1.OwnerReference{APIVersion: drinksv1.GroupVersion.String(), Kind: "Drink",
				Name: fmt.Sprintf("%0*d", nameBytes, i), UID: types.UID(fmt.Sprintf("uid-%04d", i))}
			if i == uidAt {
				refs[i].UID = d.UID
			}
		}
		return refs
	}
	// A tenant's bulk, added to every case: 100 finalizers and, unless
	// the case wants none, 1,000 references of the Drink kind with names
	// past 253 bytes.
	bulk := func(cm *corev1.ConfigMap, ownerless bool) {
		for i := range 100 {
			cm.Finalizers = append(cm.Finalizers, fmt.Sprintf("example.org/finalizer-%03d-%s", i, strings.Repeat("f", 200)))
		}
		if !ownerless {
			cm.OwnerReferences = append(cm.OwnerReferences, drinkRefs(1000, 300, -1)...)
		}
	}
	bigLayout := func(cm *corev1.ConfigMap) {
		cm.Annotations[names.LayoutAnnotation] = strings.Repeat("l", 250<<10) + t.Name() + time.Now().String()
	}
	tests := []struct {
		name string
		edit func(cm *corev1.ConfigMap)
		// ownerless: no owner references at all.
		ownerless bool
		// wantRead: the reconciler reads the whole ConfigMap before it
		// decides.
		wantRead bool
	}{
		{name: "as the operator wrote it", edit: func(*corev1.ConfigMap) {}},
		{name: "a layout no table has", edit: bigLayout, wantRead: true},
		{name: "a foreign controller", edit: func(cm *corev1.ConfigMap) {
			bigLayout(cm)
			cm.OwnerReferences[0] = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: strings.Repeat("d", 1000),
				UID: "deployment-uid", Controller: ptr.To(true)}
		}, wantRead: true},
		{name: "a Drink controller with the Drink's UID and a name past 253 bytes", edit: func(cm *corev1.ConfigMap) {
			cm.OwnerReferences[0].Name = strings.Repeat("n", 254)
		}, wantRead: true},
		{name: "a controller of another kind with the Drink's UID", edit: func(cm *corev1.ConfigMap) {
			cm.OwnerReferences[0].Kind = "Pod"
		}, wantRead: true},
		{name: "no controller, the Drink's UID on a reference past the bound", edit: func(cm *corev1.ConfigMap) {
			cm.OwnerReferences = drinkRefs(1000, 253, 999)
		}, wantRead: true},
		{name: "no controller, the Drink's UID on a reference of another kind", edit: func(cm *corev1.ConfigMap) {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: d.UID}}
		}, wantRead: true},
		{name: "a reference left out with the controller's UID, ahead of it", edit: func(cm *corev1.ConfigMap) {
			cm.OwnerReferences = append([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: d.UID}}, cm.OwnerReferences...)
		}, wantRead: true},
		{name: "not labelled a Drink's, the Drink's UID on a reference past the bound", edit: func(cm *corev1.ConfigMap) {
			delete(cm.Labels, names.DrinkLabel)
			cm.OwnerReferences = drinkRefs(1000, 253, 999)
		}, wantRead: true},
		{name: "a tenant's without owners", edit: func(cm *corev1.ConfigMap) {
			delete(cm.Labels, names.DrinkLabel)
			cm.OwnerReferences = nil
			cm.Data = map[string]string{"blob": strings.Repeat("x", 1<<20)}
		}, ownerless: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name, UID: "cm-uid", ResourceVersion: "7",
					Labels:          map[string]string{names.ManagedByLabel: names.ManagedByValue, names.DrinkLabel: d.Name},
					Annotations:     map[string]string{names.LayoutAnnotation: "v1"},
					OwnerReferences: []metav1.OwnerReference{drinkOwnerRef(d)}},
				Data: maps.Clone(data),
			}
			tt.edit(whole)
			bulk(whole, tt.ownerless)
			out, err := TrimConfigMap(whole.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			trimmed := out.(*corev1.ConfigMap)
			if n := stringBytes(reflect.ValueOf(trimmed)); n > maxTrimmedBytes {
				t.Errorf("the trimmed ConfigMap holds %d bytes of strings, want at most %d: %d finalizers, %d owner references, annotations of %d bytes",
					n, maxTrimmedBytes, len(trimmed.Finalizers), len(trimmed.OwnerReferences), stringBytes(reflect.ValueOf(trimmed.Annotations)))
			}
			if layout := whole.Annotations[names.LayoutAnnotation]; len(layout) > maxInternedLength && interned.holds(layout) {
				t.Errorf("the intern table holds the layout annotation of %d bytes", len(layout))
			}
			if again, _ := TrimConfigMap(trimmed.DeepCopy()); !apiequality.Semantic.DeepEqual(again, trimmed) {
				t.Errorf("trimmed twice: %+v, once: %+v", again, trimmed)
			}
			want := ensureOutcome(t, d, data, whole, whole)
			got := ensureOutcome(t, d, data, trimmed, whole)
			if got.reason != want.reason || got.err != want.err || got.patch != want.patch {
				t.Errorf("from the trimmed ConfigMap: reason %q, error %q, patch of %d bytes; from the whole one: reason %q, error %q, patch of %d bytes",
					got.reason, got.err, len(got.patch), want.reason, want.err, len(want.patch))
			}
			if got.read != tt.wantRead {
				t.Errorf("read the whole ConfigMap: %v, want %v", got.read, tt.wantRead)
			}
		})
	}
}

// outcome is what one ensureConfigMap did.
type outcome struct {
	reason, err, patch string
	// read: it read the ConfigMap from the API server.
	read bool
}

// ensureOutcome runs ensureConfigMap for d with cached in the cache and
// whole in the API server. A write is recorded, not made.
func ensureOutcome(t *testing.T, d *drinksv1.Drink, data map[string]string, cached, whole *corev1.ConfigMap) outcome {
	t.Helper()
	var o outcome
	cache := fake.NewClientBuilder().WithObjects(cached.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
			b, err := patch.Data(obj)
			o.patch = string(b)
			return err
		},
	}).Build()
	api := fake.NewClientBuilder().WithObjects(whole.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			o.read = true
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	r := &DrinkReconciler{Client: cache, APIReader: api}
	reason, err := r.ensureConfigMap(context.Background(), d, data)
	o.reason = reason
	if err != nil {
		o.err = err.Error()
	}
	return o
}

// stringBytes is the length of every string v holds, map keys included.
func stringBytes(v reflect.Value) int {
	n := 0
	switch v.Kind() {
	case reflect.String:
		n = v.Len()
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			n = stringBytes(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			n += stringBytes(v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			n += stringBytes(v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			n += stringBytes(it.Key()) + stringBytes(it.Value())
		}
	}
	return n
}

// TestInternTableIsBounded: the intern table keeps no value longer than
// maxInternedLength, no more than half its bound per generation, and
// forgets a value no one asked for during two generations, while a value
// asked for in each generation stays and keeps its one copy.
func TestInternTableIsBounded(t *testing.T) {
	distinct := func(prefix string, n int) []string {
		values := make([]string, n)
		for i := range values {
			values[i] = fmt.Sprintf("%s-%d", prefix, i)
		}
		return values
	}
	generation := distinct("v", 4) // a generation's worth of values for a bound of 8
	tests := []struct {
		name  string
		bound int
		// asked are the values interned, in turn.
		asked      []string
		held, gone []string
		// shared is a value every copy intern returned of must be one.
		shared string
	}{
		{name: "a short value", bound: 8, asked: []string{"coffee"}, held: []string{"coffee"}, shared: "coffee"},
		{name: "a value at the length bound", bound: 8, asked: []string{strings.Repeat("x", maxInternedLength)},
			held: []string{strings.Repeat("x", maxInternedLength)}},
		{name: "a longer value", bound: 8, asked: []string{strings.Repeat("x", maxInternedLength+1)},
			gone: []string{strings.Repeat("x", maxInternedLength+1)}},
		{name: "two generations of others", bound: 8, asked: slices.Concat([]string{"old"}, generation, distinct("w", 4)),
			gone: []string{"old"}, held: distinct("w", 4)},
		{name: "asked for in each generation", bound: 8,
			asked: slices.Concat([]string{"tea"}, generation, []string{"tea"}, distinct("w", 4), []string{"tea"}, distinct("x", 4), []string{"tea"}),
			held:  []string{"tea"}, gone: generation, shared: "tea"},
		{name: "the manager's bound, ten times over", bound: maxInterned, asked: distinct("v", 10*maxInterned),
			gone: distinct("v", maxInterned)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := newInternTable(tt.bound)
			var copies []*byte
			for _, s := range tt.asked {
				got := table.intern(strings.Clone(s))
				if got != s {
					t.Fatalf("intern(%q) = %q", s, got)
				}
				if s == tt.shared {
					copies = append(copies, unsafe.StringData(got))
				}
			}
			if cur, prev := table.sizes(); cur > tt.bound/2 || prev > tt.bound/2 {
				t.Errorf("generations of %d and %d values, want at most %d each", cur, prev, tt.bound/2)
			}
			if lost := slices.DeleteFunc(slices.Clone(tt.held), table.holds); len(lost) > 0 {
				t.Errorf("the table lost %d of %d values, the first %.20q (%d bytes)", len(lost), len(tt.held), lost[0], len(lost[0]))
			}
			if kept := slices.DeleteFunc(slices.Clone(tt.gone), func(s string) bool { return !table.holds(s) }); len(kept) > 0 {
				t.Errorf("the table holds %d of %d values it should have forgotten, the first %.20q (%d bytes)", len(kept), len(tt.gone), kept[0], len(kept[0]))
			}
			if slices.ContainsFunc(copies, func(p *byte) bool { return p != copies[0] }) {
				t.Errorf("intern returned more than one copy of %q", tt.shared)
			}
		})
	}
}

// holds reports whether the table keeps s.
func (t *internTable) holds(s string) bool {
	t.Lock()
	defer t.Unlock()
	_, current := t.current[s]
	_, previous := t.previous[s]
	return current || previous
}

// sizes are the number of values of each generation.
func (t *internTable) sizes() (current, previous int) {
	t.Lock()
	defer t.Unlock()
	return len(t.current), len(t.previous)
}
