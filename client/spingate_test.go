package client

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSpinGate: never more spinners than the limit; parked waiters all
// get their turn; a waiter whose context ends while parked leaves no
// place taken.
func TestSpinGate(t *testing.T) {
	var g spinGate
	limit := spinLimit()
	var in, most atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 4*limit+3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if err := g.enter(context.Background()); err != nil {
					t.Error(err)
					return
				}
				n := in.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(10 * time.Microsecond)
				in.Add(-1)
				g.leave()
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m > int32(limit) {
		t.Fatalf("%d spinners at once, limit %d", m, limit)
	}

	// Fill every place, then park a waiter whose context ends.
	for range limit {
		if err := g.enter(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.enter(ctx); err == nil {
		t.Fatal("enter past the limit returned without its context ending")
	}
	for range limit {
		g.leave()
	}
	g.mu.Lock()
	holders, parked := g.holders, len(g.queue)
	g.mu.Unlock()
	if holders != 0 || parked != 0 || g.queued() {
		t.Fatalf("after everyone left: %d holders, %d parked", holders, parked)
	}
}
