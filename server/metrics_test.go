package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jakiro-kv/jakiro/client"
)

func TestMetrics(t *testing.T) {
	srv, err := New(Config{Listen: "shm://" + filepath.Join(t.TempDir(), "m.sock"), Partitions: 2, Memory: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx)
	defer srv.Close()
	c, err := client.Dial(ctx, srv.Addr(), client.WithFabric(srv.cfg.Fabric))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Stats(ctx); err != nil { // one request per partition
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(srv.Collector())
	// Partitions publish their counters every publishEvery, when they get
	// to it: wait for both series rather than for a fixed time.
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := testutil.GatherAndCount(reg, "jakiro_requests_total")
		if err == nil && n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP jakiro_clients Connected clients.
# TYPE jakiro_clients gauge
jakiro_clients 1
`), "jakiro_clients"); err != nil {
		t.Fatal(err)
	}
	n, err := testutil.GatherAndCount(reg, "jakiro_requests_total")
	if err != nil || n != 2 {
		t.Fatalf("requests_total series: %d, %v", n, err)
	}
	// The join pool: DefaultJoinPool prepared, the client took one (the
	// listener makes the first before it listens).
	if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(`
# HELP jakiro_join_pool_size Connections the listener prepares before anyone dials (--join-pool).
# TYPE jakiro_join_pool_size gauge
jakiro_join_pool_size %d
# HELP jakiro_join_pool_taken_total Joins that took a prepared connection.
# TYPE jakiro_join_pool_taken_total counter
jakiro_join_pool_taken_total 1
# HELP jakiro_join_pool_missed_total Joins that found the pool empty and waited for their connection to be made.
# TYPE jakiro_join_pool_missed_total counter
jakiro_join_pool_missed_total 0
`, DefaultJoinPool)), "jakiro_join_pool_size", "jakiro_join_pool_taken_total", "jakiro_join_pool_missed_total"); err != nil {
		t.Fatal(err)
	}
}
