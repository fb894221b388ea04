package reconcile

import (
	"slices"
	"testing"
)

// TestLostFieldsNamesWhatAnotherWriterTook: the event of a correction
// names the fields the operator no longer owns.
func TestLostFieldsNamesWhatAnotherWriterTook(t *testing.T) {
	tests := []struct {
		name             string
		want, have, live map[string]any
		lost             []string
	}{
		{"same", map[string]any{"spec": map[string]any{"replicas": 2.0}}, map[string]any{"spec": map[string]any{"replicas": 2.0}}, map[string]any{"spec": map[string]any{"replicas": 2.0}}, nil},
		{"scaled", map[string]any{"spec": map[string]any{"replicas": 2.0, "serviceName": "x"}}, map[string]any{"spec": map[string]any{"serviceName": "x"}}, map[string]any{"spec": map[string]any{"replicas": 5.0, "serviceName": "x"}}, []string{"spec.replicas"}},
		{"value of ours changed", map[string]any{"spec": map[string]any{"replicas": 3.0}}, map[string]any{"spec": map[string]any{"replicas": 2.0}}, map[string]any{"spec": map[string]any{"replicas": 2.0}}, nil},
		{"list item field", map[string]any{"c": []any{map[string]any{"name": "a", "image": "i"}}}, map[string]any{"c": []any{map[string]any{"name": "a"}}}, map[string]any{"c": []any{map[string]any{"name": "a", "image": "j"}}}, []string{"c[0].image"}},
		{"list shorter", map[string]any{"c": []any{"a", "b"}}, map[string]any{"c": []any{"a"}}, map[string]any{"c": []any{"a"}}, []string{"c[1]"}},
		{"map gone", map[string]any{"spec": map[string]any{"selector": map[string]any{"a": "b"}}}, map[string]any{}, map[string]any{"spec": map[string]any{}}, []string{"spec"}},
		// The previous release did not apply the port's protocol; the API
		// server defaulted it to the value wanted now: nobody changed it.
		{"not owned but as wanted", map[string]any{"ports": []any{map[string]any{"port": 80.0, "protocol": "TCP"}}}, map[string]any{"ports": []any{map[string]any{"port": 80.0}}}, map[string]any{"ports": []any{map[string]any{"port": 80.0, "protocol": "TCP", "targetPort": 80.0}}}, nil},
		{"not owned, other value", map[string]any{"ports": []any{map[string]any{"port": 80.0, "protocol": "TCP"}}}, map[string]any{"ports": []any{map[string]any{"port": 80.0}}}, map[string]any{"ports": []any{map[string]any{"port": 80.0, "protocol": "UDP"}}}, []string{"ports[0].protocol"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := lostFields(tc.want, tc.have, tc.live, ""); !slices.Equal(got, tc.lost) {
				t.Errorf("LostFields = %v, want %v", got, tc.lost)
			}
		})
	}
}
