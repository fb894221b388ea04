package testenv

import (
	"slices"
	"testing"
)

func TestMissingGates(t *testing.T) {
	for _, tc := range []struct {
		name, gates string
		minor       int
		want        []string
	}{
		{"sharded watch on 1.35", "ShardedListAndWatch=true", 35, []string{"ShardedListAndWatch (from 1.36)"}},
		{"sharded watch on 1.36", "ShardedListAndWatch=true", 36, nil},
		{"sharded watch on 1.37, with another", "Other=true, ShardedListAndWatch=true", 37, nil},
		{"on 1.33, among others", "Other=true,ShardedListAndWatch=true", 33, []string{"ShardedListAndWatch (from 1.36)"}},
		{"a gate the table does not know", "Unknown=true", 33, nil},
		{"none", "", 33, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := missingGates(tc.gates, tc.minor); !slices.Equal(got, tc.want) {
				t.Errorf("missingGates(%q, %d) = %q, want %q", tc.gates, tc.minor, got, tc.want)
			}
		})
	}
}

func TestKubeMinor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  bool
	}{
		{"Kubernetes v1.37.2\n", 37, false},
		{"Kubernetes v1.33.13", 33, false},
		{"Kubernetes v0.0.0-master+$Format:%H$", 0, true},
	} {
		got, err := kubeMinor(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("kubeMinor(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
