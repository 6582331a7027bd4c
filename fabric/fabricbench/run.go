package fabricbench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Result is one measurement.
type Result struct {
	Kind       fabric.OpKind
	Initiators int
	Window     int
	Size       int
	Ops        uint64        // operations completed while measuring
	Elapsed    time.Duration // from all connections ready to all done
	Mops       float64       // Ops per microsecond
}

func (r Result) String() string {
	return fmt.Sprintf("%v size=%d initiators=%d window=%d: %d ops in %v = %.2f Mops",
		r.Kind, r.Size, r.Initiators, r.Window, r.Ops, r.Elapsed.Round(time.Microsecond), r.Mops)
}

// Run measures for duration d.
func Run(ctx context.Context, addr string, kind fabric.OpKind, initiators, window, size int, d time.Duration) (Result, error) {
	if d <= 0 {
		return Result{}, fmt.Errorf("fabricbench: duration %v", d)
	}
	return run(ctx, addr, kind, initiators, window, size, d, 0)
}

// RunN measures n operations in total, spread over the initiators (for
// testing.B, whose b.N is an operation count).
func RunN(ctx context.Context, addr string, kind fabric.OpKind, initiators, window, size int, n uint64) (Result, error) {
	return run(ctx, addr, kind, initiators, window, size, 0, n)
}

func run(ctx context.Context, addr string, kind fabric.OpKind, initiators, window, size int, d time.Duration, n uint64) (Result, error) {
	if initiators <= 0 || window <= 0 || size <= 0 {
		return Result{}, fmt.Errorf("fabricbench: initiators %d, window %d, size %d must be positive", initiators, window, size)
	}
	if kind != fabric.OpRead && kind != fabric.OpWrite {
		return Result{}, fmt.Errorf("fabricbench: op kind %v", kind)
	}
	ins := make([]*initiator, initiators)
	defer func() {
		for _, in := range ins {
			if in != nil {
				in.c.Close()
			}
		}
	}()
	for i := range ins {
		in, err := dial(ctx, addr, kind, window, size)
		if err != nil {
			return Result{}, fmt.Errorf("fabricbench: initiator %d: %w", i, err)
		}
		ins[i] = in
		in.quota = ^uint64(0)
		if d == 0 {
			in.quota = n / uint64(initiators)
			if uint64(i) < n%uint64(initiators) {
				in.quota++
			}
		}
	}
	var stop atomic.Bool
	errs := make(chan error, initiators)
	var wg sync.WaitGroup
	start := time.Now()
	if d > 0 {
		t := time.AfterFunc(d, func() { stop.Store(true) })
		defer t.Stop()
	}
	cancel := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer cancel()
	for _, in := range ins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := in.loop(&stop); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil && d == 0 {
		return Result{}, err
	}
	r := Result{Kind: kind, Initiators: initiators, Window: window, Size: size, Elapsed: elapsed}
	for _, in := range ins {
		r.Ops += in.done
	}
	if elapsed > 0 {
		r.Mops = float64(r.Ops) / (float64(elapsed.Nanoseconds()) / 1e3)
	}
	return r, nil
}

// initiator is one connection and the ops it keeps in flight: op i always
// uses slot i of the local region and of the remote one.
type initiator struct {
	c      fabric.Conn
	ops    []fabric.Op // by slot; an op's ID is its slot
	repost []fabric.Op
	cs     []fabric.Completion
	quota  uint64 // ops to post in all
	posted uint64
	done   uint64
}

func dial(ctx context.Context, addr string, kind fabric.OpKind, window, size int) (*initiator, error) {
	s, err := fabric.Dial(ctx, addr, fabric.Options{QueueDepth: window})
	if err != nil {
		return nil, err
	}
	local, err := s.Alloc(window * size)
	if err != nil {
		s.Close()
		return nil, err
	}
	c, err := s.Establish(ctx, nil)
	if err != nil {
		s.Close()
		return nil, err
	}
	remote, err := fabric.ParseDesc(c.PeerData())
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("target's accept data: %w", err)
	}
	if remote.Len < uint64(size) {
		c.Close()
		return nil, fmt.Errorf("target granted %d bytes, ops need %d", remote.Len, size)
	}
	slots := remote.Len / uint64(size) // remote slots; wrap if fewer than window
	in := &initiator{
		c:      c,
		ops:    make([]fabric.Op, window),
		repost: make([]fabric.Op, window),
		cs:     make([]fabric.Completion, window),
	}
	for i := range in.ops {
		in.ops[i] = fabric.Op{
			Kind: kind, ID: uint64(i), Local: local, LocalOff: i * size, Len: size,
			Remote: remote, RemoteOff: uint64(i) % slots * uint64(size),
		}
	}
	return in, nil
}

// loop keeps the window full until stop or the quota, then drains.
func (in *initiator) loop(stop *atomic.Bool) error {
	first := min(uint64(len(in.ops)), in.quota)
	if first == 0 {
		return nil
	}
	if err := in.c.Post(in.ops[:first]); err != nil {
		return err
	}
	in.posted = first
	outstanding := first
	for idle := 0; outstanding > 0; {
		n, err := in.c.Poll(in.cs)
		if err != nil {
			return err
		}
		if n == 0 {
			// Providers with asynchronous completions: let other
			// initiators run when there are more of them than cores.
			if idle++; idle&63 == 0 {
				runtime.Gosched()
			}
			continue
		}
		k := 0
		stopping := stop.Load()
		for _, c := range in.cs[:n] {
			if c.Err != nil {
				return fmt.Errorf("op %d: %w", c.ID, c.Err)
			}
			if !stopping && in.posted < in.quota {
				in.repost[k] = in.ops[c.ID]
				k++
				in.posted++
			}
		}
		in.done += uint64(n)
		outstanding -= uint64(n)
		if k > 0 {
			if err := in.c.Post(in.repost[:k]); err != nil {
				return err
			}
			outstanding += uint64(k)
		}
	}
	return nil
}
