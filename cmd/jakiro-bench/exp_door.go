package main

import "fmt"

// doorPairs: the memcached door of a server of N partitions against
// memcached -t N, under the same go-ycsb memcached driver at 4 load
// threads per partition.
var doorPairs = []struct{ partitions, threads int }{{1, 4}, {2, 8}}

// runDoor: go-ycsb 95/5 zipfian through jakiro-bench's gomemcache driver
// against `jakiro server --memcached` (no RFP client: the partitions lend
// their stores to the door while they sleep, server/door.go) and against
// memcached with as many threads as the server has partitions, in one
// run, repetitions interleaved.
func runDoor(e *env) error {
	runDur := 2 * e.Duration
	base, source := paperProps("paper-zipfian")
	records := min(e.Keys, int(base.GetInt64("recordcount", 100000)))
	type point struct {
		ops, cpu, srv []float64 // ops/s, client and server CPU µs per op
		p50, p99      []float64 // µs, per repetition
		errs          int64
	}
	pts := map[string]*point{}
	// The door's server as a user starts it (the machine's GOMAXPROCS),
	// and with one P per partition, as memcached gets one worker thread
	// per partition: with no RFP client its partitions sleep, and a
	// spare P makes the netpoller wake a second thread for connections
	// that one would serve. memcached last: the doors are judged by it.
	sys := func(parts int) [4]system {
		return [4]system{
			{name: fmt.Sprintf("jakiro-door-p%d", parts), db: "memcached", door: true, srv: serverOpts{Partitions: parts, Procs: machineProcs}},
			{name: fmt.Sprintf("jakiro-door-p%d-gomaxprocs%d", parts, parts), db: "memcached", door: true, srv: serverOpts{Partitions: parts, Procs: parts}},
			{name: fmt.Sprintf("jakiro-door-p%d-rfpidle", parts), db: "memcached", door: true, rfpIdle: true, srv: serverOpts{Partitions: parts, Procs: machineProcs}},
			{name: fmt.Sprintf("memcached-t%d", parts), db: "memcached", mcThreads: parts},
		}
	}
	for rep := 0; rep < e.reps(); rep++ {
		for _, pair := range doorPairs {
			for _, s := range sys(pair.partitions) {
				if pts[s.name] == nil {
					pts[s.name] = &point{}
				}
				pt := pts[s.name]
				if err := compareOne(e, s, base, records, []int{pair.threads}, runDur, rep, func(_ int, r compareResult) {
					pt.ops = append(pt.ops, r.OpsPerSec())
					pt.cpu, pt.srv = append(pt.cpu, r.cpuPerOp()), append(pt.srv, r.serverPerOp())
					pt.p50 = append(pt.p50, float64(r.Total.ValueAtQuantile(50))/1e3)
					pt.p99 = append(pt.p99, float64(r.Total.ValueAtQuantile(99))/1e3)
					pt.errs += r.Errors
				}); err != nil {
					return err
				}
			}
		}
	}
	t := &table{Name: "door", Cols: append(append([]string{"system", "partitions_or_threads", "load_threads", "reps"}, spreadCols("ops_per_sec")...),
		"p50_us", "p99_us", "errors", "client_us_per_op", "server_us_per_op", "ops_vs_memcached", "p50_vs_memcached", "server_cpu_vs_memcached"),
		Settings: []string{e.idleSetting(), "workload: " + source + fmt.Sprintf(" (recordcount=%d), batch.size=1", records),
			fmt.Sprintf("go-ycsb v1.0.1 core workload in this process through jakiro-bench's gomemcache driver (memcached ascii protocol) for both systems; run phase bounded to %v per point; each point the median of %d interleaved repetitions (min, max beside)", runDur, e.reps()),
			"jakiro-door-pN: a jakiro server process (shm listener, no RFP client) with N partitions and its memcached door on 127.0.0.1, at the machine's GOMAXPROCS, as `jakiro server --partitions N --memcached` runs (which, a second after start with no RFP client, runs with one P per partition: server/procs.go); jakiro-door-pN-gomaxprocsN: the same at GOMAXPROCS N (one P per partition, as memcached -t N has N workers)",
			"jakiro-door-pN-rfpidle: jakiro-door-pN with an RFP client connected to its server, idle, through the run (its partitions sleep and lend their stores to the door, as with none)",
			"memcached-tN: memcached -t N -m 512 -U 0 on 127.0.0.1",
			"p50_us, p99_us: medians over the repetitions of each one's percentile; errors: summed over them; client_us_per_op, server_us_per_op: the load generator's and the server process's CPU per operation (the server's from /proc in 10 ms ticks, every thread), medians; *_vs_memcached: the door's median over memcached's at the same threads"}}
	bars := []series{{Name: "jakiro door (defaults)"}, {Name: "jakiro door (GOMAXPROCS = partitions)"}, {Name: "jakiro door beside an idle RFP client"}, {Name: "memcached -t N"}}
	var labels []string
	for k, pair := range doorPairs {
		labels = append(labels, fmt.Sprintf("%d partition(s) / thread(s), %d load threads", pair.partitions, pair.threads))
		ss := sys(pair.partitions)
		mc := pts[ss[len(ss)-1].name]
		for i, s := range ss {
			pt := pts[s.name]
			sp := spreadOf(pt.ops)
			bars[i].addSpread(float64(k), spread{Med: sp.Med / 1e3, Min: sp.Min / 1e3, Max: sp.Max / 1e3, N: sp.N})
			vsOps, vsP50, vsSrv := "", "", ""
			if i < len(ss)-1 {
				vsOps = fmt.Sprintf("%.2f", sp.Med/spreadOf(mc.ops).Med)
				vsP50 = fmt.Sprintf("%.2f", spreadOf(pt.p50).Med/spreadOf(mc.p50).Med)
				vsSrv = fmt.Sprintf("%.2f", spreadOf(pt.srv).Med/spreadOf(mc.srv).Med)
			}
			t.add(append(append([]any{s.name, pair.partitions, pair.threads, sp.N}, sp.vals()...), spreadOf(pt.p50).Med,
				spreadOf(pt.p99).Med, pt.errs, spreadOf(pt.cpu).Med, spreadOf(pt.srv).Med, vsOps, vsP50, vsSrv)...)
		}
		for _, s := range ss[:len(ss)-1] {
			door := spreadOf(pts[s.name].ops).Med
			e.logf("  %d partitions/threads, %d load threads: %s %.0f ops/s = %.2fx memcached, p50 %.2fx, server CPU %.2f µs/op = %.2fx memcached's", pair.partitions, pair.threads,
				s.name, door, door/spreadOf(mc.ops).Med, spreadOf(pts[s.name].p50).Med/spreadOf(mc.p50).Med, spreadOf(pts[s.name].srv).Med, spreadOf(pts[s.name].srv).Med/spreadOf(mc.srv).Med)
		}
	}
	png := e.png("door")
	if err := barPlot(png, "go-ycsb 95/5 zipfian over the memcached protocol (median, min–max)", "k ops/s", labels, bars); err != nil {
		return err
	}
	return e.done(t, png)
}
