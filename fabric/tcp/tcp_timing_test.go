package tcp

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"

	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
	"github.com/jakiro-kv/jakiro/fabric/fabrictest"
)

// BenchmarkFabric measures raw one-sided throughput over loopback: 32-byte
// READs and WRITEs from 1 and 2 initiator goroutines (one connection each)
// with 1, 8 and 32 ops in flight, against a target in another process (as
// deployed: its NIC threads do not share the initiator's Ps). Mops is the
// figure of merit; ns/op includes connection setup.
func BenchmarkFabric(b *testing.B) {
	addr, srv := startTarget(b)
	defer srv.Stop()
	fabrictest.BenchOps(b, addr, []int{1, 2}, []int{1, 8, 32})
}

// startTarget runs a fabricbench target in a child process. The child is
// told its address up front, so pick a free port first; another process
// may take it in between, hence the retries.
func startTarget(b *testing.B) (string, *fabricbench.Server) {
	var err error
	for range 3 {
		var l net.Listener
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			b.Fatal(err)
		}
		addr := "tcp://" + l.Addr().String()
		l.Close()
		var srv *fabricbench.Server
		if srv, err = fabricbench.StartServer(addr, 1<<20, "-test.run=^$", "-test.bench=^$"); err == nil {
			return addr, srv
		}
	}
	b.Fatal(err)
	return "", nil
}

// BenchmarkIdleConnections holds 3,000 and then 10,000 idle connections
// to a target process and reports the target's OS threads and the rate of
// one active initiator (READ, window 8) beside them, against its rate
// before they connected (idle-ratio; 1 is no cost).
func BenchmarkIdleConnections(b *testing.B) {
	addr, srv := startTarget(b)
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	active := func() float64 {
		res, err := fabricbench.Run(ctx, addr, fabric.OpRead, 1, 8, 32, 500*time.Millisecond)
		if err != nil {
			b.Fatal(err)
		}
		return res.Mops
	}
	base := active()
	var idle []fabric.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for _, n := range []int{3000, 10000} {
		b.Run(fmt.Sprintf("idle=%d", n), func(b *testing.B) {
			for len(idle) < n {
				s, err := fabric.Dial(ctx, addr, fabric.Options{QueueDepth: 4})
				if err != nil {
					b.Fatalf("dial %d: %v", len(idle), err)
				}
				c, err := s.Establish(ctx, nil)
				if err != nil {
					b.Fatalf("establish %d: %v", len(idle), err)
				}
				idle = append(idle, c)
			}
			for range b.N {
				rate := active()
				b.ReportMetric(rate, "Mops")
				b.ReportMetric(rate/base, "idle-ratio")
			}
			b.ReportMetric(float64(procThreads(b, srv.Pid())), "target-threads")
			for _, c := range idle {
				if c.Err() != nil {
					b.Fatalf("an idle connection died: %v", c.Err())
				}
			}
		})
	}
}

// procThreads is a process's OS thread count.
func procThreads(b *testing.B, pid int) int {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skip("no /proc to count threads:", err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}
