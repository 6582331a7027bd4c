package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
)

// TestSharedClient: many goroutines on one connection (more than its
// window, so requests queue for slots), some giving up mid-wait: every
// answer reaches its own caller, and the connection keeps serving after.
func TestSharedClient(t *testing.T) {
	for _, fab := range []string{"shm", "tcp"} {
		t.Run(fab, func(t *testing.T) {
			c := dial(t, startServer(t, fab), client.WithWindow(4))
			var wg sync.WaitGroup
			var served, gaveUp sync.Map
			for g := range 48 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := []byte(fmt.Sprintf("shared-%d", g))
					for i := range 40 {
						val := []byte(fmt.Sprintf("%d/%d", g, i))
						if err := c.Put(context.Background(), key, val, 0); err != nil {
							t.Error(err)
							return
						}
						ctx, cancel := context.Background(), context.CancelFunc(func() {})
						if i%7 == 3 { // some give up at once or soon
							ctx, cancel = context.WithTimeout(ctx, time.Duration(i%3)*20*time.Microsecond)
						}
						got, err := c.Get(ctx, key)
						cancel()
						switch {
						case errors.Is(err, context.DeadlineExceeded):
							gaveUp.Store(g*100+i, true)
						case err != nil:
							t.Errorf("goroutine %d: %v", g, err)
							return
						case !bytes.Equal(got, val):
							t.Errorf("goroutine %d got %q, want %q", g, got, val)
							return
						default:
							served.Store(g*100+i, true)
						}
					}
				}()
			}
			wg.Wait()
			n, m := 0, 0
			served.Range(func(any, any) bool { n++; return true })
			gaveUp.Range(func(any, any) bool { m++; return true })
			t.Logf("%d answered, %d gave up", n, m)
			if n == 0 {
				t.Fatal("nothing answered")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := c.Get(ctx, []byte("shared-0")); err != nil {
				t.Fatalf("after: %v", err)
			}
		})
	}
}

// TestCloseWakesSharers: Close ends every caller sharing the connection,
// spinning or parked, with an error, and none touches the connection's
// memory after Close unmapped it (a caller that had waited for a free
// slot once wrote its request there: SIGSEGV).
func TestCloseWakesSharers(t *testing.T) {
	addr := startServer(t, "shm")
	for round := range 10 {
		c, err := client.Dial(context.Background(), addr, client.WithWindow(2))
		if err != nil {
			t.Fatal(err)
		}
		const callers = 32
		errs := make(chan error, callers)
		started := make(chan struct{}, callers)
		for g := range callers {
			go func() {
				key := []byte(fmt.Sprintf("close-%d", g))
				started <- struct{}{}
				for {
					if _, err := c.Get(context.Background(), key); err != nil && !errors.Is(err, client.ErrNotFound) {
						errs <- err
						return
					}
				}
			}()
		}
		for range callers {
			<-started
		}
		time.Sleep(time.Duration(round) * time.Millisecond)
		c.Close()
		deadline := time.After(10 * time.Second)
		for range callers {
			select {
			case err := <-errs:
				if !errors.Is(err, client.ErrClosed) && !errors.Is(err, client.ErrConnLost) {
					t.Errorf("after Close: %v", err)
				}
			case <-deadline:
				t.Fatal("a caller still waits 10 s after Close")
			}
		}
	}
}

// TestGatherBounded: on tcp the driver holds new calls while callers it
// answered together have not called again; callers that went away instead
// hold the others up for a moment only (gatherNS), never for good.
func TestGatherBounded(t *testing.T) {
	c := dial(t, startServer(t, "tcp"))
	key := []byte("gather")
	if err := c.Put(context.Background(), key, []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	get := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.Get(ctx, key)
		return err
	}
	for round := range 200 {
		// Eight callers at once, answered together, then gone: the calls
		// after them wait for callers that never call again.
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- get() }()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		for i := range 3 {
			if err := get(); err != nil {
				t.Fatalf("round %d, a caller after them, call %d: %v", round, i, err)
			}
		}
	}
}

// BenchmarkSharedGet: GETs from many goroutines over one Client, against
// an in-process server (the shape of an application with one client and
// a goroutine per request). On tcp, fabricops/op shows the driver
// gathering the calls of callers answered together into one post.
func BenchmarkSharedGet(b *testing.B) {
	for _, bc := range []struct {
		fab        string
		goroutines int
	}{{"shm", 4}, {"shm", 64}, {"shm", 1024}, {"tcp", 4}, {"tcp", 64}} {
		goroutines := bc.goroutines
		b.Run(fmt.Sprintf("%s/goroutines%d", bc.fab, goroutines), func(b *testing.B) {
			c := dial(b, startServer(b, bc.fab))
			ctx := context.Background()
			key := []byte("shared-bench")
			if err := c.Put(ctx, key, make([]byte, 32), 0); err != nil {
				b.Fatal(err)
			}
			before := c.Counters()
			b.ResetTimer()
			var wg sync.WaitGroup
			per := max(1, b.N/goroutines)
			for range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					dst := make([]byte, 0, 32)
					for range per {
						var err error
						if dst, err = c.GetTo(ctx, key, dst[:0]); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			d := c.Counters().Sub(before)
			b.ReportMetric(float64(d.Ops)/b.Elapsed().Seconds()/1e6, "Mops")
			b.ReportMetric(d.FabricOpsPerOp(), "fabricops/op")
		})
	}
}

// TestSharedClientCrowd: more goroutines on one Client than its queues
// serve oldest first (callqueue.go: the newest single calls go first
// past 512 queued), with batches among them. Every caller gets its own
// answers, each batch keeps its order (a PUT then a GET of one key in
// one batch reads the PUT), a caller whose context ends while its call
// waits among the crowd's is woken (and gives up), and no caller is left
// behind: all finish.
func TestSharedClientCrowd(t *testing.T) {
	c := dial(t, startServer(t, "shm"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const callers, rounds = 1100, 30
	var wg sync.WaitGroup
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []byte(fmt.Sprintf("crowd-%d", g))
			var b client.Batch
			for i := range rounds {
				val := []byte(fmt.Sprintf("%d/%d", g, i))
				if g%10 == 0 { // a batch: PUT then GET, in order
					b.Reset()
					b.Put(key, val, 0)
					get := b.Get(key)
					if err := c.Run(ctx, &b); err != nil {
						t.Errorf("caller %d: batch: %v", g, err)
						return
					}
					if got, err := b.Result(get); err != nil || !bytes.Equal(got, val) {
						t.Errorf("caller %d: batch GET after its PUT: %q, %v; want %q", g, got, err, val)
						return
					}
					continue
				}
				if err := c.Put(ctx, key, val, 0); err != nil {
					t.Errorf("caller %d: %v", g, err)
					return
				}
				if g%10 == 5 { // a deadline that may end in the queue: its caller is woken
					dctx, cancel := context.WithTimeout(ctx, 200*time.Microsecond)
					start := time.Now()
					got, err := c.Get(dctx, key)
					cancel()
					switch {
					case errors.Is(err, context.DeadlineExceeded):
						if d := time.Since(start); d > time.Second {
							t.Errorf("caller %d: a GET whose context ended returned after %v", g, d)
							return
						}
					case err != nil || !bytes.Equal(got, val):
						t.Errorf("caller %d: GET %q, %v; want %q", g, got, err, val)
						return
					}
					continue
				}
				if got, err := c.Get(ctx, key); err != nil || !bytes.Equal(got, val) {
					t.Errorf("caller %d: GET %q, %v; want %q", g, got, err, val)
					return
				}
			}
		}()
	}
	wg.Wait()
}
