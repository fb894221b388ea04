package reconcile

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestOwnWritesBehind: a copy is behind only when it is older than the
// recorded write and the record is within its window; every other answer
// drops the record, so that one late event does not hold an object back
// twice.
func TestOwnWritesBehind(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "d"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		recorded   string // "" records nothing
		read       string
		after      time.Duration
		wantBehind bool
	}{
		{"nothing recorded", "", "100", 0, false},
		{"older copy", "100", "99", time.Second, true},
		{"older copy, shorter number", "1000", "999", time.Second, true},
		{"the written copy", "100", "100", time.Second, false},
		{"a later copy", "100", "101", time.Second, false},
		{"older copy past the window", "100", "99", ownWriteWindow + time.Second, false},
		{"a resourceVersion that does not compare", "100", "x", time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w ownWrites
			if tc.recorded != "" {
				w.record(key, tc.recorded, at)
			}
			if got := w.behind(key, tc.read, at.Add(tc.after)); got != tc.wantBehind {
				t.Errorf("behind(%q) after a write at %q: %t, want %t", tc.read, tc.recorded, got, tc.wantBehind)
			}
			if left := w.len(); tc.wantBehind != (left == 1) {
				t.Errorf("%d records left, want %d", left, map[bool]int{true: 1, false: 0}[tc.wantBehind])
			}
		})
	}
}

// TestOwnWritesForgetAndSweep: a gone object's record goes at once; the
// records of objects never read again (moved to another replica's share)
// go in the sweep once they are past the window, and fresh ones stay.
func TestOwnWritesForgetAndSweep(t *testing.T) {
	var w ownWrites
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gone := types.NamespacedName{Namespace: "ns", Name: "gone"}
	w.record(gone, "5", at)
	w.forget(gone)
	if w.behind(gone, "4", at) {
		t.Error("a forgotten record still holds its object back")
	}
	const old = 1500
	for i := range old {
		w.record(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("old-%d", i)}, "10", at)
	}
	later := at.Add(ownWriteWindow + time.Second)
	for i := range 2000 {
		w.record(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("new-%d", i)}, "20", later)
	}
	left := w.len()
	t.Logf("%d records past the window and 2,000 fresh: %d left", old, left)
	if left > 2000 {
		t.Errorf("%d records left, want at most the 2,000 fresh ones", left)
	}
	if !w.behind(types.NamespacedName{Namespace: "ns", Name: "new-1999"}, "19", later) {
		t.Error("the sweep dropped a fresh record")
	}
}

// len is the number of records held.
func (w *ownWrites) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}
