package bench

import (
	"math"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		name      string
		text      string
		want      cpuTimes
		wantError bool
	}{
		{"two cores", "cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 50 2 25 400 20 1 1 0 0 0\nintr 1\n", cpuTimes{Busy: 160, Total: 1000}, false},
		{"old kernel, four fields after idle", "cpu 10 0 10 70 10\n", cpuTimes{Busy: 20, Total: 100}, false},
		{"no cpu line", "intr 5\n", cpuTimes{}, true},
		{"garbage", "cpu 1 2 x 4 5\n", cpuTimes{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStat(tc.text)
			if (err != nil) != tc.wantError {
				t.Fatalf("error %v, want error %v", err, tc.wantError)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if b := busyBetween(cpuTimes{160, 1000}, cpuTimes{260, 1200}); math.Abs(b-0.5) > 1e-12 {
		t.Errorf("busyBetween = %v, want 0.5", b)
	}
	if b := busyBetween(cpuTimes{1, 1}, cpuTimes{1, 1}); b != 0 {
		t.Errorf("busyBetween of no time = %v, want 0", b)
	}
}
