package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/magiconair/properties"

	"github.com/jakiro-kv/jakiro/ycsb"
)

// paperWorkload is workloads/paper-uniform, used when that file is not
// found (jakiro-bench run outside the repository).
const paperWorkload = `workload=core
recordcount=100000
operationcount=100000000
fieldcount=1
fieldlength=32
readallfields=true
writeallfields=true
readproportion=0.95
updateproportion=0.05
scanproportion=0
insertproportion=0
requestdistribution=uniform
table=
keyprefix=k
zeropadding=15
insertorder=ordered
`

func paperProps() (*properties.Properties, string) {
	if b, err := os.ReadFile("workloads/paper-uniform"); err == nil {
		if p, err := properties.Load(b, properties.UTF8); err == nil {
			return p, "workloads/paper-uniform"
		}
	}
	return properties.MustLoadString(paperWorkload), "built-in copy of workloads/paper-uniform"
}

// runCompare runs one go-ycsb workload (the paper's: 16 B keys, 32 B
// values, 95% GET, uniform) against Jakiro over shm in rfp and reply mode,
// Redis (go-ycsb's driver) and memcached (ours), one at a time, each
// server started for its own run and stopped after it. Every system gets
// the same go-ycsb threads, once with one operation at a time per thread
// (batch.size=1) and once with batch.size=8, which the jakiro driver
// pipelines (go-ycsb's redis driver and ours for memcached have no batch
// path, so they run the 8 operations one after another).
func runCompare(e *env) error {
	const threads = 4
	batches := []int{1, 8}
	runDur := 2 * e.Duration
	base, source := paperProps()
	records := min(e.Keys, int(base.GetInt64("recordcount", 100000)))
	t := &table{Name: "compare", Cols: []string{"system", "threads", "batch_size", "ops_per_sec", "mops", "p50_us", "p99_us", "errors", "round_trips_per_op", "vs_redis", "vs_memcached"},
		Settings: []string{e.idleSetting(), "workload: " + source + fmt.Sprintf(" (recordcount=%d)", records),
			fmt.Sprintf("go-ycsb v1.0.1 core workload in process, %d threads, run bounded to %v per point", threads, runDur),
			"jakiro: server process, " + serverOpts{Partitions: 1}.withDefaults().String() + ", shm fabric, jakiro.rfs=auto",
			"redis: redis-server --save '' --appendonly no --io-threads 1 on 127.0.0.1 (go-ycsb's redis driver, its default hash datatype: HSET/HMGET)",
			"memcached: memcached -t 1 -m 512 on 127.0.0.1 (jakiro-bench's gomemcache driver, compact records)",
			"latency: per op; with batch_size 8 an op's latency is its batch's"}}
	type sys struct{ name, db, mode string }
	systems := []sys{{"jakiro-rfp", "jakiro", "rfp"}, {"jakiro-reply", "jakiro", "reply"}, {"redis", "redis", ""}, {"memcached", "memcached", ""}}
	results := map[string]map[int]*ycsb.Result{}
	for _, s := range systems {
		results[s.name] = map[int]*ycsb.Result{}
		p := properties.NewProperties()
		p.Merge(base)
		p.Set("recordcount", fmt.Sprint(records))
		p.Set("threadcount", fmt.Sprint(threads))
		var stop func()
		switch s.db {
		case "jakiro":
			srv, err := startServer(serverOpts{Partitions: 1})
			if err != nil {
				return err
			}
			stop = srv.Stop
			p.Set(ycsb.PropAddr, srv.Addr)
			p.Set(ycsb.PropMode, s.mode)
		default:
			x, err := startExternal(s.db)
			if err != nil {
				return err
			}
			stop = x.Stop
			p.Set(s.db+".addr", x.Addr)
			p.Set("redis.mode", "single")
		}
		err := func() error {
			defer stop()
			p.Set("batch.size", "1")
			lr, err := ycsb.Run(e.Ctx, ycsb.RunConfig{DB: s.db, Props: p, Load: true})
			if err != nil {
				return fmt.Errorf("%s load: %w", s.name, err)
			}
			if lr.Errors > 0 {
				return fmt.Errorf("%s load: %d errors, first %v", s.name, lr.Errors, lr.FirstError)
			}
			e.logf("  %-13s loaded %d records in %v", s.name, lr.Ops, lr.Elapsed.Round(1e6))
			for _, b := range batches {
				p.Set("batch.size", fmt.Sprint(b))
				r, err := ycsb.Run(e.Ctx, ycsb.RunConfig{DB: s.db, Props: p, Duration: runDur})
				if err != nil {
					return fmt.Errorf("%s run: %w", s.name, err)
				}
				results[s.name][b] = r
				e.logf("  %-13s batch=%d: %9.0f ops/s  p50 %7.2f µs  p99 %8.2f µs  errors %d", s.name, b, r.OpsPerSec(),
					float64(r.Total.ValueAtQuantile(50))/1e3, float64(r.Total.ValueAtQuantile(99))/1e3, r.Errors)
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	var labels []string
	var ss []series
	for _, b := range batches {
		labels = append(labels, fmt.Sprintf("batch.size=%d", b))
	}
	for _, s := range systems {
		sr := series{Name: s.name}
		for _, b := range batches {
			r := results[s.name][b]
			trips := ""
			if r.HaveCounters {
				trips = fmt.Sprintf("%.3f", r.Counters.FabricOpsPerOp())
			}
			ratio := func(o string) string {
				if x := results[o][b]; x != nil && x.OpsPerSec() > 0 {
					return fmt.Sprintf("%.2f", r.OpsPerSec()/x.OpsPerSec())
				}
				return ""
			}
			t.add(s.name, threads, b, fmt.Sprintf("%.0f", r.OpsPerSec()), r.OpsPerSec()/1e6,
				float64(r.Total.ValueAtQuantile(50))/1e3, float64(r.Total.ValueAtQuantile(99))/1e3, r.Errors, trips,
				ratio("redis"), ratio("memcached"))
			sr.add(float64(b), r.OpsPerSec()/1e6)
		}
		ss = append(ss, sr)
	}
	for _, b := range batches {
		j, rd, mc := results["jakiro-rfp"][b], results["redis"][b], results["memcached"][b]
		e.logf("  batch.size=%d: jakiro-rfp %.1fx redis, %.1fx memcached", b, j.OpsPerSec()/rd.OpsPerSec(), j.OpsPerSec()/mc.OpsPerSec())
	}
	png := e.png("compare")
	if err := barPlot(png, "go-ycsb, 16 B keys, 32 B values, 95% GET, uniform: "+strings.TrimSpace(fmt.Sprintf("%d threads", threads)), "Mops", labels, ss); err != nil {
		return err
	}
	return e.done(t, png)
}
