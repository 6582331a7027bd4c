package server

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Serve's context watcher and the owner both close the server when a
// signal ends Serve: Close must be safe to call concurrently, and every
// caller must return only after the shutdown is complete.
func TestCloseConcurrent(t *testing.T) {
	for i := 0; i < 20; i++ {
		srv, err := New(Config{Listen: "shm://" + filepath.Join(t.TempDir(), "c.sock"), Partitions: 2, Memory: 16 << 20})
		if err != nil {
			t.Fatal(err)
		}
		// This test is about Close's ordering, not the bound on a stuck
		// partition: a loaded machine may hold a goroutine off a core for
		// longer than that bound.
		srv.stuckWait = time.Minute
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx) }()
		var wg sync.WaitGroup
		for j := 0; j < 3; j++ {
			wg.Add(1)
			go func() { defer wg.Done(); srv.Close() }()
		}
		cancel()
		wg.Wait()
		if err := srv.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := <-served; err != nil {
			t.Fatalf("Serve after Close: %v", err)
		}
		for _, p := range srv.parts {
			if !p.stopped.Load() {
				t.Fatal("Close returned with a partition still running")
			}
		}
	}
}
