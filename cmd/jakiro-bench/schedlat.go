package main

import (
	"math"
	"runtime/metrics"
)

// The Go runtime's scheduling latency (how long goroutines stayed
// runnable before a P ran them) over a load point: where callers are
// woken faster than the process's threads get cores, some of them wait
// in the run queue of a P whose thread the kernel has descheduled, for a
// scheduler slice (milliseconds), while the other P has nothing to run.
// The share of waits past a millisecond says how often that happened.

const schedMetric = "/sched/latencies:seconds"

// schedSnap is the histogram at one moment.
type schedSnap struct {
	counts  []uint64
	buckets []float64 // seconds; len(counts)+1 boundaries
}

func readSched() schedSnap {
	s := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return schedSnap{}
	}
	h := s[0].Value.Float64Histogram()
	return schedSnap{counts: append([]uint64(nil), h.Counts...), buckets: h.Buckets}
}

// schedLat summarises the waits between two snapshots.
type schedLat struct {
	P999US     float64 // 99.9th percentile wait, µs (a bucket's upper bound)
	Over1msPct float64 // % of waits of a millisecond or more
}

func (b schedSnap) since(a schedSnap) schedLat {
	if len(a.counts) != len(b.counts) || len(b.counts) == 0 {
		return schedLat{}
	}
	delta := func(i int) uint64 { return b.counts[i] - a.counts[i] }
	var total, over uint64
	for i := range b.counts {
		total += delta(i)
		if b.buckets[i] >= 1e-3 {
			over += delta(i)
		}
	}
	if total == 0 {
		return schedLat{}
	}
	r := schedLat{Over1msPct: 100 * float64(over) / float64(total)}
	var seen uint64
	for i := range b.counts {
		if seen += delta(i); float64(seen) >= 0.999*float64(total) {
			r.P999US = b.buckets[i+1] * 1e6
			if math.IsInf(b.buckets[i+1], 1) { // the last bucket is unbounded
				r.P999US = b.buckets[i] * 1e6
			}
			break
		}
	}
	return r
}
