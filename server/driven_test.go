package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jakiro-kv/jakiro/fabric/shm"
)

// drivenServer starts a one-partition shm server whose partition
// goroutine never runs: the test drives its passes itself, over real
// sessions. The context bounds the test's dials.
func drivenServer(t *testing.T) (*Server, *partition, context.Context) {
	t.Helper()
	srv, err := build(Config{Listen: "shm://" + filepath.Join(t.TempDir(), "d.sock"), Partitions: 1, Memory: 16 << 20, MaxValue: 1024})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	go srv.Serve(ctx)
	p := srv.parts[0]
	t.Cleanup(func() {
		p.stopped.Store(true) // for Close: this partition never ran
		srv.Close()
		cancel()
	})
	return srv, p, ctx
}

// listed waits until the server lists n clients: Dial returns when the
// handshake ends, and the server publishes the client just after.
func listed(t *testing.T, srv *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(*srv.list.Load()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d clients listed after 30s, want %d", len(*srv.list.Load()), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
