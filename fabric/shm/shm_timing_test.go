package shm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
	"github.com/jakiro-kv/jakiro/fabric/fabrictest"
)

// BenchmarkFabric measures raw one-sided throughput: 32-byte READs and
// WRITEs from 1, 2 and 4 initiator goroutines (one connection each) with
// 1, 8 and 32 ops in flight. The target is a separate process that only
// accepts: one-sided ops need no target CPU. Mops is the figure of merit;
// ns/op includes connection setup.
func BenchmarkFabric(b *testing.B) {
	dir, err := os.MkdirTemp("", "jkshm-bench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	addr := "shm://" + filepath.Join(dir, "s.sock")
	srv, err := fabricbench.StartServer(addr, 1<<20, "-test.run=^$", "-test.bench=^$")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	fabrictest.BenchOps(b, addr, []int{1, 2, 4}, []int{1, 8, 32})
}

// BenchmarkPostPoll is the CPU cost of one 32-byte READ through Post and
// Poll (batches of 8, target in this process), without goroutine
// scheduling: ns/op is per operation.
func BenchmarkPostPoll(b *testing.B) {
	dir, err := os.MkdirTemp("", "jkshm-bench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := fabric.Listen("shm://"+filepath.Join(dir, "s.sock"), fabric.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go fabricbench.Serve(ln, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := fabric.Dial(ctx, ln.Addr(), fabric.Options{})
	if err != nil {
		b.Fatal(err)
	}
	local, err := s.Alloc(4096)
	if err != nil {
		b.Fatal(err)
	}
	c, err := s.Establish(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	remote, err := fabric.ParseDesc(c.PeerData())
	if err != nil {
		b.Fatal(err)
	}
	const batch = 8
	ops := make([]fabric.Op, batch)
	for i := range ops {
		ops[i] = fabric.Op{Kind: fabric.OpRead, ID: uint64(i), Local: local, LocalOff: 32 * i, Len: 32, Remote: remote, RemoteOff: uint64(32 * i)}
	}
	cs := make([]fabric.Completion, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		if err := c.Post(ops); err != nil {
			b.Fatal(err)
		}
		if n, err := c.Poll(cs); n != batch || err != nil {
			b.Fatalf("Poll: %d, %v", n, err)
		}
	}
}
