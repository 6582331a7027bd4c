package client

import (
	"context"
	"slices"
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
				if _, err := g.enter(context.Background(), nil, nil); err != nil {
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
		if _, err := g.enter(context.Background(), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.enter(ctx, nil, nil); err == nil {
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

// TestSpinGateWakeAndDrive: a spinner learns which connections parked
// waiters wait on (each once, never its own), and a parked waiter woken
// by its answer leaves the queue without taking a place.
func TestSpinGateWakeAndDrive(t *testing.T) {
	var g spinGate
	limit := spinLimit()
	for range limit {
		if placed, err := g.enter(context.Background(), nil, nil); !placed || err != nil {
			t.Fatal(placed, err)
		}
	}
	self, a, b := &conn{}, &conn{}, &conn{}
	wakes := make([]chan struct{}, 4)
	results := make(chan bool, len(wakes))
	for i, c := range []*conn{a, self, a, b} {
		wakes[i] = make(chan struct{}, 1)
		go func() {
			placed, err := g.enter(context.Background(), c, wakes[i])
			if err != nil {
				t.Error(err)
			}
			results <- placed
		}()
	}
	for g.parked.Load() != int32(len(wakes)) {
		time.Sleep(time.Millisecond)
	}
	var buf [driveMax]*conn
	got := g.parkedConns(self, &buf)
	if len(got) != 2 || !slices.Contains(got, a) || !slices.Contains(got, b) {
		t.Fatalf("parked connections %v, want a and b once each (self left out)", got)
	}
	for _, w := range wakes {
		w <- struct{}{}
	}
	for range wakes {
		if <-results {
			t.Fatal("a waiter woken by its answer took a place")
		}
	}
	if g.queued() {
		t.Fatal("woken waiters still queued")
	}
	for range limit {
		g.leave()
	}
	if g.holders != 0 {
		t.Fatalf("%d holders after all left", g.holders)
	}
}
