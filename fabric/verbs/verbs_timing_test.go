//go:build rdma

package verbs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// BenchmarkOps measures 32-byte one-sided ops on one connection, with one
// op in flight (window 1: latency-bound) or eight (window 8: pipelined,
// reposting each reaped group with one Post). Under scripts/rxe-vm it runs
// on soft-RoCE in an emulated CPU: compare runs with each other only.
func BenchmarkOps(b *testing.B) {
	requireRDMA(b)
	ln := listenT(b, fabric.Options{})
	l := dialLink(b, ln, fabric.Options{}, 4096)
	for _, kind := range []fabric.OpKind{fabric.OpRead, fabric.OpWrite} {
		for _, window := range []int{1, 8} {
			b.Run(fmt.Sprintf("%v/32B/window%d", kind, window), func(b *testing.B) {
				benchWindow(b, l, kind, 32, window)
			})
		}
	}
}

func benchWindow(b *testing.B, l *link, kind fabric.OpKind, size, window int) {
	ops := make([]fabric.Op, window)
	for i := range ops {
		ops[i] = fabric.Op{Kind: kind, ID: uint64(i), Local: l.DR, LocalOff: i * size, Len: size, Remote: l.ToA, RemoteOff: uint64(i * size)}
	}
	cs := make([]fabric.Completion, window)
	repost := make([]fabric.Op, window)
	b.ReportAllocs()
	b.ResetTimer()
	posted := min(window, b.N)
	if err := l.D.Post(ops[:posted]); err != nil {
		b.Fatal(err)
	}
	for done := 0; done < b.N; {
		n, err := l.D.Poll(cs)
		if err != nil {
			b.Fatal(err)
		}
		k := 0
		for _, c := range cs[:n] {
			if c.Err != nil {
				b.Fatal(c.Err)
			}
			if posted < b.N {
				repost[k] = ops[c.ID]
				k++
				posted++
			}
		}
		done += n
		if k > 0 {
			if err := l.D.Post(repost[:k]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkJoin: what a join costs, step by step: a dialer resolves the
// listener's address and route, makes its verbs resources (PD, CQ, QP),
// registers a region and connects; the listener handles the connect
// request (its own PD, CQs and QP), Accept hands it over, the acceptor
// registers its region and accepts; then one WRITE and one READ of 32
// bytes, and the dialer's Close. Reports the median of each step and of
// the whole join (join-µs), against a listener that prepares nothing
// and one that keeps 8 connections' resources ready (Options.Ready).
// Joins come joinGap apart, as clients arrive now and then: a loop with
// no pause would leave the listener no time to prepare anything but on
// the CPU the joins use (2 emulated vCPUs in make test-rdma's VM).
func BenchmarkJoin(b *testing.B) {
	requireRDMA(b)
	for _, ready := range []int{0, 8} {
		b.Run(fmt.Sprintf("ready=%d", ready), func(b *testing.B) { benchJoin(b, fabric.Options{Ready: ready}) })
	}
}

// joinGap: the pause between BenchmarkJoin's joins.
const joinGap = 5 * time.Millisecond

func benchJoin(b *testing.B, o fabric.Options) {
	ln := listenT(b, o)
	addr := ln.Addr()
	const size = 4096
	var stepAt [joinSteps]atomic.Int64
	f := func(s joinStep) { stepAt[s].Store(time.Now().UnixNano()) }
	joinTrace.Store(&f)
	defer joinTrace.Store(nil)
	type acc struct {
		accepted, alloc, est int64
		c                    fabric.Conn
		peer                 fabric.Desc
		err                  error
	}
	names := []string{"resolve addr", "resolve route", "dialer verbs", "dialer region", "request at the listener", "acceptor verbs",
		"Accept returns", "acceptor region", "established (dialer)", "first WRITE + READ", "dialer Close"}
	steps := make([][]float64, len(names))
	var total []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 {
			b.StopTimer()
			time.Sleep(joinGap)
			b.StartTimer()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ch := make(chan acc, 1)
		go func() {
			var a acc
			s, err := ln.Accept(ctx)
			if err != nil {
				a.err = err
				ch <- a
				return
			}
			a.accepted = time.Now().UnixNano()
			r, err := s.Alloc(size)
			if err != nil {
				s.Close()
				a.err = err
				ch <- a
				return
			}
			a.alloc = time.Now().UnixNano()
			if a.peer, err = fabric.ParseDesc(s.PeerData()); err != nil {
				s.Close()
				a.err = err
				ch <- a
				return
			}
			data := make([]byte, fabric.DescSize)
			r.Desc().Put(data)
			a.c, a.err = s.Establish(ctx, data)
			a.est = time.Now().UnixNano()
			ch <- a
		}()
		t0 := time.Now().UnixNano()
		s, err := fabric.Dial(ctx, addr, fabric.Options{})
		if err != nil {
			b.Fatal(err)
		}
		r, err := s.Alloc(size)
		if err != nil {
			b.Fatal(err)
		}
		tRegion := time.Now().UnixNano()
		data := make([]byte, fabric.DescSize)
		r.Desc().Put(data)
		c, err := s.Establish(ctx, data)
		if err != nil {
			b.Fatal(err)
		}
		tEst := time.Now().UnixNano()
		a := <-ch
		if a.err != nil {
			b.Fatal(a.err)
		}
		peer, err := fabric.ParseDesc(c.PeerData())
		if err != nil {
			b.Fatal(err)
		}
		ops := []fabric.Op{
			{Kind: fabric.OpWrite, ID: 1, Local: r, Len: 32, Remote: peer},
			{Kind: fabric.OpRead, ID: 2, Local: r, LocalOff: 64, Len: 32, Remote: peer, RemoteOff: 64},
		}
		if err := c.Post(ops); err != nil {
			b.Fatal(err)
		}
		for _, cp := range reap(b, c, 2, 2) {
			if cp.Err != nil {
				b.Fatal(cp.Err)
			}
		}
		tFirst := time.Now().UnixNano()
		c.Close()
		tClose := time.Now().UnixNano()
		a.c.Close()
		cancel()
		at := []int64{t0, stepAt[stepAddrResolved].Load(), stepAt[stepRouteResolved].Load(), stepAt[stepDialerVerbs].Load(), tRegion,
			stepAt[stepRequestIn].Load(), stepAt[stepAcceptorVerbs].Load(), a.accepted, a.alloc, tEst, tFirst, tClose}
		for k := range names {
			steps[k] = append(steps[k], float64(at[k+1]-at[k])/1e3)
		}
		total = append(total, float64(tClose-t0)/1e3)
	}
	b.StopTimer()
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	var sb strings.Builder
	for k, n := range names {
		fmt.Fprintf(&sb, "\n  %-24s %9.1f µs", n, med(steps[k]))
	}
	b.Logf("a join's steps, median of %d (each from the end of the one before; the acceptor's overlap the dialer's):%s", b.N, sb.String())
	b.ReportMetric(med(total), "join-µs")
}
