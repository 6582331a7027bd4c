//go:build rdma

package verbs

import (
	"fmt"
	"testing"

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
