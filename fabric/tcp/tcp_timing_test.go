package tcp

import (
	"net"
	"testing"

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
