package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuTimes reads the machine's total and idle jiffies from /proc/stat.
func cpuTimes() (total, idle uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return total, idle, true
}

// idleFrac samples how idle the machine is over d (1 = nothing runs).
func idleFrac(d time.Duration) float64 {
	t0, i0, ok := cpuTimes()
	if !ok {
		return 1
	}
	time.Sleep(d)
	t1, i1, ok := cpuTimes()
	if !ok || t1 == t0 {
		return 1
	}
	return float64(i1-i0) / float64(t1-t0)
}

// waitQuiet waits, at most max, until the machine is at least 80% idle
// before an experiment starts: the server and clients busy-poll, so any
// other work on a small machine distorts them. It returns the idle
// fraction it last saw, which the experiment records.
func (e *env) waitQuiet(max time.Duration) float64 {
	deadline := time.Now().Add(max)
	f := idleFrac(500 * time.Millisecond)
	for f < 0.8 && time.Now().Before(deadline) && e.Ctx.Err() == nil {
		e.logf("  machine %.0f%% idle: waiting for other work to finish (up to %v more)", 100*f, time.Until(deadline).Round(time.Second))
		time.Sleep(2 * time.Second)
		f = idleFrac(500 * time.Millisecond)
	}
	e.IdleAtStart = f
	if f < 0.8 {
		e.logf("!! machine only %.0f%% idle: other work will skew these results", 100*f)
	}
	return f
}

func (e *env) idleSetting() string {
	return fmt.Sprintf("machine idle before start: %.0f%% (other processes' CPU use skews busy-polling results)", 100*e.IdleAtStart)
}
