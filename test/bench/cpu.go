package bench

import (
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// cpuTimes are the machine's CPU seconds since boot: busy ones and all.
type cpuTimes struct {
	Busy, Total float64
}

// cpuTimesOf splits the aggregate CPU line of /proc/stat: idle and iowait
// count as not busy; user, nice, system, irq, softirq and steal as busy.
// Guest time is already inside user time, so it is not added again.
func cpuTimesOf(s procfs.CPUStat) cpuTimes {
	busy := s.User + s.Nice + s.System + s.IRQ + s.SoftIRQ + s.Steal
	return cpuTimes{Busy: busy, Total: busy + s.Idle + s.Iowait}
}

func readCPU() (cpuTimes, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return cpuTimes{}, err
	}
	stat, err := fs.Stat()
	if err != nil {
		return cpuTimes{}, err
	}
	return cpuTimesOf(stat.CPUTotal), nil
}

// ownCPU is the CPU seconds this process has used, user and system.
func ownCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// busyBetween is the share of the machine's CPU time that was busy between
// two readings: 1 means every core worked all the time.
func busyBetween(before, after cpuTimes) float64 {
	if after.Total <= before.Total {
		return 0
	}
	return (after.Busy - before.Busy) / (after.Total - before.Total)
}
