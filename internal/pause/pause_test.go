package pause_test

import (
	"testing"

	"github.com/example/myoperator/internal/pause"
)

func TestRequestedAndValidate(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		requested   bool
		valid       bool
	}{
		{"absent", nil, false, true},
		{"true", map[string]string{pause.Annotation: "true"}, true, true},
		{"false", map[string]string{pause.Annotation: "false"}, false, true},
		{"capitalised", map[string]string{pause.Annotation: "True"}, false, false},
		{"empty", map[string]string{pause.Annotation: ""}, false, false},
		{"another annotation", map[string]string{"example.com/pause": "true"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pause.Requested(tc.annotations); got != tc.requested {
				t.Errorf("Requested = %v, want %v", got, tc.requested)
			}
			if errs := pause.Validate(tc.annotations); (len(errs) == 0) != tc.valid {
				t.Errorf("Validate = %v, want valid %v", errs, tc.valid)
			}
		})
	}
}
