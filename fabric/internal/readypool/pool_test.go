package readypool

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A pool fills to its bound and no further, hands each resource out once,
// refills what was taken, and frees at Close exactly what nobody took.
func TestPoolBoundTakeClose(t *testing.T) {
	var mu sync.Mutex
	made, freed := 0, map[int]bool{}
	p := New(Config[int]{
		Size: 3,
		Make: func() (int, error) { mu.Lock(); defer mu.Unlock(); made++; return made, nil },
		Free: func(v int) { mu.Lock(); defer mu.Unlock(); freed[v] = true },
	}, 100)
	waitReady(t, p, 3)
	time.Sleep(10 * time.Millisecond)
	if st := p.Stats(); st.Ready != 3 || st.Size != 3 {
		t.Fatalf("full pool: %+v", st)
	}
	seen := map[int]bool{}
	for i := 0; i < 10; i++ {
		v, ok := p.Take()
		if !ok {
			waitReady(t, p, 1)
			if v, ok = p.Take(); !ok {
				t.Fatal("no resource after the pool said it had one")
			}
		}
		if seen[v] {
			t.Fatalf("resource %d handed out twice", v)
		}
		seen[v] = true
	}
	waitReady(t, p, 3)
	p.Close()
	p.Close() // idempotent
	mu.Lock()
	defer mu.Unlock()
	if len(freed) != 3 {
		t.Fatalf("Close freed %d, want the 3 left", len(freed))
	}
	for v := range freed {
		if seen[v] {
			t.Fatalf("Close freed %d, which was taken", v)
		}
	}
	if _, ok := p.Take(); ok {
		t.Fatal("a closed pool handed a resource out")
	}
}

// A pool whose Make fails keeps trying, and Close does not wait for it.
func TestPoolMakeFailsCloseReturns(t *testing.T) {
	p := New(Config[int]{Size: 2, Make: func() (int, error) { return 0, errors.New("no") }, Free: func(int) {}})
	if _, ok := p.Take(); ok {
		t.Fatal("an empty pool handed a resource out")
	}
	if st := p.Stats(); st.Missed != 1 || st.Taken != 0 {
		t.Fatalf("stats %+v, want one miss", st)
	}
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close waited for a failing refill")
	}
}

// TestTakeLaterWaitsForRefill: TakeLater leaves the next make to
// Refill, which then fills the pool again.
func TestTakeLaterWaitsForRefill(t *testing.T) {
	var made atomic.Int32
	p := New(Config[int]{Size: 2, Make: func() (int, error) { return int(made.Add(1)), nil }, Free: func(int) {}})
	defer p.Close()
	waitReady(t, p, 2)
	for i := 0; i < 2; i++ {
		if _, ok := p.TakeLater(); !ok {
			t.Fatal("a full pool handed nothing out")
		}
	}
	time.Sleep(20 * time.Millisecond)
	if st := p.Stats(); st.Ready != 0 || made.Load() != 2 {
		t.Fatalf("after two TakeLater and no Refill: %+v, %d made, want nothing made", st, made.Load())
	}
	p.Refill()
	waitReady(t, p, 2)
}

func TestNilPool(t *testing.T) {
	var p *Pool[int]
	if _, ok := p.Take(); ok {
		t.Fatal("a nil pool handed a resource out")
	}
	if st := p.Stats(); st.Size != 0 {
		t.Fatalf("nil pool stats %+v", st)
	}
	if _, ok := p.TakeLater(); ok {
		t.Fatal("a nil pool handed a resource out")
	}
	p.Refill()
	p.Close()
}

func waitReady(t *testing.T, p *Pool[int], n int) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); p.Stats().Ready < n; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("pool %+v: not %d ready after 5s", p.Stats(), n)
		}
	}
}
