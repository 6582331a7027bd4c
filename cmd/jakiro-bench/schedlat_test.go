package main

import (
	"math"
	"testing"
)

func TestSchedLatSince(t *testing.T) {
	buckets := []float64{0, 1e-6, 1e-4, 1e-3, 1e-2, math.Inf(1)}
	a := schedSnap{counts: []uint64{5, 5, 0, 0, 0}, buckets: buckets}
	// Between the snapshots: 990 waits under 1 µs, 5 under 100 µs, 4 of
	// 1-10 ms and 1 past 10 ms.
	b := schedSnap{counts: []uint64{995, 10, 0, 4, 1}, buckets: buckets}
	got := b.since(a)
	if got.Over1msPct != 0.5 {
		t.Errorf("Over1msPct = %v, want 0.5", got.Over1msPct)
	}
	if got.P999US != 1e4 { // the 999th wait of 1000 is in the 1-10 ms bucket
		t.Errorf("P999US = %v, want 10000", got.P999US)
	}
	b.counts[4] = 6 // 6 of 1005 past 10 ms: the p99.9 is in the unbounded bucket
	if got := b.since(a); got.P999US != 1e4 {
		t.Errorf("unbounded bucket: P999US = %v, want its lower bound 10000", got.P999US)
	}
	if got := a.since(a); got != (schedLat{}) {
		t.Errorf("no waits: %+v", got)
	}
	if got := b.since(schedSnap{}); got != (schedLat{}) {
		t.Errorf("mismatched snapshots: %+v", got)
	}
	if s := readSched(); len(s.counts) == 0 || len(s.buckets) != len(s.counts)+1 {
		t.Errorf("readSched: %d counts, %d buckets", len(s.counts), len(s.buckets))
	}
}
