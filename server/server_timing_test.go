package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/rfp"
)

// BenchmarkGet: pipelined GETs of 16 B keys / 32 B values, uniform, from
// one client with window 8 per partition, against a server process.
// Reports Mops and fabric operations per GET.
func BenchmarkGet(b *testing.B) {
	for _, fab := range e2eFabrics() {
		b.Run(fab, func(b *testing.B) {
			srv := startServerB(b, fab)
			for _, m := range modes {
				b.Run(m.String(), func(b *testing.B) { benchGets(b, srv.addr, m) })
			}
		})
	}
}

func benchGets(b *testing.B, addr string, m rfp.Mode) {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.WithMode(m), client.WithWindow(8))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const nkeys = 100000
	keys := make([][]byte, nkeys)
	var batch client.Batch
	val := make([]byte, 32)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key%013d", i)) // 16 B
		batch.Put(keys[i], val, 0)
		if batch.Len() == 256 || i == nkeys-1 {
			if err := c.Run(ctx, &batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	before := c.Counters()
	b.ResetTimer()
	per := 8 * c.Partitions()
	for i := 0; i < b.N; i += per {
		batch.Reset()
		for j := 0; j < per; j++ {
			batch.Get(keys[(i+j)*7919%nkeys])
		}
		if err := c.Run(ctx, &batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	d := c.Counters().Sub(before)
	b.ReportMetric(float64(d.Ops)/b.Elapsed().Seconds()/1e6, "Mops")
	b.ReportMetric(d.FabricOpsPerOp(), "fabricops/op")
	b.ReportMetric(float64(d.NotReady)/float64(d.Ops), "retries/op")
}
