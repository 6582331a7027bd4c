package client_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jakiro-kv/jakiro/client"
	_ "github.com/jakiro-kv/jakiro/fabric/providers" // the fabrics the tests dial
	"github.com/jakiro-kv/jakiro/server"
)

// startServer runs a one-partition server in this process on fab (shm or
// tcp, loopback) until the test ends.
func startServer(tb testing.TB, fab string) string {
	tb.Helper()
	return startServerWith(tb, fab, server.Config{})
}

// startServerWith is startServer with cfg's other settings.
func startServerWith(tb testing.TB, fab string, cfg server.Config) string {
	tb.Helper()
	cfg.Listen = "shm://" + filepath.Join(tb.TempDir(), "jakiro.sock")
	if fab == "tcp" {
		cfg.Listen = "tcp://127.0.0.1:0"
	}
	cfg.Partitions, cfg.Memory, cfg.MaxValue = 1, 64<<20, 64<<10
	srv, err := server.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx) }()
	tb.Cleanup(func() { cancel(); srv.Close(); <-done })
	return srv.Addr()
}

func dial(tb testing.TB, addr string, opts ...client.Option) *client.Client {
	tb.Helper()
	c, err := client.Dial(context.Background(), addr, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// TestHotPathAllocs: once warm, GetTo into a buffer that fits, Put, and a
// reused Batch allocate nothing, in every mode.
func TestHotPathAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector; run without -race")
	}
	addr := startServer(t, "shm")
	ctx := context.Background()
	for _, m := range []client.Mode{client.ModeRFP, client.ModeReply, client.ModeHybrid} {
		t.Run(m.String(), func(t *testing.T) {
			c := dial(t, addr, client.WithMode(m))
			key, val := []byte("alloc-key"), make([]byte, 100)
			dst := make([]byte, 0, 128)
			var b client.Batch
			run := func() {
				if err := c.Put(ctx, key, val, 0); err != nil {
					t.Fatal(err)
				}
				var err error
				if dst, err = c.GetTo(ctx, key, dst[:0]); err != nil || len(dst) != len(val) {
					t.Fatalf("GetTo: %d bytes, %v", len(dst), err)
				}
				b.Reset()
				for i := 0; i < 8; i++ {
					b.Get(key)
				}
				if err := c.Run(ctx, &b); err != nil {
					t.Fatal(err)
				}
			}
			run() // warm: free lists, batch and value buffers
			if n := testing.AllocsPerRun(100, run); n != 0 {
				t.Fatalf("%v allocations per Put+GetTo+Batch(8)", n)
			}
		})
	}
}

// BenchmarkGetSizes: GETs of one value size, pipelined (a Batch over the
// default window) and one at a time, against an in-process server.
// Reports Mops, fabric ops and doorbell rings per GET (the bar: rings
// stay near 0 at steady load whatever the size).
func BenchmarkGetSizes(b *testing.B) {
	for _, fab := range []string{"shm", "tcp"} {
		b.Run(fab, func(b *testing.B) {
			addr := startServer(b, fab)
			for _, size := range []int{32, 1 << 10, 16 << 10, 60 << 10} {
				for _, window := range []int{1, 8} {
					b.Run(fmt.Sprintf("%dB/window%d", size, window), func(b *testing.B) {
						benchGetSize(b, addr, size, window)
					})
				}
			}
		})
	}
}

func benchGetSize(b *testing.B, addr string, size, window int) {
	ctx := context.Background()
	c := dial(b, addr)
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("size-%d-%d", size, i))
		if err := c.Put(ctx, keys[i], make([]byte, size), 0); err != nil {
			b.Fatal(err)
		}
	}
	dst := make([]byte, 0, size)
	var batch client.Batch
	before := c.Counters()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		if window == 1 {
			var err error
			if dst, err = c.GetTo(ctx, keys[i%len(keys)], dst[:0]); err != nil {
				b.Fatal(err)
			}
			i++
			continue
		}
		batch.Reset()
		for j := 0; j < 4*window && i < b.N; j++ {
			batch.Get(keys[i%len(keys)])
			i++
		}
		if err := c.Run(ctx, &batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	d := c.Counters().Sub(before)
	b.ReportMetric(float64(d.Ops)/b.Elapsed().Seconds()/1e6, "Mops")
	b.ReportMetric(d.FabricOpsPerOp(), "fabricops/op")
	b.ReportMetric(d.RingsPerOp(), "rings/op")
}

// By default (auto) a client fetches on shm (READs cost the server
// nothing) and on tcp (a READ costs the server a message) starts with
// replies, keeping them until a probe of fetching (after 256 requests)
// says otherwise (rfp/policy_test.go covers that choice).
func TestDefaultModePerFabric(t *testing.T) {
	ctx := context.Background()
	for _, fab := range []string{"shm", "tcp"} {
		c := dial(t, startServer(t, fab))
		if err := c.Put(ctx, []byte("k"), []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
		n := 200
		if fab == "shm" {
			n = 600 // past hybrid's first probes: none on shm
		}
		for i := 0; i < n; i++ {
			if _, err := c.Get(ctx, []byte("k")); err != nil {
				t.Fatal(err)
			}
		}
		replied := c.Counters().Replied
		if fab == "shm" && replied != 0 {
			t.Errorf("shm: %d of the first 601 requests replied by default, want fetching only", replied)
		}
		if fab == "tcp" && replied < 190 {
			t.Errorf("tcp: %d of the first 201 requests replied by default, want nearly all", replied)
		}
	}
}
