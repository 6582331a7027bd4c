package tcp

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// BenchmarkOps measures one-sided ops over loopback: each initiator keeps
// window ops of size bytes in flight against its own connection to one
// listener process-side. Mops counts completed ops of all initiators.
func BenchmarkOps(b *testing.B) {
	for _, kind := range []fabric.OpKind{fabric.OpRead, fabric.OpWrite} {
		for _, inits := range []int{1, 2} {
			for _, win := range []int{1, 8, 32} {
				name := fmt.Sprintf("%v/init=%d/win=%d/32B", kind, inits, win)
				b.Run(name, func(b *testing.B) { benchOps(b, kind, inits, win, 32) })
			}
		}
	}
}

func benchOps(b *testing.B, kind fabric.OpKind, inits, win, size int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln := listen(b, fabric.Options{})
	go func() {
		for {
			s, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			r, err := s.Alloc(1 << 20)
			if err != nil {
				s.Close()
				return
			}
			var d [fabric.DescSize]byte
			r.Desc().Put(d[:])
			c, err := s.Establish(ctx, d[:])
			if err != nil {
				return
			}
			go func() { <-ctx.Done(); c.Close() }()
		}
	}()
	conns := make([]fabric.Conn, inits)
	locals := make([]*fabric.Region, inits)
	remotes := make([]fabric.Desc, inits)
	for i := range conns {
		s, err := fabric.Dial(ctx, ln.Addr(), fabric.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if locals[i], err = s.Alloc(win * size); err != nil {
			b.Fatal(err)
		}
		if conns[i], err = s.Establish(ctx, nil); err != nil {
			b.Fatal(err)
		}
		defer conns[i].Close()
		if remotes[i], err = fabric.ParseDesc(conns[i].PeerData()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, inits)
	for i := range conns {
		n := b.N / inits
		if i < b.N%inits {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- drive(conns[i], kind, locals[i], remotes[i], win, size, n)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds()/1e6, "Mops")
}

// drive completes n ops on c, keeping up to win in flight: every poll's
// worth of completions is reposted as one batch.
func drive(c fabric.Conn, kind fabric.OpKind, local *fabric.Region, remote fabric.Desc, win, size, n int) error {
	ops := make([]fabric.Op, win)
	for i := range ops {
		ops[i] = fabric.Op{Kind: kind, ID: uint64(i), Local: local, LocalOff: i * size, Len: size, Remote: remote, RemoteOff: uint64(i * size)}
	}
	cs := make([]fabric.Completion, win)
	posted, done, spins := 0, 0, 0
	for done < n {
		if k := min(win-(posted-done), n-posted); k > 0 {
			if err := c.Post(ops[:k]); err != nil {
				return err
			}
			posted += k
		}
		m, err := c.Poll(cs)
		if err != nil {
			return err
		}
		for _, x := range cs[:m] {
			if x.Err != nil {
				return x.Err
			}
		}
		done += m
		if m == 0 {
			// Two cores carry both ends: yield to the NIC goroutines.
			if spins++; spins&15 == 0 {
				runtime.Gosched()
			}
		}
	}
	return nil
}
