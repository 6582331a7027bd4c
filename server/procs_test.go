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

// shrinkable skips a test where GOMAXPROCS is 1, sets procsIdleAfter to
// idle for it, and restores both after it; it returns the process's Ps.
func shrinkable(t *testing.T, idle time.Duration) int {
	full := runtime.GOMAXPROCS(0)
	if full < 2 {
		t.Skipf("GOMAXPROCS is %d: there is nothing to shrink", full)
	}
	saved := procsIdleAfter
	procsIdleAfter = idle
	t.Cleanup(func() {
		procsIdleAfter = saved
		runtime.GOMAXPROCS(full)
	})
	return full
}

// A server with DoorProcs runs with one P per partition while no RFP
// client is connected, grows back before a client's first request is
// served, shrinks again once it left, and gives the Ps back at Close.
func TestDoorProcs(t *testing.T) {
	full := shrinkable(t, 20*time.Millisecond)
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

// A timer stopped after it fired (its shrink waiting for the lock while a
// client came and went) is stale: only the newest one shrinks, on time.
func TestProcsStaleTimer(t *testing.T) {
	full := shrinkable(t, time.Hour)
	p := newProcs(true, 1)
	p.start()
	stale := p.armed
	p.connected()
	p.gone(1)
	p.shrink(stale) // the first timer's late run
	if n := runtime.GOMAXPROCS(0); n != full || p.shrunk {
		t.Fatalf("a stale timer shrank the Ps to %d", n)
	}
	p.shrink(p.armed)
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("the armed timer left GOMAXPROCS at %d, want 1", n)
	}
	p.close()
	if n := runtime.GOMAXPROCS(0); n != full {
		t.Fatalf("GOMAXPROCS %d after close, want %d", n, full)
	}
}
