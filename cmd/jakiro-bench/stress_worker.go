package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/internal/stressval"
)

// stressSizes are the value sizes writers pick from: 1 B, the sizes
// around the short/long boundary of stressval, around the RFS boundaries
// (RFSFor(32) = 40: 32 B values fit a 40 B fetch, 33 do not; 40, 41, 56,
// 64), then powers of four up to the server's max value, and the max
// itself. Sizes over maxValue are dropped.
func stressSizes(maxValue int) []int {
	all := []int{1, 2, 7, 19, 20, 21, 31, 32, 33, 40, 41, 56, 57, 64, 65, 120, 248, 249, 256}
	for n := 1 << 10; n < maxValue; n <<= 2 {
		all = append(all, n-1, n)
	}
	all = append(all, maxValue-1, maxValue)
	var out []int
	for _, n := range all {
		if n >= 1 && n <= maxValue && (len(out) == 0 || n > out[len(out)-1]) {
			out = append(out, n)
		}
	}
	return out
}

// randomSizeMax bounds the uniformly random value sizes.
const randomSizeMax = 24 << 10

// stressCounts is what one worker, process or run counted.
type stressCounts struct {
	Ops      uint64 `json:"ops"`
	Gets     uint64 `json:"gets"`
	Puts     uint64 `json:"puts"`
	Hits     uint64 `json:"hits"` // GETs that returned a value
	Short    uint64 `json:"short"`
	Invalid  uint64 `json:"invalid"`
	Stale    uint64 `json:"stale"`
	Errors   uint64 `json:"errors"`
	Fabric   uint64 `json:"fabric_ops"` // WRITEs + READs of the process's client
	Replied  uint64 `json:"replied"`
	NotReady uint64 `json:"not_ready"`
}

func (c *stressCounts) add(o stressCounts) {
	c.Ops += o.Ops
	c.Gets += o.Gets
	c.Puts += o.Puts
	c.Hits += o.Hits
	c.Short += o.Short
	c.Invalid += o.Invalid
	c.Stale += o.Stale
	c.Errors += o.Errors
	c.Fabric += o.Fabric
	c.Replied += o.Replied
	c.NotReady += o.NotReady
}

// stressWorker is one writer and reader: it PUTs its own versions of the
// hot keys and checks every value it GETs.
type stressWorker struct {
	id      uint32 // writer id, 1..writers
	keys    [][]byte
	sizes   []int
	putPct  int
	rng     *rand.Rand
	version uint64
	// seen[k][w] is the highest version of writer w this worker has seen
	// on key k (its own PUTs included, once acknowledged).
	seen    [][]uint64
	bufs    [][]byte // one value buffer per batch slot
	scratch [stressval.HeaderSize]byte
	report  io.Writer // first problems, for the log
	logged  int
	n       stressCounts
}

// newStressWorker makes writer id of a run whose keys are named after run,
// so that versions of an earlier run on the same server are not mistaken
// for this one's.
func newStressWorker(id uint32, run string, writers, keys int, sizes []int, putPct, batch int, report io.Writer) *stressWorker {
	w := &stressWorker{id: id, sizes: sizes, putPct: putPct, report: report,
		rng: rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))}
	for k := range keys {
		w.keys = append(w.keys, fmt.Appendf(nil, "stress:%s:%d", run, k))
		w.seen = append(w.seen, make([]uint64, writers+1))
	}
	w.bufs = make([][]byte, batch)
	return w
}

func (w *stressWorker) problem(format string, a ...any) {
	if w.logged < 10 {
		w.logged++
		fmt.Fprintf(w.report, "stress: writer %d: "+format+"\n", append([]any{w.id}, a...)...)
	}
}

// size picks a value size: mostly small, one op in four from every size,
// one in sixteen any length up to randomSizeMax (the lengths a record, a
// ring's end or a part boundary make special are not all in sizes).
func (w *stressWorker) size() int {
	if w.rng.IntN(16) == 0 {
		return 1 + w.rng.IntN(min(randomSizeMax, w.sizes[len(w.sizes)-1]))
	}
	if w.rng.IntN(4) == 0 {
		return w.sizes[w.rng.IntN(len(w.sizes))]
	}
	small := len(w.sizes)
	for small > 1 && w.sizes[small-1] > 256 {
		small--
	}
	return w.sizes[w.rng.IntN(small)]
}

// value makes this worker's next version of key k in buf.
func (w *stressWorker) value(buf []byte, k int) ([]byte, uint64) {
	w.version++
	return stressval.Append(buf[:0], w.keys[k], w.id, w.version, w.size()), w.version
}

// putDone records an acknowledged PUT.
func (w *stressWorker) putDone(k int, version uint64, err error) {
	w.n.Ops++
	w.n.Puts++
	if err != nil {
		w.n.Errors++
		w.problem("PUT %s: %v", w.keys[k], err)
		return
	}
	w.seen[k][w.id] = max(w.seen[k][w.id], version)
}

// getDone checks a GET's outcome.
func (w *stressWorker) getDone(k int, v []byte, err error) {
	w.n.Ops++
	w.n.Gets++
	switch {
	case errors.Is(err, client.ErrNotFound):
		return
	case err != nil:
		w.n.Errors++
		w.problem("GET %s: %v", w.keys[k], err)
		return
	}
	w.n.Hits++
	got, err := stressval.Check(w.keys[k], v, &w.scratch)
	switch {
	case err != nil:
		w.n.Invalid++
		w.problem("GET %s: %v", w.keys[k], err)
	case got.Short:
		w.n.Short++
	case got.Writer == 0 || int(got.Writer) >= len(w.seen[k]):
		w.n.Invalid++
		w.problem("GET %s: valid checksum but writer %d does not exist", w.keys[k], got.Writer)
	case got.Version < w.seen[k][got.Writer]:
		w.n.Stale++
		w.problem("GET %s: writer %d version %d after version %d (stale)", w.keys[k], got.Writer, got.Version, w.seen[k][got.Writer])
	default:
		w.seen[k][got.Writer] = got.Version
	}
}

// round runs one batch of mixed GETs and PUTs, or, one round in eight,
// the same as single synchronous calls.
func (w *stressWorker) round(ctx context.Context, c *client.Client, b *client.Batch) error {
	n := len(w.bufs)
	var ks, vers [64]uint64
	single := w.rng.IntN(8) == 0
	b.Reset()
	for i := range n {
		k := w.rng.IntN(len(w.keys))
		ks[i] = uint64(k)
		if w.rng.IntN(100) < w.putPct {
			var v []byte
			v, vers[i] = w.value(w.bufs[i], k)
			w.bufs[i] = v
			if single {
				w.putDone(k, vers[i], c.Put(ctx, w.keys[k], v, 0))
				continue
			}
			b.Put(w.keys[k], v, 0)
		} else {
			vers[i] = 0
			if single {
				v, err := c.Get(ctx, w.keys[k])
				w.getDone(k, v, err)
				continue
			}
			b.Get(w.keys[k])
		}
	}
	if single {
		return ctx.Err()
	}
	if err := c.Run(ctx, b); err != nil {
		return err
	}
	for i := range n {
		v, err := b.Result(i)
		if vers[i] != 0 {
			w.putDone(int(ks[i]), vers[i], err)
		} else {
			w.getDone(int(ks[i]), v, err)
		}
	}
	return nil
}

// stressChildSpec is one stress process's share of the run (JSON in
// envStressChild).
type stressChildSpec struct {
	Addr     string        `json:"addr"`
	Run      string        `json:"run"` // names the run's keys
	Mode     string        `json:"mode"`
	Proc     int           `json:"proc"`
	Workers  int           `json:"workers"`
	Writers  int           `json:"writers"` // in the whole run
	Keys     int           `json:"keys"`
	PutPct   int           `json:"put_pct"`
	Batch    int           `json:"batch"`
	Window   int           `json:"window"` // client.WithWindow; 0 for the server's default
	Ops      uint64        `json:"ops"`    // stop after this many (0: duration only)
	Duration time.Duration `json:"duration"`
}

// runStressProcess runs spec's workers on one client until the duration
// passes or they have done spec.Ops, and returns what they counted.
func runStressProcess(ctx context.Context, spec stressChildSpec, report io.Writer) (stressCounts, error) {
	mode, err := client.ParseMode(spec.Mode)
	if err != nil {
		return stressCounts{}, err
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	c, err := client.Dial(dctx, spec.Addr, client.WithMode(mode), client.WithWindow(spec.Window))
	cancel()
	if err != nil {
		return stressCounts{}, err
	}
	defer c.Close()
	sizes := stressSizes(c.MaxValue())
	// The run's end is the stop condition, not a failure: calls get a
	// context that outlives it by a margin, so none is cut mid-flight.
	callCtx, cancelCalls := context.WithTimeout(ctx, spec.Duration+time.Minute)
	defer cancelCalls()
	deadline := time.Now().Add(spec.Duration)
	var done atomic.Uint64
	results := make(chan stressCounts, spec.Workers)
	errs := make(chan error, spec.Workers)
	for i := range spec.Workers {
		id := uint32(spec.Proc*spec.Workers + i + 1)
		w := newStressWorker(id, spec.Run, spec.Writers, spec.Keys, sizes, spec.PutPct, spec.Batch, report)
		go func() {
			var b client.Batch
			var err error
			for time.Now().Before(deadline) && (spec.Ops == 0 || done.Load() < spec.Ops) && ctx.Err() == nil {
				before := w.n.Ops
				if err = w.round(callCtx, c, &b); err != nil {
					break
				}
				done.Add(w.n.Ops - before)
			}
			results <- w.n
			errs <- err
		}()
	}
	var total stressCounts
	var firstErr error
	for range spec.Workers {
		total.add(<-results)
		if err := <-errs; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	cnt := c.Counters()
	total.Fabric, total.Replied, total.NotReady = cnt.Writes+cnt.Reads, cnt.Replied, cnt.NotReady
	return total, firstErr
}

// stressModes expands --mode all.
func stressModes(mode string) ([]string, error) {
	if mode == "all" {
		return []string{client.ModeRFP.String(), client.ModeReply.String(), client.ModeHybrid.String()}, nil
	}
	if _, err := client.ParseMode(mode); err != nil {
		return nil, err
	}
	return []string{mode}, nil
}
