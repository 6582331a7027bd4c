package tcp

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
)

// BenchmarkFabric measures raw one-sided throughput over loopback: 32-byte
// READs and WRITEs from 1 and 2 initiator goroutines (one connection each)
// with 1, 8 and 32 ops in flight, against a target in another process (as
// deployed: its NIC threads do not share the initiator's Ps). Mops is the
// figure of merit; ns/op includes connection setup.
func BenchmarkFabric(b *testing.B) {
	addr, srv := startTarget(b)
	defer srv.Stop()
	for _, kind := range []fabric.OpKind{fabric.OpRead, fabric.OpWrite} {
		for _, ini := range []int{1, 2} {
			for _, win := range []int{1, 8, 32} {
				b.Run(fmt.Sprintf("%v/init=%d/window=%d", kind, ini, win), func(b *testing.B) {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					res, err := fabricbench.RunN(ctx, addr, kind, ini, win, 32, uint64(b.N))
					if err != nil {
						b.Fatal(err)
					}
					if res.Ops != uint64(b.N) {
						b.Fatalf("%d ops done, want %d", res.Ops, b.N)
					}
					b.ReportMetric(res.Mops, "Mops")
				})
			}
		}
	}
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
