package main

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/jakiro-kv/jakiro/client"
)

// loadSpec is one measurement point of the native load generator: the
// paper's closed-loop clients, each with its own connection, keeping
// Window requests in flight through a client.Batch.
type loadSpec struct {
	Addr     string
	Mode     client.Mode
	RFS      int // 0 = auto
	Clients  int
	Window   int     // ops per batch; 1 = synchronous ops, each timed
	GetRatio float64 // fraction of GETs; the rest are PUTs
	Keys     int
	Zipf     float64 // 0 = uniform; else YCSB's scrambled zipfian constant
	Sizes    sizeDist
	Warmup   time.Duration
	Duration time.Duration
	// Rate bounds total ops/s (0 = as fast as possible); clients pace
	// themselves and latency counts from each op's scheduled start.
	Rate float64
	// With FixDelay, FetchDelay fixes the wait before the first fetch
	// READ; otherwise the client adapts it.
	FetchDelay time.Duration
	FixDelay   bool
	// Shared: the Clients goroutines share one client.Client (as the
	// goroutines of a real service do) instead of one each.
	Shared bool
}

// loadResult is what one point measured.
type loadResult struct {
	Ops      int64
	Misses   int64 // GETs that found no key (should stay 0: keys are preloaded)
	Errors   int64
	Elapsed  time.Duration
	Mops     float64
	Lat      *hdr.Histogram // ns per op (a batch's ops share its latency)
	Counters client.Counters
	RFS      int           // the fetch size at the end (auto moves it)
	PerMops  []float64     // each client's rate
	CPU      time.Duration // this process's CPU time while measuring
	Sched    schedLat      // the runtime's scheduling latency while measuring
}

// CPUPerOp is the load process's CPU µs per operation.
func (r loadResult) CPUPerOp() float64 {
	if r.Ops == 0 {
		return 0
	}
	return float64(r.CPU.Microseconds()) / float64(r.Ops)
}

func (r loadResult) RoundTrips() float64 { return r.Counters.FabricOpsPerOp() }
func (r loadResult) Retries() float64 {
	if r.Counters.Ops == 0 {
		return 0
	}
	return float64(r.Counters.NotReady) / float64(r.Counters.Ops)
}
func (r loadResult) P(q float64) float64 { return float64(r.Lat.ValueAtQuantile(q)) / 1e3 } // µs

// sizeDist gives every key a fixed value size, so GETs see what PUTs wrote.
type sizeDist struct {
	Fixed int // every value this size, if > 0
	// Weibo-like: lognormal sizes clamped to [1, 899] B, mean about 43 B
	// (the paper's trace: 1–899 B, mean 43 B, very few above 512 B).
	Mixed bool
}

func (d sizeDist) String() string {
	if d.Mixed {
		return "mixed(1-899B,mean~43B)"
	}
	return fmt.Sprintf("%dB", d.Fixed)
}

// sizes returns each key's value size.
func (d sizeDist) sizes(keys int) []int {
	out := make([]int, keys)
	r := rand.New(rand.NewSource(43))
	const sigma = 0.85
	mu := math.Log(43) - sigma*sigma/2
	for i := range out {
		if !d.Mixed {
			out[i] = d.Fixed
			continue
		}
		n := int(math.Round(math.Exp(mu + sigma*r.NormFloat64())))
		out[i] = min(max(n, 1), 899)
	}
	return out
}

// keyOf is the paper's 16-byte key for item i.
func keyOf(i int) []byte { return fmt.Appendf(nil, "k%015d", i) }

// keySet is the preloaded keyspace.
type keySet struct {
	keys  [][]byte
	sizes []int
	value []byte // value bytes; a value of size n is value[:n]
}

func newKeySet(n int, d sizeDist) *keySet {
	ks := &keySet{keys: make([][]byte, n), sizes: d.sizes(n)}
	maxSize := 0
	for i := range ks.keys {
		ks.keys[i] = keyOf(i)
		maxSize = max(maxSize, ks.sizes[i])
	}
	ks.value = make([]byte, maxSize)
	for i := range ks.value {
		ks.value[i] = byte('a' + i%26)
	}
	return ks
}

func (ks *keySet) meanSize() float64 {
	s := 0
	for _, n := range ks.sizes {
		s += n
	}
	return float64(s) / float64(len(ks.sizes))
}

// preload PUTs every key, pipelined over one client.
func preload(ctx context.Context, addr string, ks *keySet) error {
	c, err := client.Dial(ctx, addr, client.WithMode(client.ModeRFP))
	if err != nil {
		return err
	}
	defer c.Close()
	var b client.Batch
	for i := 0; i < len(ks.keys); {
		b.Reset()
		for ; i < len(ks.keys) && b.Len() < 64; i++ {
			b.Put(ks.keys[i], ks.value[:ks.sizes[i]], 0)
		}
		if err := c.Run(ctx, &b); err != nil {
			return err
		}
		for j := 0; j < b.Len(); j++ {
			if _, err := b.Result(j); err != nil {
				return fmt.Errorf("preload: %w", err)
			}
		}
	}
	return nil
}

// runLoad measures one point against a preloaded server.
func runLoad(ctx context.Context, s loadSpec, ks *keySet) (loadResult, error) {
	if s.Clients < 1 || s.Window < 1 || s.Duration <= 0 {
		return loadResult{}, fmt.Errorf("loadgen: clients %d, window %d, duration %v", s.Clients, s.Window, s.Duration)
	}
	clients, err := dialLoadClients(ctx, s)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	if err != nil {
		return loadResult{}, err
	}
	ws := make([]*loadWorker, s.Clients)
	var wg sync.WaitGroup
	var phase loadPhase
	start := time.Now()
	measureAt := start.Add(s.Warmup)
	endAt := measureAt.Add(s.Duration)
	var interval time.Duration // per client, between batches
	if s.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(s.Clients*s.Window) / s.Rate)
	}
	for i := range s.Clients {
		c := clients[0]
		if !s.Shared {
			c = clients[i]
		}
		w := &loadWorker{c: c, s: &s, ks: ks, phase: &phase, interval: interval}
		ws[i] = w
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			w.run(ctx, seed)
		}(int64(i)*7919 + time.Now().UnixNano())
	}
	// The clock, from here: warm up, measure, stop.
	timer := func(until time.Time) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Until(until)):
			return true
		}
	}
	ok := timer(measureAt)
	cpu0, sched0 := selfCPU(), readSched()
	phase.measuring.Store(true)
	if ok {
		timer(endAt)
	}
	phase.stop.Store(true)
	cpu, sched := selfCPU()-cpu0, readSched().since(sched0)
	elapsed := time.Since(measureAt)
	wg.Wait()
	res, firstErr := mergeLoad(ws, elapsed, s.Shared)
	res.CPU, res.Sched = cpu, sched
	res.RFS = clients[0].RFS()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if res.Errors > 0 {
		return res, fmt.Errorf("loadgen: %d errors, first: %w", res.Errors, firstErr)
	}
	return res, nil
}

// dialLoadClients dials s.Clients clients with s's options. On error the
// clients dialled so far are returned, for the caller to close.
func dialLoadClients(ctx context.Context, s loadSpec) ([]*client.Client, error) {
	clients := make([]*client.Client, s.Clients)
	if s.Shared {
		clients = clients[:1]
	}
	for i := range clients {
		opts := []client.Option{client.WithMode(s.Mode), client.WithRFS(s.RFS)}
		if s.FixDelay {
			opts = append(opts, client.WithFetchDelay(s.FetchDelay))
		}
		if s.Window > 1 {
			opts = append(opts, client.WithWindow(s.Window))
		}
		c, err := client.Dial(ctx, s.Addr, opts...)
		if err != nil {
			return clients, fmt.Errorf("client %d: %w", i, err)
		}
		clients[i] = c
	}
	return clients, nil
}

// mergeLoad sums the workers' measurements.
// With shared, every worker saw the one client's counters: they count once.
func mergeLoad(ws []*loadWorker, elapsed time.Duration, shared bool) (loadResult, error) {
	res := loadResult{Elapsed: elapsed, Lat: newLatency()}
	var firstErr error
	for _, w := range ws {
		res.Ops += w.ops
		res.Misses += w.misses
		res.Errors += w.errs
		if w.lat != nil {
			res.Lat.Merge(w.lat)
		}
		for _, d := range w.samples {
			res.Lat.RecordValue(d)
		}
		if !shared || w == ws[0] {
			res.Counters = res.Counters.Add(w.after.Sub(w.before))
		}
		if firstErr == nil && w.err != nil {
			firstErr = w.err
		}
	}
	res.Mops = float64(res.Ops) / elapsed.Seconds() / 1e6
	for _, w := range ws {
		res.PerMops = append(res.PerMops, float64(w.ops)/elapsed.Seconds()/1e6)
	}
	return res, firstErr
}
