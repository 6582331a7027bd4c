package fabrictest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
)

// BenchOps is the raw fabric benchmark every provider runs (paper Fig. 1):
// 32-byte READs and WRITEs against a target listening at addr, for each
// number of initiator goroutines and window, reporting Mops.
func BenchOps(b *testing.B, addr string, initiators, windows []int) {
	for _, kind := range []fabric.OpKind{fabric.OpRead, fabric.OpWrite} {
		for _, ini := range initiators {
			for _, win := range windows {
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
