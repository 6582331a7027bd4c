package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/server"
)

// TestOwnClientsShareGroups: many Clients of one process, each used by
// one goroutine, are driven together in the process's poll groups; with
// callers giving up mid-wait, every answer reaches its own caller.
func TestOwnClientsShareGroups(t *testing.T) {
	for _, fab := range []string{"shm", "tcp"} {
		t.Run(fab, func(t *testing.T) {
			addr := startServer(t, fab)
			var wg sync.WaitGroup
			for g := range 24 {
				c := dial(t, addr, client.WithConns(1))
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := []byte(fmt.Sprintf("own-%d", g))
					for i := range 60 {
						val := []byte(fmt.Sprintf("%d/%d", g, i))
						if err := c.Put(context.Background(), key, val, 0); err != nil {
							t.Error(err)
							return
						}
						ctx, cancel := context.Background(), context.CancelFunc(func() {})
						if i%5 == 2 {
							ctx, cancel = context.WithTimeout(ctx, time.Duration(i%4)*10*time.Microsecond)
						}
						got, err := c.Get(ctx, key)
						cancel()
						switch {
						case errors.Is(err, context.DeadlineExceeded):
						case err != nil:
							t.Errorf("client %d: %v", g, err)
							return
						case !bytes.Equal(got, val):
							t.Errorf("client %d got %q, want %q", g, got, val)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// TestBatchAbandonedThenReused: a batch whose context ends mid-run gives
// its operations up to the driver and takes fresh memory, so running it
// again, while other goroutines share the client, returns its own
// answers.
func TestBatchAbandonedThenReused(t *testing.T) {
	c := dial(t, startServer(t, "shm"), client.WithWindow(2))
	ctx := context.Background()
	for i := range 16 {
		if err := c.Put(ctx, []byte(fmt.Sprintf("b-%d", i)), []byte(fmt.Sprintf("v-%d", i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 { // neighbours keep the ring busy
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Get(ctx, []byte("b-0")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var b client.Batch
	abandoned, whole := 0, 0
	for round := range 200 {
		b.Reset()
		for i := range 16 {
			b.Get([]byte(fmt.Sprintf("b-%d", i)))
		}
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if round%2 == 1 { // every other batch gives up at once or soon
			rctx, cancel = context.WithTimeout(ctx, time.Duration(round%5)*15*time.Microsecond)
		}
		err := c.Run(rctx, &b)
		cancel()
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatal(err)
			}
			abandoned++
			continue
		}
		whole++
		for i := range 16 {
			if v, err := b.Result(i); err != nil || string(v) != fmt.Sprintf("v-%d", i) {
				t.Fatalf("round %d op %d: %q, %v", round, i, v, err)
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d batches whole, %d abandoned", whole, abandoned)
	if whole < 100 || abandoned == 0 {
		t.Fatalf("%d batches whole, %d abandoned: want every other one whole, and some given up", whole, abandoned)
	}
}

// TestLanes: a Client used by goroutines on several Ps dials more
// connections (lanes) as they first need them, up to WithConns; a lane
// the server refuses leaves its callers on the first connection, with no
// error.
func TestLanes(t *testing.T) {
	// Lanes are picked per P: with one P every caller takes the same.
	if n := runtime.GOMAXPROCS(0); n < 2 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(n)
	}
	for _, maxClients := range []int{16, 1} {
		t.Run(fmt.Sprintf("max-clients-%d", maxClients), func(t *testing.T) {
			srv, err := server.New(server.Config{Listen: "shm://" + filepath.Join(t.TempDir(), "s.sock"), Partitions: 1,
				Memory: 64 << 20, MaxValue: 4 << 10, MaxClients: maxClients})
			if err != nil {
				t.Fatal(err)
			}
			sctx, scancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); srv.Serve(sctx) }()
			defer func() { scancel(); srv.Close(); <-done }()
			c := dial(t, srv.Addr(), client.WithConns(4))
			ctx := context.Background()
			if err := c.Put(ctx, []byte("lane"), []byte("v"), 0); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for first := true; first || time.Now().Before(deadline) && srv.Clients() < min(2, maxClients); first = false {
				var wg sync.WaitGroup
				for range 4 * runtime.GOMAXPROCS(0) {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range 200 {
							if v, err := c.Get(ctx, []byte("lane")); err != nil || string(v) != "v" {
								t.Errorf("%q, %v", v, err)
								return
							}
						}
					}()
				}
				wg.Wait()
			}
			if got, want := srv.Clients(), min(2, maxClients); got < want {
				t.Fatalf("%d connections after concurrent callers, want at least %d", got, want)
			}
			if n := c.Counters().Ops; n < 200 {
				t.Fatalf("counters over the lanes: %d ops", n)
			}
		})
	}
}
