package ycsb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/measurement"
	"github.com/pingcap/go-ycsb/pkg/prop"
	_ "github.com/pingcap/go-ycsb/pkg/workload" // registers "core"
	goycsb "github.com/pingcap/go-ycsb/pkg/ycsb"

	"github.com/jakiro-kv/jakiro/rfp"
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

// Result is what Run measured.
type Result struct {
	DB       string
	Threads  int
	Ops      int64 // operations that succeeded
	Errors   int64 // operations that failed
	Elapsed  time.Duration
	PerOp    map[string]*hdr.Histogram // latency in ns by go-ycsb op name (READ, UPDATE, ...)
	ErrorsOp map[string]int64
	Total    *hdr.Histogram // every successful op
	// Counters are the jakiro driver's protocol counters over the run;
	// HaveCounters is false for other databases.
	Counters     rfp.Counters
	HaveCounters bool
	FirstError   error
}

// OpsPerSec is successful operations per second.
func (r *Result) OpsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// newHist covers 100 ns to 10 s at 3 significant digits.
func newHist() *hdr.Histogram { return hdr.New(1, int64(10*time.Second), 3) }

// threadStats is one thread's measurements; merged after the run.
type threadStats struct {
	perOp map[string]*hdr.Histogram
	errs  map[string]int64
	ops   atomic.Int64 // read by the progress reporter
	first error
}

func (s *threadStats) record(op string, start time.Time, n int, err error) {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return // cut short by the end of the run: neither done nor failed
	}
	if err != nil {
		s.errs[op] += int64(n)
		if s.first == nil {
			s.first = fmt.Errorf("%s: %w", op, err)
		}
		return
	}
	h := s.perOp[op]
	if h == nil {
		h = newHist()
		s.perOp[op] = h
	}
	// A batch's operations all complete when the batch does.
	h.RecordValues(int64(time.Since(start)), int64(n))
	s.ops.Add(int64(n))
}

// Run executes a go-ycsb core workload in this process.
func Run(ctx context.Context, cfg RunConfig) (*Result, error) {
	p := cfg.Props
	if p == nil {
		p = properties.NewProperties()
	}
	p.Set(prop.DoTransactions, fmt.Sprint(!cfg.Load))
	if cfg.Load {
		p.Set(prop.Command, "load")
	} else {
		p.Set(prop.Command, "run")
	}
	// Read-modify-write reports to go-ycsb's global measurement.
	measurement.InitMeasure(p)

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

	threads := p.GetInt(prop.ThreadCount, 1)
	if threads < 1 {
		return nil, fmt.Errorf("ycsb: threadcount %d", threads)
	}
	batch := p.GetInt(prop.BatchSize, prop.DefaultBatchSize)
	var total int64
	if cfg.Load {
		total = p.GetInt64(prop.InsertCount, p.GetInt64(prop.RecordCount, 0))
	} else {
		total = p.GetInt64(prop.OperationCount, 0)
	}
	if total < int64(threads) {
		return nil, fmt.Errorf("ycsb: %d operations for %d threads", total, threads)
	}
	runCtx := ctx
	d := cfg.Duration
	if mx := p.GetInt64(prop.MaxExecutiontime, 0); mx > 0 && (d == 0 || time.Duration(mx)*time.Second < d) {
		d = time.Duration(mx) * time.Second
	}
	if !cfg.Load && d > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}

	counted, _ := db.(interface{ Counters() rfp.Counters })
	var before rfp.Counters
	if counted != nil {
		before = counted.Counters()
	}
	stats := make([]*threadStats, threads)
	for i := range stats {
		stats[i] = &threadStats{perOp: map[string]*hdr.Histogram{}, errs: map[string]int64{}}
	}
	stopProgress := startProgress(cfg, stats, total)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < threads; i++ {
		n := total / int64(threads)
		if int64(i) < total%int64(threads) {
			n++
		}
		wg.Add(1)
		go func(i int, n int64) {
			defer wg.Done()
			mdb := &measured{db: db, s: stats[i]}
			tctx := workload.InitThread(runCtx, i, threads)
			tctx = db.InitThread(tctx, i, threads)
			defer workload.CleanupThread(tctx)
			defer db.CleanupThread(tctx)
			for done := int64(0); done < n && runCtx.Err() == nil; {
				step := int64(1)
				switch {
				case cfg.Load && batch > 1:
					step = min(int64(batch), n-done)
					workload.DoBatchInsert(tctx, int(step), mdb)
				case cfg.Load:
					workload.DoInsert(tctx, mdb)
				case batch > 1:
					step = int64(batch)
					workload.DoBatchTransaction(tctx, batch, mdb)
				default:
					workload.DoTransaction(tctx, mdb)
				}
				done += step
			}
		}(i, n)
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()

	r := &Result{DB: cfg.DB, Threads: threads, Elapsed: elapsed, PerOp: map[string]*hdr.Histogram{},
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
		if r.FirstError == nil {
			r.FirstError = s.first
		}
	}
	r.Ops = r.Total.TotalCount()
	if counted != nil {
		r.Counters, r.HaveCounters = counted.Counters().Sub(before), true
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	return r, nil
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

// measured times every operation into its thread's stats. It is shared by
// nothing: each thread has its own.
type measured struct {
	db goycsb.DB
	s  *threadStats
}

func (m *measured) Close() error { return nil }
func (m *measured) InitThread(ctx context.Context, _, _ int) context.Context {
	return ctx
}
func (m *measured) CleanupThread(context.Context) {}

func (m *measured) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	t := time.Now()
	v, err := m.db.Read(ctx, table, key, fields)
	m.s.record("READ", t, 1, err)
	return v, err
}

func (m *measured) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	t := time.Now()
	v, err := m.db.Scan(ctx, table, startKey, count, fields)
	m.s.record("SCAN", t, 1, err)
	return v, err
}

func (m *measured) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	t := time.Now()
	err := m.db.Update(ctx, table, key, values)
	m.s.record("UPDATE", t, 1, err)
	return err
}

func (m *measured) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	t := time.Now()
	err := m.db.Insert(ctx, table, key, values)
	m.s.record("INSERT", t, 1, err)
	return err
}

func (m *measured) Delete(ctx context.Context, table, key string) error {
	t := time.Now()
	err := m.db.Delete(ctx, table, key)
	m.s.record("DELETE", t, 1, err)
	return err
}

func (m *measured) BatchRead(ctx context.Context, table string, keys []string, fields []string) ([]map[string][]byte, error) {
	if b, ok := m.db.(goycsb.BatchDB); ok {
		t := time.Now()
		v, err := b.BatchRead(ctx, table, keys, fields)
		m.s.record("READ", t, len(keys), err)
		return v, err
	}
	out := make([]map[string][]byte, len(keys))
	for i, k := range keys {
		v, err := m.Read(ctx, table, k, fields)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (m *measured) BatchInsert(ctx context.Context, table string, keys []string, values []map[string][]byte) error {
	if b, ok := m.db.(goycsb.BatchDB); ok {
		t := time.Now()
		err := b.BatchInsert(ctx, table, keys, values)
		m.s.record("INSERT", t, len(keys), err)
		return err
	}
	for i, k := range keys {
		if err := m.Insert(ctx, table, k, values[i]); err != nil {
			return err
		}
	}
	return nil
}

func (m *measured) BatchUpdate(ctx context.Context, table string, keys []string, values []map[string][]byte) error {
	if b, ok := m.db.(goycsb.BatchDB); ok {
		t := time.Now()
		err := b.BatchUpdate(ctx, table, keys, values)
		m.s.record("UPDATE", t, len(keys), err)
		return err
	}
	for i, k := range keys {
		if err := m.Update(ctx, table, k, values[i]); err != nil {
			return err
		}
	}
	return nil
}

func (m *measured) BatchDelete(ctx context.Context, table string, keys []string) error {
	if b, ok := m.db.(goycsb.BatchDB); ok {
		t := time.Now()
		err := b.BatchDelete(ctx, table, keys)
		m.s.record("DELETE", t, len(keys), err)
		return err
	}
	for _, k := range keys {
		if err := m.Delete(ctx, table, k); err != nil {
			return err
		}
	}
	return nil
}

// Summary writes a go-ycsb-style table: per op count, ops/s and latency
// percentiles in microseconds.
func (r *Result) Summary(w io.Writer) {
	fmt.Fprintf(w, "%s: %d ops in %v (%.0f ops/s, %d threads), %d errors\n",
		r.DB, r.Ops, r.Elapsed.Round(time.Millisecond), r.OpsPerSec(), r.Threads, r.Errors)
	ops := make([]string, 0, len(r.PerOp))
	for op := range r.PerOp {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	fmt.Fprintf(w, "  %-8s %10s %12s %9s %9s %9s %9s %9s\n", "op", "count", "ops/s", "avg(us)", "p50(us)", "p90(us)", "p99(us)", "p99.9(us)")
	line := func(name string, h *hdr.Histogram) {
		us := func(v int64) float64 { return float64(v) / 1e3 }
		fmt.Fprintf(w, "  %-8s %10d %12.0f %9.2f %9.2f %9.2f %9.2f %9.2f\n", name, h.TotalCount(),
			float64(h.TotalCount())/r.Elapsed.Seconds(), h.Mean()/1e3,
			us(h.ValueAtQuantile(50)), us(h.ValueAtQuantile(90)), us(h.ValueAtQuantile(99)), us(h.ValueAtQuantile(99.9)))
	}
	for _, op := range ops {
		line(op, r.PerOp[op])
	}
	line("TOTAL", r.Total)
	if len(r.ErrorsOp) > 0 {
		var parts []string
		for op, n := range r.ErrorsOp {
			parts = append(parts, fmt.Sprintf("%s_ERROR=%d", op, n))
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "  errors: %s (first: %v)\n", strings.Join(parts, " "), r.FirstError)
	}
	if r.HaveCounters && r.Counters.Ops > 0 {
		c := r.Counters
		fmt.Fprintf(w, "  jakiro: %.3f fabric round trips/op, %.3f retries/op, %d replied\n",
			c.FabricOpsPerOp(), float64(c.NotReady)/float64(c.Ops), c.Replied)
	}
}
