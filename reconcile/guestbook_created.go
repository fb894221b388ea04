package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// The operator creates an operand with a create, not an apply (see
// createOperand), so its field manager owns what the create wrote through
// an Update entry, apart from its Apply entry. A later apply that leaves a
// field out removes only what the Apply entry alone owns: a field the
// create wrote stays. The fixed fields never leave the StatefulSet, but
// spec.pod's do: a node selector removed from the Guestbook, the default
// resources replaced by the user's, the Soft anti-affinity term replaced
// by the Hard one. releaseCreatedFields removes those with a patch.

// step is one step of a path in a StatefulSet: a field, or, with key set,
// the item of the list field whose name is key.
type step struct{ field, key string }

func path(fields ...string) []step {
	out := make([]step, len(fields))
	for i, f := range fields {
		out[i] = step{field: f}
	}
	return out
}

// podSpecPath is the path of the pod template's spec, then more.
func podSpecPath(more ...step) []step {
	return append(path("spec", "template", "spec"), more...)
}

// releasable are the paths of the StatefulSet that spec.pod may add and
// take away again, at the level the API server merges them: atomic lists
// and values whole, map entries and keyed list items one by one. live is
// the StatefulSet, for the keys of its maps and keyed lists.
func releasable(live map[string]any) [][]step {
	out := [][]step{
		podSpecPath(step{field: "nodeSelector"}),
		podSpecPath(step{field: "tolerations"}),
		podSpecPath(step{field: "priorityClassName"}),
	}
	for _, a := range []string{"nodeAffinity", "podAffinity", "podAntiAffinity"} {
		for _, when := range []string{"requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"} {
			out = append(out, podSpecPath(path("affinity", a, when)...))
		}
	}
	for _, name := range namesAt(live, podSpecPath(step{field: "imagePullSecrets"})) {
		out = append(out, podSpecPath(step{field: "imagePullSecrets", key: name}))
	}
	container := podSpecPath(step{field: "containers", key: "guestbook"}, step{field: "resources"})
	for _, list := range []string{"requests", "limits"} {
		at := append(slices.Clone(container), step{field: list})
		for _, k := range keysAt(live, at) {
			out = append(out, append(slices.Clone(at), step{field: k}))
		}
	}
	return out
}

// releaseCreatedFields removes from live (the StatefulSet as read, before
// the apply) each releasable field that the operator's create wrote and
// desired no longer sets, in one strategic merge patch: no write when
// there is none, which is always but after a change of spec.pod.
func (r *GuestbookReconciler) releaseCreatedFields(ctx context.Context, live *appsv1.StatefulSet, desired any) error {
	created, err := createdFields(live)
	if err != nil || created == nil {
		return err
	}
	want, have, err := asTrees(desired, live)
	if err != nil {
		return err
	}
	wantTree, _ := want.(map[string]any)
	liveTree, _ := have.(map[string]any)
	patch := map[string]any{}
	var released []string
	for _, p := range releasable(liveTree) {
		if _, ok := lookup(wantTree, p); ok {
			continue
		}
		if _, ok := lookup(liveTree, p); !ok || !ownsAt(created, p) {
			continue
		}
		addRemoval(patch, p)
		released = append(released, pathString(p))
	}
	if len(released) == 0 {
		return nil
	}
	// The UID makes the patch fail rather than reach an object that
	// replaced this one.
	patch["metadata"] = map[string]any{"uid": string(live.UID)}
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, live.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, raw), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("removing %s from StatefulSet %s/%s: %w", strings.Join(released, ", "), live.Namespace, live.Name, err)
	}
	return nil
}

// createdFields is the set of fields the operator's create of obj owns,
// nil if none.
func createdFields(obj *appsv1.StatefulSet) (*fieldpath.Set, error) {
	for _, e := range obj.GetManagedFields() {
		if e.Manager != FieldOwner || e.Operation != metav1.ManagedFieldsOperationUpdate || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("StatefulSet %s/%s: the managed fields of %s: %w", obj.Namespace, obj.Name, FieldOwner, err)
		}
		return s, nil
	}
	return nil, nil
}

// ownsAt says whether s holds the field at p or anything under it.
func ownsAt(s *fieldpath.Set, p []step) bool {
	var fp fieldpath.Path
	for _, st := range p {
		f := st.field
		fp = append(fp, fieldpath.PathElement{FieldName: &f})
		if st.key != "" {
			fp = append(fp, fieldpath.PathElement{Key: fieldpath.KeyByFields("name", st.key)})
		}
	}
	if s.Has(fp) {
		return true
	}
	for _, pe := range fp {
		s = s.WithPrefix(pe)
	}
	return !s.Empty()
}

// lookup finds the value at p in a JSON tree.
func lookup(tree map[string]any, p []step) (any, bool) {
	var cur any = tree
	for _, st := range p {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[st.field]; !ok {
			return nil, false
		}
		if st.key != "" {
			items, _ := cur.([]any)
			i := slices.IndexFunc(items, func(it any) bool { item, _ := it.(map[string]any); return item["name"] == st.key })
			if i < 0 {
				return nil, false
			}
			cur = items[i]
		}
	}
	return cur, true
}

func keysAt(tree map[string]any, p []step) []string {
	v, _ := lookup(tree, p)
	m, _ := v.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func namesAt(tree map[string]any, p []step) []string {
	v, _ := lookup(tree, p)
	items, _ := v.([]any)
	var names []string
	for _, it := range items {
		if item, ok := it.(map[string]any); ok {
			if n, ok := item["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	return names
}

// addRemoval adds to a strategic merge patch the removal of the field at
// p: null for a field, a delete directive for a keyed list item.
func addRemoval(patch map[string]any, p []step) {
	cur := patch
	for i, st := range p {
		last := i == len(p)-1
		if st.key == "" {
			if last {
				cur[st.field] = nil
				return
			}
			next, ok := cur[st.field].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[st.field] = next
			}
			cur = next
			continue
		}
		items, _ := cur[st.field].([]any)
		var item map[string]any
		for _, it := range items {
			if m := it.(map[string]any); m["name"] == st.key {
				item = m
			}
		}
		if item == nil {
			item = map[string]any{"name": st.key}
			cur[st.field] = append(items, item)
		}
		if last {
			item["$patch"] = "delete"
			return
		}
		cur = item
	}
}

func pathString(p []step) string {
	var b strings.Builder
	for i, st := range p {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(st.field)
		if st.key != "" {
			fmt.Fprintf(&b, "[name=%s]", st.key)
		}
	}
	return b.String()
}
