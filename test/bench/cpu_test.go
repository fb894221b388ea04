package bench

import (
	"math"
	"testing"

	"github.com/prometheus/procfs"
)

func TestCPUTimes(t *testing.T) {
	for _, tc := range []struct {
		name string
		stat procfs.CPUStat
		want cpuTimes
	}{
		{"busy and idle", procfs.CPUStat{User: 100, Nice: 5, System: 50, Idle: 800, Iowait: 40, IRQ: 3, SoftIRQ: 2}, cpuTimes{Busy: 160, Total: 1000}},
		{"steal is busy", procfs.CPUStat{User: 10, Idle: 80, Steal: 10}, cpuTimes{Busy: 20, Total: 100}},
		{"guest time is inside user time", procfs.CPUStat{User: 10, Idle: 90, Guest: 5, GuestNice: 1}, cpuTimes{Busy: 10, Total: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cpuTimesOf(tc.stat); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := readCPU(); err != nil {
		t.Errorf("reading this machine's /proc/stat: %v", err)
	}
	if b := busyBetween(cpuTimes{160, 1000}, cpuTimes{260, 1200}); math.Abs(b-0.5) > 1e-12 {
		t.Errorf("busyBetween = %v, want 0.5", b)
	}
	if b := busyBetween(cpuTimes{1, 1}, cpuTimes{1, 1}); b != 0 {
		t.Errorf("busyBetween of no time = %v, want 0", b)
	}
}
