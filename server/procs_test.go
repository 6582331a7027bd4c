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

// shrinkable gives the test process at least 2 Ps (Ps are not cores:
// a 1-P process has nothing to shrink, so the test makes it 2), sets
// procsIdleAfter to idle, and restores both after the test; it returns
// the Ps the test runs with.
func shrinkable(t *testing.T, idle time.Duration) int {
	t.Setenv("GOMAXPROCS", "") // a GOMAXPROCS of the environment is kept (TestProcsKeepsEnv)
	saved, savedIdle := runtime.GOMAXPROCS(0), procsIdleAfter
	full := max(2, saved)
	runtime.GOMAXPROCS(full)
	procsIdleAfter = idle
	t.Cleanup(func() {
		procsIdleAfter = savedIdle
		runtime.GOMAXPROCS(saved)
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
	// The Ps grow as the server publishes the client, which may be just
	// after the client's Dial returned: before its first request is
	// served, as no partition sees it earlier.
	if err := c.Put(ctx, []byte("k"), []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if n := runtime.GOMAXPROCS(0); n != full {
		t.Fatalf("GOMAXPROCS %d once a client's request was served, want %d", n, full)
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

// A GOMAXPROCS the user set in the environment is theirs: DoorProcs
// leaves it.
func TestProcsKeepsEnv(t *testing.T) {
	shrinkable(t, time.Hour)
	t.Setenv("GOMAXPROCS", "2")
	if p := newProcs(true, 1); p.on {
		t.Fatal("DoorProcs on with GOMAXPROCS set in the environment")
	}
	t.Setenv("GOMAXPROCS", "")
	if p := newProcs(true, 1); !p.on {
		t.Fatal("DoorProcs off without GOMAXPROCS in the environment")
	}
}

// A server with SpareProcs over tcp has a P beyond its partitions and
// the fabric's pollers (which wait in epoll_wait holding theirs); over
// shm (no such goroutine) one beyond its partitions. It never lowers
// GOMAXPROCS, and keeps one set in the environment.
func TestSpareProcs(t *testing.T) {
	saved := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(saved) })
	t.Setenv("GOMAXPROCS", "")
	for _, tc := range []struct{ listen, want string }{
		{"tcp://127.0.0.1:0", "tcp"},
		{"shm://" + filepath.Join(t.TempDir(), "p.sock"), "shm"},
	} {
		runtime.GOMAXPROCS(1)
		srv, err := build(Config{Listen: tc.listen, Partitions: 1, Memory: 16 << 20, MaxValue: 1024, SpareProcs: true})
		if err != nil {
			t.Fatal(err)
		}
		waiters := srv.ln.SyscallWaiters()
		if tc.want == "tcp" && waiters < 1 || tc.want == "shm" && waiters != 0 {
			t.Errorf("%s: %d goroutines in system calls reported", tc.want, waiters)
		}
		if got, want := runtime.GOMAXPROCS(0), 1+waiters+1; got != want {
			t.Errorf("%s: GOMAXPROCS %d, want %d (1 partition, %d pollers, 1 spare)", tc.want, got, want, waiters)
		}
		srv.parts[0].stopped.Store(true) // never ran
		srv.Close()
	}
	runtime.GOMAXPROCS(64)
	spareProcs(3)
	if got := runtime.GOMAXPROCS(0); got != 64 {
		t.Errorf("spareProcs lowered GOMAXPROCS 64 to %d", got)
	}
	t.Setenv("GOMAXPROCS", "1")
	runtime.GOMAXPROCS(1)
	spareProcs(3)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("spareProcs changed GOMAXPROCS=1 of the environment to %d", got)
	}
}
