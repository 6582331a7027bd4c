package shm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
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
	for _, kind := range []fabric.OpKind{fabric.OpRead, fabric.OpWrite} {
		for _, ini := range []int{1, 2, 4} {
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
