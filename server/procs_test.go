package server

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
)

// waitProcs waits until the process has n Ps.
func waitProcs(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.GOMAXPROCS(0) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", what, runtime.GOMAXPROCS(0), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A server with DoorProcs runs with one P per partition while no RFP
// client is connected, grows back before a client's first request is
// served, shrinks again once it left, and gives the Ps back at Close.
func TestDoorProcs(t *testing.T) {
	full := runtime.GOMAXPROCS(0)
	if full < 2 {
		t.Skipf("GOMAXPROCS is %d: there is nothing to shrink", full)
	}
	defer runtime.GOMAXPROCS(full)
	defer func(d time.Duration) { procsIdleAfter = d }(procsIdleAfter)
	procsIdleAfter = 20 * time.Millisecond
	addr := "shm://" + filepath.Join(t.TempDir(), "j.sock")
	srv, err := New(Config{Listen: addr, Partitions: 1, Memory: 8 << 20, DoorProcs: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go srv.Serve(ctx)
	waitProcs(t, 1, "no client yet")
	c, err := client.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if n := runtime.GOMAXPROCS(0); n != full {
		t.Fatalf("GOMAXPROCS %d with a client connected, want %d", n, full)
	}
	if err := c.Put(ctx, []byte("k"), []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * procsIdleAfter)
	if n := runtime.GOMAXPROCS(0); n != full {
		t.Fatalf("GOMAXPROCS %d while the client stays, want %d", n, full)
	}
	c.Close()
	waitProcs(t, 1, "after the client left")
	srv.Close()
	if n := runtime.GOMAXPROCS(0); n != full {
		t.Fatalf("GOMAXPROCS %d after Close, want %d", n, full)
	}
	// Without DoorProcs nothing changes.
	srv, err = New(Config{Listen: addr, Partitions: 1, Memory: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * procsIdleAfter)
	if n := runtime.GOMAXPROCS(0); n != full {
		t.Fatalf("GOMAXPROCS %d without DoorProcs, want %d", n, full)
	}
	srv.Close()
}
