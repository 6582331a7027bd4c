package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jakiro-kv/jakiro/rfp"
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
	in, err := rfp.Dial(ctx, srv.Addr(), rfp.InitiatorConfig{FetchDelayNS: -1}, srv.cfg.Fabric)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for i := 0; i < 2; i++ { // one PUT per partition
		if _, err := in.Submit(i, rfp.OpStats, nil, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]rfp.Result, 8)
	for got := 0; got < 2; {
		n, err := in.Progress(out)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	time.Sleep(time.Duration(3 * publishEvery / 2)) // let partitions publish
	reg := prometheus.NewRegistry()
	reg.MustRegister(srv.Collector())
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
}
