package ycsb

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/measurement"
	"github.com/pingcap/go-ycsb/pkg/prop"
	_ "github.com/pingcap/go-ycsb/pkg/workload" // registers "core"
	goycsb "github.com/pingcap/go-ycsb/pkg/ycsb"

	"github.com/jakiro-kv/jakiro/client"
)

// RunConfig says what Run does.
type RunConfig struct {
	DB    string                 // a registered go-ycsb database: jakiro, memcached, redis, ...
	Props *properties.Properties // workload and driver properties
	Load  bool                   // load phase (inserts recordcount records) instead of run
	// Duration bounds the run phase (0: none; maxexecutiontime also
	// applies). The load phase always inserts every record, bounded by ctx.
	Duration time.Duration
	// Progress, if set, gets a line per ProgressEvery (default 1s).
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Run executes a go-ycsb core workload in this process. cfg.Props is not
// modified: Run works on a copy.
func Run(ctx context.Context, cfg RunConfig) (*Result, error) {
	p := properties.NewProperties()
	if cfg.Props != nil {
		p.Merge(cfg.Props)
	}
	p.Set(prop.DoTransactions, fmt.Sprint(!cfg.Load))
	if cfg.Load {
		p.Set(prop.Command, "load")
	} else {
		p.Set(prop.Command, "run")
	}
	// Read-modify-write reports to go-ycsb's global measurement.
	measurement.InitMeasure(p)

	pl, err := planRun(p, cfg)
	if err != nil {
		return nil, err
	}
	wc := goycsb.GetWorkloadCreator(p.GetString(prop.Workload, "core"))
	if wc == nil {
		return nil, fmt.Errorf("ycsb: workload %q not registered", p.GetString(prop.Workload, "core"))
	}
	workload, err := wc.Create(p)
	if err != nil {
		return nil, fmt.Errorf("ycsb: workload: %w", err)
	}
	defer workload.Close()
	dc := goycsb.GetDBCreator(cfg.DB)
	if dc == nil {
		return nil, fmt.Errorf("ycsb: database %q not registered (have jakiro, memcached, redis)", cfg.DB)
	}
	db, err := dc.Create(p)
	if err != nil {
		return nil, fmt.Errorf("ycsb: %s: %w", cfg.DB, err)
	}
	defer db.Close()

	runCtx := ctx
	if !cfg.Load && pl.duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, pl.duration)
		defer cancel()
	}
	counted, _ := db.(interface{ Counters() client.Counters })
	var before client.Counters
	if counted != nil {
		before = counted.Counters()
	}
	stats := make([]*threadStats, min(pl.threads, statsPerProc*runtime.GOMAXPROCS(0)))
	for i := range stats {
		stats[i] = &threadStats{perOp: map[string]*hdr.Histogram{}, errs: map[string]int64{}}
	}
	stopProgress := startProgress(cfg, stats, pl.total)
	start := time.Now()
	runThreads(runCtx, pl, workload, db, stats)
	elapsed := time.Since(start)
	stopProgress()

	r := collect(cfg.DB, pl.threads, elapsed, stats)
	if counted != nil {
		r.Counters, r.HaveCounters = counted.Counters().Sub(before), true
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	return r, nil
}

// plan is how a run is divided among threads.
type plan struct {
	load     bool
	threads  int
	batch    int
	total    int64         // operations (or records to insert) in all
	duration time.Duration // bound on the run phase; 0: none
}

func planRun(p *properties.Properties, cfg RunConfig) (plan, error) {
	pl := plan{load: cfg.Load, threads: p.GetInt(prop.ThreadCount, 1),
		batch: p.GetInt(prop.BatchSize, prop.DefaultBatchSize), duration: cfg.Duration}
	if pl.threads < 1 {
		return pl, fmt.Errorf("ycsb: threadcount %d", pl.threads)
	}
	if cfg.Load {
		pl.total = p.GetInt64(prop.InsertCount, p.GetInt64(prop.RecordCount, 0))
	} else {
		pl.total = p.GetInt64(prop.OperationCount, 0)
	}
	if pl.total < int64(pl.threads) {
		return pl, fmt.Errorf("ycsb: %d operations for %d threads", pl.total, pl.threads)
	}
	if mx := p.GetInt64(prop.MaxExecutiontime, 0); mx > 0 && (pl.duration == 0 || time.Duration(mx)*time.Second < pl.duration) {
		pl.duration = time.Duration(mx) * time.Second
	}
	return pl, nil
}

// share is thread i's part of the total.
func (pl plan) share(i int) int64 {
	n := pl.total / int64(pl.threads)
	if int64(i) < pl.total%int64(pl.threads) {
		n++
	}
	return n
}

// statsPerProc is how many threadStats a run keeps per P: enough that
// threads seldom wait for each other's records.
const statsPerProc = 4

// runThreads runs the plan's threads to completion (or until ctx ends),
// each measuring into its own stats.
func runThreads(ctx context.Context, pl plan, workload goycsb.Workload, db goycsb.DB, stats []*threadStats) {
	var wg sync.WaitGroup
	for i := 0; i < pl.threads; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			runThread(ctx, pl, i, workload, db, stats[i%len(stats)])
		}(i)
	}
	wg.Wait()
}

func runThread(ctx context.Context, pl plan, i int, workload goycsb.Workload, db goycsb.DB, s *threadStats) {
	mdb := &measured{db: db, s: s}
	tctx := workload.InitThread(ctx, i, pl.threads)
	tctx = db.InitThread(tctx, i, pl.threads)
	defer workload.CleanupThread(tctx)
	defer db.CleanupThread(tctx)
	n := pl.share(i)
	for done := int64(0); done < n && ctx.Err() == nil; {
		step := int64(1)
		switch {
		case pl.load && pl.batch > 1:
			step = min(int64(pl.batch), n-done)
			workload.DoBatchInsert(tctx, int(step), mdb)
		case pl.load:
			workload.DoInsert(tctx, mdb)
		case pl.batch > 1:
			step = int64(pl.batch)
			workload.DoBatchTransaction(tctx, pl.batch, mdb)
		default:
			workload.DoTransaction(tctx, mdb)
		}
		done += step
	}
}

// collect merges the threads' measurements.
func collect(db string, threads int, elapsed time.Duration, stats []*threadStats) *Result {
	r := &Result{DB: db, Threads: threads, Elapsed: elapsed, PerOp: map[string]*hdr.Histogram{},
		ErrorsOp: map[string]int64{}, Total: newHist()}
	for _, s := range stats {
		for op, h := range s.perOp {
			if r.PerOp[op] == nil {
				r.PerOp[op] = newHist()
			}
			r.PerOp[op].Merge(h)
			r.Total.Merge(h)
		}
		for op, n := range s.errs {
			r.ErrorsOp[op] += n
			r.Errors += n
		}
		r.Misses += s.miss
		if r.FirstError == nil {
			r.FirstError = s.first
		}
	}
	r.Ops = r.Total.TotalCount()
	return r
}

func startProgress(cfg RunConfig, stats []*threadStats, total int64) (stop func()) {
	if cfg.Progress == nil {
		return func() {}
	}
	every := cfg.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	phase := "run"
	if cfg.Load {
		phase = "load"
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		start, last, lastT := time.Now(), int64(0), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				var n int64
				for _, s := range stats {
					n += s.ops.Load()
				}
				fmt.Fprintf(cfg.Progress, "  %s %s: %5.1fs %d/%d ops, %.0f ops/s\n", cfg.DB, phase,
					now.Sub(start).Seconds(), n, total, float64(n-last)/now.Sub(lastT).Seconds())
				last, lastT = n, now
			}
		}
	}()
	return func() { close(done); <-finished }
}
