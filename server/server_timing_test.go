package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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

// BenchmarkIdleWakeup: one GET at a time against a server whose partitions
// have gone idle (blocked on their doorbells, or dozing where the fabric
// has none), then the same GET warm. Reports the idle and warm latencies:
// the difference is the wake-up cost a client pays after a quiet spell.
func BenchmarkIdleWakeup(b *testing.B) {
	for _, fab := range e2eFabrics() {
		b.Run(fab, func(b *testing.B) {
			srv := startServerB(b, fab)
			ctx := context.Background()
			c, err := client.Dial(ctx, srv.addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			key := []byte("wakeup-key-00001")
			if err := c.Put(ctx, key, make([]byte, 32), 0); err != nil {
				b.Fatal(err)
			}
			var idle, warm time.Duration
			var dst []byte
			for i := 0; i < b.N; i++ {
				time.Sleep(2 * time.Millisecond) // > the server's 200µs spin
				t0 := time.Now()
				if dst, err = c.GetTo(ctx, key, dst[:0]); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if dst, err = c.GetTo(ctx, key, dst[:0]); err != nil {
					b.Fatal(err)
				}
				idle += t1.Sub(t0)
				warm += time.Since(t1)
			}
			b.ReportMetric(float64(idle.Microseconds())/float64(b.N), "idle-µs/get")
			b.ReportMetric(float64(warm.Microseconds())/float64(b.N), "warm-µs/get")
			b.ReportMetric(float64(c.Counters().Rings)/float64(b.N), "rings/idle-get")
		})
	}
}
