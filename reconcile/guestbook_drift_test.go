package reconcile

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webappv1 "github.com/example/myoperator/apis/webapp/v1"
)

// TestLostFieldsNamesWhatAnotherWriterTook: the event of a correction
// names the fields the operator no longer owns.
func TestLostFieldsNamesWhatAnotherWriterTook(t *testing.T) {
	tests := []struct {
		name             string
		want, have, live map[string]any
		// added: paths of fields the previous release did not set.
		added []string
		lost  []string
	}{
		{"same", map[string]any{"spec": map[string]any{"replicas": 2.0}}, map[string]any{"spec": map[string]any{"replicas": 2.0}}, map[string]any{"spec": map[string]any{"replicas": 2.0}}, nil, nil},
		{"scaled", map[string]any{"spec": map[string]any{"replicas": 2.0, "serviceName": "x"}}, map[string]any{"spec": map[string]any{"serviceName": "x"}}, map[string]any{"spec": map[string]any{"replicas": 5.0, "serviceName": "x"}}, nil, []string{"spec.replicas"}},
		{"value of ours changed", map[string]any{"spec": map[string]any{"replicas": 3.0}}, map[string]any{"spec": map[string]any{"replicas": 2.0}}, map[string]any{"spec": map[string]any{"replicas": 2.0}}, nil, nil},
		{"list item field", map[string]any{"c": []any{map[string]any{"name": "a", "image": "i"}}}, map[string]any{"c": []any{map[string]any{"name": "a"}}}, map[string]any{"c": []any{map[string]any{"name": "a", "image": "j"}}}, nil, []string{"c[0].image"}},
		{"list shorter", map[string]any{"c": []any{"a", "b"}}, map[string]any{"c": []any{"a"}}, map[string]any{"c": []any{"a"}}, nil, []string{"c[1]"}},
		{"map gone", map[string]any{"spec": map[string]any{"selector": map[string]any{"a": "b"}}}, map[string]any{}, map[string]any{"spec": map[string]any{}}, nil, []string{"spec"}},
		// The previous release did not apply the port's protocol; the API
		// server defaulted it to the value wanted now: nobody changed it.
		{"not owned but as wanted", map[string]any{"ports": []any{map[string]any{"port": 80.0, "protocol": "TCP"}}}, map[string]any{"ports": []any{map[string]any{"port": 80.0}}}, map[string]any{"ports": []any{map[string]any{"port": 80.0, "protocol": "TCP", "targetPort": 80.0}}}, nil, nil},
		{"not owned, other value", map[string]any{"ports": []any{map[string]any{"port": 80.0, "protocol": "TCP"}}}, map[string]any{"ports": []any{map[string]any{"port": 80.0}}}, map[string]any{"ports": []any{map[string]any{"port": 80.0, "protocol": "UDP"}}}, nil, []string{"ports[0].protocol"}},
		// This release adds the probes: on a StatefulSet the previous
		// release applied, their absence is no other writer's doing...
		{"added by this release", map[string]any{"c": []any{map[string]any{"name": "a", "probe": map[string]any{"path": "/readyz"}}}}, map[string]any{"c": []any{map[string]any{"name": "a"}}}, map[string]any{"c": []any{map[string]any{"name": "a"}}}, []string{"c[0].probe"}, nil},
		// ...but another value there is.
		{"added by this release, another value", map[string]any{"c": []any{map[string]any{"name": "a", "probe": map[string]any{"path": "/readyz"}}}}, map[string]any{"c": []any{map[string]any{"name": "a"}}}, map[string]any{"c": []any{map[string]any{"name": "a", "probe": map[string]any{"path": "/other"}}}}, []string{"c[0].probe"}, []string{"c[0].probe"}},
		{"not added by this release", map[string]any{"c": []any{map[string]any{"name": "a", "probe": map[string]any{"path": "/readyz"}}}}, map[string]any{"c": []any{map[string]any{"name": "a"}}}, map[string]any{"c": []any{map[string]any{"name": "a"}}}, []string{"c[0].other"}, []string{"c[0].probe"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := lostFields(tc.want, tc.have, tc.live, "", tc.added); !slices.Equal(got, tc.lost) {
				t.Errorf("LostFields = %v, want %v", got, tc.lost)
			}
		})
	}
}

// TestStatefulSetAddedNamesTheProbes: statefulSetAdded names exactly what
// the previous release's StatefulSet lacks (the probes, the default pod
// anti-affinity and enableServiceLinks), so that the first apply after an
// upgrade reports no correction, and nothing more.
func TestStatefulSetAddedNamesTheProbes(t *testing.T) {
	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "gb", UID: "u"},
		Spec: webappv1.GuestbookSpec{Size: 2, ConfigMapName: "gb-cm"}}
	want := statefulSetFor(g, "guestbook", "example.com/guestbook:1")
	// What the previous release applied, the object it left as it is.
	previous := statefulSetFor(g, "guestbook", "example.com/guestbook:1")
	previous.Spec.Template.Spec.Containers[0].ReadinessProbe = nil
	previous.Spec.Template.Spec.Containers[0].LivenessProbe = nil
	previous.Spec.Template.Spec.Affinity = nil
	previous.Spec.Template.Spec.EnableServiceLinks = nil
	w, h, err := asTrees(want, previous)
	if err != nil {
		t.Fatal(err)
	}
	if got := lostFields(w, h, h, "", nil); !slices.Equal(got, statefulSetAdded) {
		t.Errorf("the previous release's StatefulSet lacks %v, statefulSetAdded says %v", got, statefulSetAdded)
	}
	if got := lostFields(w, h, h, "", statefulSetAdded); got != nil {
		t.Errorf("after an upgrade, lost %v, want none", got)
	}
}
