package ycsb

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/jakiro-kv/jakiro/client"
)

// Result is what Run measured.
type Result struct {
	DB       string
	Threads  int
	Ops      int64 // operations that succeeded
	Errors   int64 // operations that failed
	Misses   int64 // reads of keys not stored (counted in Ops)
	Elapsed  time.Duration
	PerOp    map[string]*hdr.Histogram // latency in ns by go-ycsb op name (READ, UPDATE, ...)
	ErrorsOp map[string]int64
	Total    *hdr.Histogram // every successful op
	// Counters are the jakiro driver's protocol counters over the run;
	// HaveCounters is false for other databases.
	Counters     client.Counters
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

// Summary writes a go-ycsb-style table: per op count, ops/s and latency
// percentiles in microseconds.
func (r *Result) Summary(w io.Writer) {
	fmt.Fprintf(w, "%s: %d ops in %v (%.0f ops/s, %d threads), %d errors, %d misses\n",
		r.DB, r.Ops, r.Elapsed.Round(time.Millisecond), r.OpsPerSec(), r.Threads, r.Errors, r.Misses)
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
