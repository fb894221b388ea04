package memlimit

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
)

// EnvVar names the variable that holds the container's memory limit in
// bytes (config/manager: resourceFieldRef limits.memory).
const EnvVar = "MEMORY_LIMIT"

// Fraction of the container's limit the soft limit is set to: the rest is
// for what the Go heap does not count (stacks, runtime metadata, memory
// not yet returned to the system) and for the kernel's accounting of the
// process's pages.
const Fraction = 0.85

// Soft returns the soft limit for a container limit of limitBytes.
func Soft(limitBytes int64) int64 { return int64(float64(limitBytes) * Fraction) }

// Container returns the container's memory limit from $MEMORY_LIMIT, 0
// when it is not set or not a positive number of bytes (FromEnv reports
// that one).
func Container() int64 {
	limit, err := strconv.ParseInt(os.Getenv(EnvVar), 10, 64)
	if err != nil || limit <= 0 {
		return 0
	}
	return limit
}

// FromEnv sets the runtime's soft memory limit to Fraction of $MEMORY_LIMIT
// and returns it. It leaves the runtime alone, returning 0, when GOMEMLIMIT
// is set (the admin's own choice wins) or MEMORY_LIMIT is not; a
// MEMORY_LIMIT that is not a positive number of bytes is an error.
func FromEnv() (int64, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	raw := os.Getenv(EnvVar)
	if raw == "" {
		return 0, nil
	}
	limit, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || limit <= 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit in bytes", EnvVar, raw)
	}
	soft := Soft(limit)
	debug.SetMemoryLimit(soft)
	return soft, nil
}
