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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
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

// cacheOwnersCutAnnotation marks, on a ConfigMap in the cache only, that
// TrimConfigMap left owner references out or replaced the controller
// reference (trimOwnerRefs): the owners the cache shows may then answer
// controlledBy and namesOwner otherwise than the whole object, so
// ensureConfigMap reads the whole object before it calls the ConfigMap a
// conflict or adopts it. Like cacheDigestAnnotation it is never sent.
const cacheOwnersCutAnnotation = "myoperator.example.com/cache-owners-cut"

// TrimConfigMap is the cache transform of ConfigMaps. The cache selects
// ConfigMaps by the operator's label, which anyone who may create a
// ConfigMap can set, with any annotations, finalizers and owner
// references: the transform keeps only what the reconcilers read, each of
// a bounded size, so that a tenant's ConfigMaps cost the manager a few
// hundred bytes each, whatever they hold.
//
// A Drink's ConfigMap (it carries names.DrinkLabel) is replaced by its
// name, identity, owner references (trimOwnerRefs) and layout, plus a
// digest of its labels and layout data in cacheDigestAnnotation: still
// enough to tell a ConfigMap that needs no write, which is every
// ConfigMap of a converged cluster. The layout is kept only when it names
// a layout of drinksversions.Drinks, the only values the operator writes;
// any other is kept as "", which matches no Drink's layout, so the
// reconciler reads such a ConfigMap whole from the API server, as for any
// layout that differs. The bucket label is kept only when it is a bucket
// number (shard.ParseBucket), the only values the operator writes; any
// other matches no replica's bucket, as "" does. Finalizers are dropped:
// no reconciler reads them.
//
// Any other ConfigMap the cache holds (a Guestbook's, or one anyone
// labelled so, in any namespace) keeps its identity and owner references
// (trimOwnerRefs) only, with an empty digest: the operator reads no more
// of them from the cache (that one exists, and whose it is). An empty digest matches no
// Drink's layout, so a reconciler that needs such a ConfigMap's data reads
// it from the API server. The layout keys are those of
// drinksversions.Drinks: a reconciler given another table still decides
// right, since a layout whose keys the tables disagree on gets another
// digest, and the ConfigMap is read whole.
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
	refs, cut, ambiguous := trimOwnerRefs(cm.OwnerReferences)
	trimmed := &corev1.ConfigMap{
		TypeMeta: cm.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: cm.Name, Namespace: intern(cm.Namespace), UID: cm.UID, ResourceVersion: cm.ResourceVersion,
			Generation: cm.Generation, DeletionTimestamp: cm.DeletionTimestamp,
			OwnerReferences: refs,
			Annotations:     map[string]string{cacheDigestAnnotation: ""},
		},
	}
	if cut {
		trimmed.Annotations[cacheOwnersCutAnnotation] = ""
	}
	if _, ok := cm.Labels[names.DrinkLabel]; !ok {
		return trimmed, nil
	}
	layout := cm.Annotations[names.LayoutAnnotation]
	if drinksversions.Drinks.Layout(layout) == nil {
		layout = ""
	}
	trimmed.Annotations[names.LayoutAnnotation] = intern(layout)
	if !ambiguous {
		// Otherwise the empty digest: a reference left out shares the
		// controller's UID, and ownerRefsMatch, which looks at every
		// reference with that UID, could answer otherwise on the whole
		// object.
		trimmed.Annotations[cacheDigestAnnotation] = configMapDigest(layout, layoutKeys(drinksversions.Drinks, layout),
			cm.Labels[names.ManagedByLabel], cm.Labels[names.DrinkLabel], cm.Data)
	}
	if b, ok := cm.Labels[shard.BucketLabel]; ok {
		if _, ok := shard.ParseBucket(b); ok {
			// The bucket label, which replicas that share the Drinks
			// compare, kept under its own key among the trimmed
			// annotations.
			trimmed.Annotations[shard.BucketLabel] = intern(b)
		}
	}
	return trimmed, nil
}

// maxOtherOwnerRefs bounds the references other than the controller that
// a trimmed ConfigMap keeps. The operator writes one reference, its
// controller; a second one of the operator's kinds (the previous release's
// reference that a Drink adopts, in namesOwner) is rare, and a ConfigMap
// with more is sorted out by the reconciler on the whole object.
const maxOtherOwnerRefs = 2

// maxUIDLength is the length of every UID the API server assigns (a UUID);
// a reference with a longer one names no object.
const maxUIDLength = 36

// trimOwnerRefs returns the owner references a trimmed ConfigMap keeps,
// which are what the reconcilers read of them: the controller reference
// when it is to a Drink or a Guestbook (controlledBy, ownerRefsMatch, and
// the watches that map a ConfigMap to its controller), and up to
// maxOtherOwnerRefs other references to those kinds (namesOwner). A
// controller reference to anything else is replaced by one that names
// nothing, so that the ConfigMap still has a controller, which is neither
// a Drink nor a Guestbook; the rest is left out. A reference the API
// server would accept but that names no object the operator made (a name
// longer than any object's, a UID that is not one) is not of the
// operator's kinds. cut reports whether a reference was left out or
// replaced, ambiguous whether one left out shares the controller's UID.
func trimOwnerRefs(refs []metav1.OwnerReference) (kept []metav1.OwnerReference, cut, ambiguous bool) {
	controller := slices.IndexFunc(refs, isControllerRef)
	others := 0
	for i, ref := range refs {
		switch {
		case i == controller && operatorsRef(ref):
			kept = append(kept, internOwnerRef(ref))
		case i == controller:
			kept = append(kept, metav1.OwnerReference{Controller: ptr.To(true)})
			cut = true
		case !isControllerRef(ref) && operatorsRef(ref) && others < maxOtherOwnerRefs:
			kept = append(kept, internOwnerRef(ref))
			others++
		default:
			cut = true
			ambiguous = ambiguous || (controller >= 0 && ref.UID == refs[controller].UID)
		}
	}
	return kept, cut, ambiguous
}

func isControllerRef(ref metav1.OwnerReference) bool { return ref.Controller != nil && *ref.Controller }

// operatorsRef reports whether ref is to a kind of the operator's, in any
// version, and could name an object: each of its strings is no longer
// than the API server allows of what it names.
func operatorsRef(ref metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || len(gv.Version) > validation.DNS1035LabelMaxLength ||
		len(ref.Name) > validation.DNS1123SubdomainMaxLength || len(ref.UID) > maxUIDLength {
		return false
	}
	return (gv.Group == drinksv1.GroupVersion.Group && ref.Kind == "Drink") ||
		(gv.Group == webappv1.GroupVersion.Group && ref.Kind == "Guestbook")
}

// ownersCut reports whether the trimmed ConfigMap cm lacks owner
// references of the whole one (cacheOwnersCutAnnotation).
func ownersCut(cm *corev1.ConfigMap) bool {
	_, ok := cm.Annotations[cacheOwnersCutAnnotation]
	return ok
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
// reads (a tenant's annotations, up to 256 KiB per Drink, or labels would
// otherwise sit in the manager's memory), bounds the authored version
// (authoredVersion), and shares the strings that Drinks repeat
// (namespace, versions, beverage, size, extras, condition types and
// reasons); what the reconciler decides is unchanged. Status patches are
// computed between two cached copies, so the annotations left out are
// never written back.
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
			d.Annotations[drinksv1.AuthoredVersionAnnotation] = authoredVersion(v)
		}
	case !authored:
		d.Annotations = nil
	case known:
		// Drinks share one map per version (read only, as every object
		// in the cache).
		d.Annotations = shared
	default:
		d.Annotations = map[string]string{drinksv1.AuthoredVersionAnnotation: authoredVersion(v)}
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

// authoredVersion is what the cache keeps of an authored version v that
// no version of drinksversions.Drinks has. A CRD names its versions with
// DNS labels of at most 63 bytes: a value that long or shorter (a newer
// release's version, met after a rollback) is kept as it is, and the
// Drink's status shows it. A longer value names no version of any
// release, and it is the tenant's, up to 256 KiB: it is cut to its start,
// ended by cutVersionMark, short enough to be kept as it is when trimmed
// again. The reconciler decides the same on both, since it reads the
// annotation as it is (render.AuthoredVersion): a value that names no
// layout stalls the Drink with the unknown version, whatever the value.
// (A status message that quoted the whole value, past the 32 KiB the
// schema allows a condition's message, was refused.) The annotation is
// cut, not dropped: without one, a Drink in the course form would count
// as authored in v1.
func authoredVersion(v string) string {
	if len(v) <= validation.DNS1035LabelMaxLength {
		return v
	}
	return strings.ToValidUTF8(v[:validation.DNS1035LabelMaxLength-len(cutVersionMark)], "") + cutVersionMark
}

// cutVersionMark ends an authored version cut by authoredVersion: no
// version's name holds a dot, so a cut value never names one.
const cutVersionMark = "..."

// maxInterned bounds the strings kept for sharing, and maxInternedLength
// their length: the values are users' (a tenant may invent a beverage per
// Drink, or write long ones), and a table that grew with them would be a
// leak. What is worth sharing is short (namespaces, versions, beverages,
// condition types and reasons); a longer value is kept unshared, as
// without the table.
const (
	maxInterned       = 4096
	maxInternedLength = 128
)

// interned is the table intern shares strings through.
var interned = newInternTable(maxInterned)

// internTable keeps the values of two generations, each of at most half
// its bound. A value found only in the previous generation moves to the
// current one; when the current one is full it becomes the previous one
// and a new one starts, so that a value no object asks for any more (its
// objects deleted, or the tenant's values turned over) leaves the table
// within two turns, rather than holding its place for good.
type internTable struct {
	sync.Mutex
	current, previous map[string]string
	// perGeneration is the most values a generation holds.
	perGeneration int
}

func newInternTable(bound int) *internTable {
	return &internTable{current: map[string]string{}, perGeneration: bound / 2}
}

// authoredOnly holds, per version of drinksversions.Drinks, the annotations
// of a Drink that carries only the webhook's AuthoredVersionAnnotation.
var authoredOnly = func() map[string]map[string]string {
	m := map[string]map[string]string{}
	for _, v := range drinksversions.Drinks.Names() {
		m[v] = map[string]string{drinksv1.AuthoredVersionAnnotation: v}
	}
	return m
}()

// intern returns the shared copy of s through interned. The standard
// library's unique package does not fit: its table forgets a value once
// no handle to it is left, so values seen again after a garbage collection
// were copied anew. This table forgets only values not asked for during
// two generations (internTable).
func intern(s string) string { return interned.intern(s) }

func (t *internTable) intern(s string) string {
	if s == "" || len(s) > maxInternedLength {
		return s
	}
	t.Lock()
	defer t.Unlock()
	if v, ok := t.current[s]; ok {
		return v
	}
	v, ok := t.previous[s]
	if ok {
		delete(t.previous, s)
	} else {
		v = strings.Clone(s) // not a view into a larger decoded buffer
	}
	if len(t.current) >= t.perGeneration {
		t.previous, t.current = t.current, make(map[string]string, t.perGeneration)
	}
	t.current[v] = v
	return v
}

// internOwnerRef is ref with its API version and kind shared.
func internOwnerRef(ref metav1.OwnerReference) metav1.OwnerReference {
	ref.APIVersion, ref.Kind = intern(ref.APIVersion), intern(ref.Kind)
	return ref
}
