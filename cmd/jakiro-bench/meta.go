package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/jakiro-kv/jakiro/cmd/internal/version"
)

// machineInfo is written at the top of every CSV: results are only
// meaningful with the machine and settings that produced them.
type machineInfo struct {
	Host, CPU, Go, Commit, Date string
	Cores                       int
}

func getMachineInfo() machineInfo {
	m := machineInfo{CPU: cpuModel(), Cores: runtime.NumCPU(), Go: runtime.Version(),
		Date: time.Now().UTC().Format(time.RFC3339)}
	m.Host, _ = os.Hostname()
	// The commit this binary was built from; git's view of the working
	// directory only where the build has none (a binary copied to another
	// machine runs beside some other tree, or none).
	if v := version.Read(); v.Commit != "" {
		m.Commit = v.Commit[:min(len(v.Commit), 7)]
		if v.Dirty {
			m.Commit += "-dirty"
		}
	} else if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
			m.Commit += "-dirty"
		}
	} else {
		m.Commit = "unknown"
	}
	return m
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// clientProcs is this process's GOMAXPROCS (the load generator's).
func (m machineInfo) clientProcs() int { return runtime.GOMAXPROCS(0) }

// writeHeader writes the machine block and the experiment's settings as
// '#' comment lines.
func (m machineInfo) writeHeader(w io.Writer, settings []string) {
	fmt.Fprintf(w, "# host: %s\n# cpu: %s\n# cores: %d\n# client_gomaxprocs: %d\n# go: %s\n# commit: %s\n# date: %s\n",
		m.Host, m.CPU, m.Cores, runtime.GOMAXPROCS(0), m.Go, m.Commit, m.Date)
	// Other work on the machine skews everything: record how busy it was.
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(w, "# loadavg_at_write: %s\n", strings.TrimSpace(string(b)))
	}
	for _, s := range settings {
		fmt.Fprintf(w, "# %s\n", s)
	}
}

// loadAvg is the 1-minute load average, to warn when the machine is busy.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
