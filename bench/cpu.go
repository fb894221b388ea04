package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTimes are the machine's CPU jiffies since boot: busy ones and all.
type cpuTimes struct {
	Busy, Total float64
}

// parseProcStat reads the aggregate "cpu" line of /proc/stat. Idle and
// iowait count as not busy; everything else (user, nice, system, irq,
// softirq, steal) as busy.
func parseProcStat(text string) (cpuTimes, error) {
	for line := range strings.SplitSeq(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 || fields[0] != "cpu" {
			continue
		}
		var t cpuTimes
		for i, f := range fields[1:] {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("/proc/stat: %w", err)
			}
			t.Total += v
			if i != 3 && i != 4 { // idle, iowait
				t.Busy += v
			}
		}
		return t, nil
	}
	return cpuTimes{}, fmt.Errorf("/proc/stat has no cpu line")
}

func readCPU() (cpuTimes, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	return parseProcStat(string(raw))
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
