package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// runJoinPool: what an idle server pays for its pool of connections
// prepared before anyone dials (--join-pool): its resident memory,
// mappings and descriptors once the pool is full, and its CPU over an idle
// spell, without a pool, at the default and at 8x it, on shm. The
// repetitions interleave the pool sizes, each a fresh server.
func runJoinPool(e *env) error {
	if e.Addr != "" {
		return fmt.Errorf("joinpool starts its own servers: --addr is not used")
	}
	sizes := []int{0, 8, 64}
	idle := 10 * time.Second
	if e.Quick {
		idle = 2 * time.Second
	}
	t := &table{Name: "joinpool", Cols: []string{"join_pool", "reps",
		"rss_kib", "rss_kib_min", "rss_kib_max", "maps", "maps_min", "maps_max", "fds", "fds_min", "fds_max",
		"idle_cpu_us_per_s", "idle_cpu_us_per_s_min", "idle_cpu_us_per_s_max", "cpu_vs_no_pool"},
		Settings: []string{e.idleSetting(), "server: " + defaultsServer.String() + ", shm, no client ever connects",
			"join_pool: --join-pool (0: none; 8: the default)",
			fmt.Sprintf("each repetition: a fresh server, %v to start and fill its pool, then /proc/PID/status VmRSS, /proc/PID/maps lines and /proc/PID/fd entries, then its CPU (its threads' schedstat) over %v of idle", poolSettle, idle),
			fmt.Sprintf("each point: median of %d interleaved repetitions (min, max)", e.reps())}}
	type sample struct{ rss, maps, fds, cpu float64 }
	got := map[int][]sample{}
	for rep := 0; rep < e.reps(); rep++ {
		for _, n := range sizes {
			o := defaultsServer
			o.JoinPool = n
			if n == 0 {
				o.JoinPool = -1
			}
			p, err := startServer(o)
			if err != nil {
				return fmt.Errorf("join pool %d: %w", n, err)
			}
			pid := p.cmd.Process.Pid
			time.Sleep(poolSettle)
			var s sample
			s.rss, err = procStatusKiB(pid, "VmRSS")
			if err == nil {
				s.maps, err = countLines("/proc/" + strconv.Itoa(pid) + "/maps")
			}
			if err == nil {
				var fds []os.DirEntry
				fds, err = os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
				s.fds = float64(len(fds))
			}
			c0 := procCPUPrecise(pid)
			time.Sleep(idle)
			s.cpu = float64((procCPUPrecise(pid) - c0).Microseconds()) / idle.Seconds()
			p.Stop()
			if err != nil {
				return fmt.Errorf("join pool %d: %w", n, err)
			}
			e.logf("  rep %d join-pool %d: RSS %.0f KiB, %.0f mappings, %.0f fds, idle CPU %.0f µs/s", rep+1, n, s.rss, s.maps, s.fds, s.cpu)
			got[n] = append(got[n], s)
		}
	}
	var labels []string
	rssS, cpuS := series{Name: "RSS (MiB)"}, series{Name: "idle CPU (ms/s)"}
	var base float64
	for i, n := range sizes {
		col := func(f func(sample) float64) spread {
			var xs []float64
			for _, s := range got[n] {
				xs = append(xs, f(s))
			}
			return spreadOf(xs)
		}
		rss, maps, fds, cpu := col(func(s sample) float64 { return s.rss }), col(func(s sample) float64 { return s.maps }),
			col(func(s sample) float64 { return s.fds }), col(func(s sample) float64 { return s.cpu })
		if n == 0 {
			base = cpu.Med
		}
		vs := ""
		if base > 0 {
			vs = strconv.FormatFloat(cpu.Med/base, 'f', 2, 64)
		}
		row := append([]any{n, len(got[n])}, rss.vals()...)
		row = append(append(append(row, maps.vals()...), fds.vals()...), cpu.vals()...)
		t.add(append(row, vs)...)
		labels = append(labels, fmt.Sprintf("--join-pool %d", n))
		rssS.addSpread(float64(i), spread{Med: rss.Med / 1024, Min: rss.Min / 1024, Max: rss.Max / 1024})
		cpuS.addSpread(float64(i), spread{Med: cpu.Med / 1000, Min: cpu.Min / 1000, Max: cpu.Max / 1000})
	}
	png := e.png("joinpool")
	if err := barPlot(png, "an idle shm server and its join pool", "MiB, ms of CPU per s", labels, []series{rssS, cpuS}); err != nil {
		return err
	}
	return e.done(t, png)
}

// poolSettle: how long joinpool gives a new server to start and fill its
// pool before it looks.
const poolSettle = 2 * time.Second

// procStatusKiB reads a "Key: N kB" line of /proc/PID/status.
func procStatusKiB(pid int, key string) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, key)
}

func countLines(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return float64(strings.Count(string(b), "\n")), nil
}
