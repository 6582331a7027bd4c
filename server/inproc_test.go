package server

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jakiro-kv/jakiro/client"
)

// serveInProcess starts a server on shm in this process with the given
// partitions and one client of it; both end with the test.
func serveInProcess(t *testing.T, partitions int) (context.Context, *Server, *client.Client) {
	t.Helper()
	srv, err := New(Config{Listen: "shm://" + filepath.Join(t.TempDir(), fmt.Sprintf("p%d.sock", partitions)), Partitions: partitions, Memory: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go srv.Serve(ctx)
	t.Cleanup(func() { srv.Close() })
	c, err := client.Dial(ctx, srv.Addr(), client.WithFabric(srv.cfg.Fabric))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ctx, srv, c
}
