package memlimit

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestFromEnv: which soft limit the runtime gets from the environment.
func TestFromEnv(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	tests := []struct {
		name, gomemlimit, limit string
		want                    int64 // the runtime's limit afterwards
		wantErr                 bool
	}{
		{"the container's limit, 256 MiB", "", "268435456", 228170137, false},
		{"GOMEMLIMIT wins", "100MiB", "268435456", math.MaxInt64, false},
		{"no limit given", "", "", math.MaxInt64, false},
		{"not bytes", "", "256Mi", math.MaxInt64, true},
		{"zero", "", "0", math.MaxInt64, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			t.Setenv("GOMEMLIMIT", tc.gomemlimit)
			t.Setenv(EnvVar, tc.limit)
			_, err := FromEnv()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %t", err, tc.wantErr)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("runtime memory limit %d, want %d", got, tc.want)
			}
		})
	}
}
