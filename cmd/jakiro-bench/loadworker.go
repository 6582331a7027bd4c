package main

import (
	"context"
	"errors"
	"math/rand"
	"runtime"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/pingcap/go-ycsb/pkg/generator"

	"github.com/jakiro-kv/jakiro/client"
)

// loadPhase is the clock every worker of a point follows: warming up
// until measuring, then measuring until stop.
type loadPhase struct {
	measuring, stop atomic.Bool
}

// loadWorker drives one client: operations one at a time (window 1) or
// batches of s.Window back to back, paced to interval if it is set.
type loadWorker struct {
	c        *client.Client
	s        *loadSpec
	ks       *keySet
	phase    *loadPhase
	interval time.Duration

	ops, misses, errs int64
	// lat holds every operation's latency when all are timed (sample 1);
	// sampled ones go to samples instead: a histogram is 200 KB, and a
	// thousand of them, zeroed as measuring starts and hit at random
	// places, would cost the load generator its cache.
	lat           *hdr.Histogram
	samples       []int64
	before, after client.Counters
	err           error

	r    *rand.Rand // for the zipfian generator only
	zipf *generator.ScrambledZipfian
	x    uint64 // xorshift state: uniform picks touch 8 bytes, not rand's 4.9 KiB
	b    client.Batch
	dst  []byte
	// sample: time one operation in this many (1, or latencySample with
	// more than sampleAbove callers: many workers' histograms and clock
	// reads would cost the load generator its cache).
	sample, n int64
}

// Above sampleAbove callers a worker times one operation in
// latencySample. Each histogram is 200 KB: 64 workers timing every
// operation into their own cost the load generator more than the SDK
// it measures (callers, 64 sharing a Client on 2 cores: 0.39-0.59 Mops
// timing all, 0.61-0.78 timing one in 16, interleaved), and a batch is
// timed once per batch, so a shape of many callers paid per operation
// what batches of 8 paid per eight.
const (
	sampleAbove   = 8
	latencySample = 16
)

// newLatency is a histogram of latencies up to 10 s, 3 significant digits.
func newLatency() *hdr.Histogram { return hdr.New(1, int64(10*time.Second), 3) }

// rnd is the next xorshift64* number.
func (w *loadWorker) rnd() uint64 {
	w.x ^= w.x >> 12
	w.x ^= w.x << 25
	w.x ^= w.x >> 27
	return w.x * 2685821657736338717
}

// coin is a uniform draw in [0, 1).
func (w *loadWorker) coin() float64 { return float64(w.rnd()>>11) / (1 << 53) }

func (w *loadWorker) run(ctx context.Context, seed int64) {
	w.x = uint64(seed)*0x9E3779B97F4A7C15 | 1
	w.sample = 1
	if w.s.Clients > sampleAbove && w.s.Window == 1 && w.interval == 0 {
		w.sample = latencySample
		w.samples = make([]int64, 0, 1024)
	} else {
		w.lat = newLatency()
	}
	if w.s.Zipf > 0 {
		w.r = rand.New(rand.NewSource(seed))
		w.zipf = generator.NewScrambledZipfian(0, int64(len(w.ks.keys)-1), w.s.Zipf)
	}
	measured := false
	next := time.Now()
	for !w.phase.stop.Load() {
		if !measured && w.phase.measuring.Load() {
			measured = true
			w.before = w.c.Counters()
			w.ops, w.misses, w.errs = 0, 0, 0
			if w.lat != nil {
				w.lat.Reset()
			}
			w.samples = w.samples[:0]
		}
		var t0 time.Time
		if w.n++; w.n%w.sample == 0 {
			t0 = time.Now()
		}
		if w.interval > 0 {
			for t0.Before(next) { // pace: spin, yielding, until the scheduled start
				runtime.Gosched()
				t0 = time.Now()
			}
			t0, next = next, next.Add(w.interval)
		}
		if w.s.Window == 1 {
			if !w.one(ctx, t0) {
				return
			}
		} else if !w.batch(ctx, t0) {
			return
		}
	}
	w.after = w.c.Counters()
}

func (w *loadWorker) pick() int {
	if w.zipf != nil {
		return int(w.zipf.Next(w.r))
	}
	return int(w.rnd() % uint64(len(w.ks.keys)))
}

// one runs a single operation; false stops the worker.
func (w *loadWorker) one(ctx context.Context, t0 time.Time) bool {
	k := w.pick()
	var err error
	if w.coin() < w.s.GetRatio {
		w.dst, err = w.c.GetTo(ctx, w.ks.keys[k], w.dst[:0])
	} else {
		err = w.c.Put(ctx, w.ks.keys[k], w.ks.value[:w.ks.sizes[k]], 0)
	}
	if !t0.IsZero() {
		if d := int64(time.Since(t0)); w.lat != nil {
			w.lat.RecordValue(d)
		} else {
			w.samples = append(w.samples, d)
		}
	}
	w.ops++
	switch {
	case errors.Is(err, client.ErrNotFound):
		w.misses++
	case err != nil:
		w.errs++
		w.err = err
		if ctx.Err() != nil || errors.Is(err, client.ErrClosed) {
			return false
		}
	}
	return true
}

// batch runs s.Window operations as one batch; false stops the worker.
func (w *loadWorker) batch(ctx context.Context, t0 time.Time) bool {
	w.b.Reset()
	for j := 0; j < w.s.Window; j++ {
		k := w.pick()
		if w.coin() < w.s.GetRatio {
			w.b.Get(w.ks.keys[k])
		} else {
			w.b.Put(w.ks.keys[k], w.ks.value[:w.ks.sizes[k]], 0)
		}
	}
	if err := w.c.Run(ctx, &w.b); err != nil {
		w.err = err
		w.errs += int64(w.s.Window)
		return false
	}
	w.lat.RecordValues(int64(time.Since(t0)), int64(w.s.Window))
	w.ops += int64(w.s.Window)
	for j := 0; j < w.b.Len(); j++ {
		if _, err := w.b.Result(j); errors.Is(err, client.ErrNotFound) {
			w.misses++
		} else if err != nil {
			w.errs++
			w.err = err
		}
	}
	return true
}
