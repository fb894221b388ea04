package reconcile

import (
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/pause"
	"github.com/example/myoperator/internal/shard"
)

// The manager caches one ConfigMap and one Drink per Drink; at 50,000
// Drinks those two caches are most of its memory (the heap profile of the
// benchmark: the decoded ConfigMaps 42 %, the decoded Drinks about 40 %).
// The transforms below keep in the cache only what the Drink controller
// reads, and share the strings that every object repeats. Objects in the
// cache are read only: the client hands out deep copies, and event
// handlers only read them.

// cacheDigestAnnotation holds, on a Drink's ConfigMap in the cache only, a
// digest of what configMapMatches compares: the labels and the data keys
// of the layout the ConfigMap is in. It is never sent to the API server:
// a ConfigMap the reconciler writes is read whole from the API server
// first (ensureConfigMap).
const cacheDigestAnnotation = "myoperator.example.com/cache-digest"

// TrimConfigMap is the cache transform of ConfigMaps. A Drink's ConfigMap
// (it carries names.DrinkLabel) is replaced by its name, identity, owner
// references and layout, plus a digest of its labels and layout data in
// cacheDigestAnnotation: about half the memory of the whole object, and
// still enough to tell a ConfigMap that needs no write, which is every
// ConfigMap of a converged cluster. Any other ConfigMap the cache holds
// (it carries the operator's label: a Guestbook's, or one anyone labelled
// so, in any namespace) keeps its identity and owner references only,
// with an empty digest: the operator reads no more of them from the cache
// (that one exists, and whose it is), and a tenant who labels large
// ConfigMaps costs the manager a few hundred bytes each, not their data.
// An empty digest matches no Drink's layout, so a reconciler that needs
// such a ConfigMap's data reads it from the API server. The layout keys
// are those of drinksversions.Drinks: a reconciler given another table
// still decides right, since a layout whose keys the tables disagree on
// gets another digest, and the ConfigMap is read whole.
func TrimConfigMap(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil // a tombstone of a deleted object, kept as it is
	}
	if isTrimmed(cm) && cm.Labels == nil {
		// Trimmed already: the informer may transform an object it holds
		// again (a relist replaces it). Only a trimmed object has no
		// labels, since the cache lists ConfigMaps by label.
		return cm, nil
	}
	if _, ok := cm.Labels[names.DrinkLabel]; !ok {
		return &corev1.ConfigMap{
			TypeMeta: cm.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Name: cm.Name, Namespace: intern(cm.Namespace), UID: cm.UID, ResourceVersion: cm.ResourceVersion,
				Generation: cm.Generation, DeletionTimestamp: cm.DeletionTimestamp,
				OwnerReferences: internOwnerRefs(cm.OwnerReferences),
				Annotations:     map[string]string{cacheDigestAnnotation: ""},
			},
		}, nil
	}
	layout := cm.Annotations[names.LayoutAnnotation]
	digest := configMapDigest(layout, layoutKeys(drinksversions.Drinks, layout), cm.Labels[names.ManagedByLabel], cm.Labels[names.DrinkLabel], cm.Data)
	trimmed := &corev1.ConfigMap{
		TypeMeta: cm.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: cm.Name, Namespace: intern(cm.Namespace), UID: cm.UID, ResourceVersion: cm.ResourceVersion,
			Generation: cm.Generation, DeletionTimestamp: cm.DeletionTimestamp, Finalizers: cm.Finalizers,
			OwnerReferences: internOwnerRefs(cm.OwnerReferences),
			Annotations: map[string]string{
				names.LayoutAnnotation: intern(layout),
				cacheDigestAnnotation:  digest,
			},
		},
	}
	if b, ok := cm.Labels[shard.BucketLabel]; ok {
		// The bucket label, which replicas that share the Drinks compare,
		// kept under its own key among the trimmed annotations.
		trimmed.Annotations[shard.BucketLabel] = intern(b)
	}
	return trimmed, nil
}

// configMapDigest digests what makes a ConfigMap in the layout match a
// Drink: the two labels the reconciler sets and, for each of the layout's
// keys (sorted), whether it is present and its value. Keys outside the
// layout (another writer's) do not count, as in configMapMatches. SHA-256,
// cut to 128 bits: a collision, which would hide a change from the
// reconciler, cannot be made on purpose.
func configMapDigest(layout string, keys []string, managedBy, drink string, data map[string]string) string {
	h := sha256.New()
	field := func(s string) {
		var n [4]byte
		n[0], n[1], n[2], n[3] = byte(len(s)>>24), byte(len(s)>>16), byte(len(s)>>8), byte(len(s))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(layout)
	field(managedBy)
	field(drink)
	for _, k := range keys {
		v, ok := data[k]
		field(k)
		if ok {
			field("+" + v)
		} else {
			field("-")
		}
	}
	return base64.RawStdEncoding.EncodeToString(h.Sum(nil)[:16])
}

// trimmedMatches is configMapMatches for a trimmed ConfigMap of the cache.
// data is the Drink's layout rendered, so its keys are the layout's.
func trimmedMatches(cm *corev1.ConfigMap, d *drinksv1.Drink, layout string, data map[string]string, bucket string) bool {
	return (bucket == "" || cm.Annotations[shard.BucketLabel] == bucket) &&
		cm.Annotations[names.LayoutAnnotation] == layout &&
		cm.Annotations[cacheDigestAnnotation] == configMapDigest(layout, slices.Sorted(maps.Keys(data)), names.ManagedByValue, d.Name, data) &&
		ownerRefsMatch(cm, d)
}

// isTrimmed reports whether cm, read from the cache, is trimmed. (Read
// from the API server, the annotation would be anyone's; it is ignored.)
func isTrimmed(cm *corev1.ConfigMap) bool {
	_, ok := cm.Annotations[cacheDigestAnnotation]
	return ok
}

// TrimDrink is the cache transform of Drinks. It drops managed fields,
// labels, finalizers and every annotation but AuthoredVersionAnnotation
// and a pause (pause.Annotation "true"), the only ones the reconciler
// reads (a tenant's annotations, up to 256 KiB
// per Drink, or labels would otherwise sit in the manager's memory), and
// shares the strings that
// Drinks repeat (namespace, versions, beverage, size, extras, condition
// types and reasons); what the reconciler reads is unchanged. Status
// patches are computed between two cached copies, so the annotations left
// out are never written back.
func TrimDrink(obj any) (any, error) {
	d, ok := obj.(*drinksv1.Drink)
	if !ok {
		return obj, nil
	}
	d.ManagedFields, d.Labels, d.Finalizers = nil, nil, nil
	d.Namespace = intern(d.Namespace)
	v, authored := d.Annotations[drinksv1.AuthoredVersionAnnotation]
	switch shared, known := authoredOnly[v]; {
	case pause.Requested(d.Annotations):
		// Few Drinks are paused at a time: no sharing.
		d.Annotations = map[string]string{pause.Annotation: pause.On}
		if authored {
			d.Annotations[drinksv1.AuthoredVersionAnnotation] = v
		}
	case !authored:
		d.Annotations = nil
	case known:
		// Drinks share one map per version (read only, as every object
		// in the cache).
		d.Annotations = shared
	default:
		d.Annotations = map[string]string{drinksv1.AuthoredVersionAnnotation: v}
	}
	d.Spec.Beverage = intern(d.Spec.Beverage)
	d.Spec.Drink = intern(d.Spec.Drink)
	d.Spec.Size = drinksv1.Size(intern(string(d.Spec.Size)))
	for i := range d.Spec.Extras {
		d.Spec.Extras[i] = intern(d.Spec.Extras[i])
	}
	d.Status.AuthoredVersion = intern(d.Status.AuthoredVersion)
	if d.Status.ConfigMapName == d.Name {
		d.Status.ConfigMapName = d.Name
	}
	for i := range d.Status.Conditions {
		c := &d.Status.Conditions[i]
		c.Type, c.Reason = intern(c.Type), intern(c.Reason)
		c.Status = metav1.ConditionStatus(intern(string(c.Status)))
	}
	return d, nil
}

// maxInterned bounds the strings kept for sharing: the values are users'
// (a tenant may invent a beverage per Drink), and a table that grew with
// them would be a leak. Past the bound a value is kept unshared, as
// without the table.
const maxInterned = 4096

var interned = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// authoredOnly holds, per version of drinksversions.Drinks, the annotations
// of a Drink that carries only the webhook's AuthoredVersionAnnotation.
var authoredOnly = func() map[string]map[string]string {
	m := map[string]map[string]string{}
	for _, v := range drinksversions.Drinks.Names() {
		m[v] = map[string]string{drinksv1.AuthoredVersionAnnotation: v}
	}
	return m
}()

// intern returns the shared copy of s. The standard library's unique
// package does not fit: its table forgets a value once no handle to it is
// left, so values seen again after a garbage collection were copied anew.
func intern(s string) string {
	if s == "" {
		return ""
	}
	interned.Lock()
	defer interned.Unlock()
	if v, ok := interned.m[s]; ok {
		return v
	}
	if len(interned.m) < maxInterned {
		s = strings.Clone(s) // not a view into a larger decoded buffer
		interned.m[s] = s
	}
	return s
}

func internOwnerRefs(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind = intern(refs[i].APIVersion), intern(refs[i].Kind)
	}
	return refs
}
