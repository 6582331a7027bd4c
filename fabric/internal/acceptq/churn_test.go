package acceptq

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// A source past its churn burst gets its handshakes started at most
// ChurnRate a second, one after the other; another source and a source
// whose debt has decayed are not paced.
func TestChurnPacing(t *testing.T) {
	var rejected atomic.Int32
	q := start(t, Config{Source: func(net.Conn) string { return "x" }, ChurnRate: 20, ChurnBurst: 4}, &rejected)
	if d := q.pace("x"); d != 0 {
		t.Fatalf("a source with no young ends waits %v", d)
	}
	for range 4 {
		q.Charge("x", 1)
	}
	if d := q.pace("x"); d != 0 {
		t.Fatalf("a source within its burst waits %v", d)
	}
	for range 10 {
		q.Charge("x", 1)
	}
	var waits []time.Duration
	for range 3 {
		waits = append(waits, q.pace("x"))
	}
	// Slots 50 ms apart, the first now.
	for i, d := range waits {
		want := time.Duration(i) * 50 * time.Millisecond
		if d < want-10*time.Millisecond || d > want+time.Millisecond {
			t.Errorf("handshake %d of a churning source waits %v, want about %v", i, d, want)
		}
	}
	if d := q.pace("y"); d != 0 {
		t.Errorf("another source waits %v", d)
	}

	// Through the queue: a churning source's handshake is delayed to its
	// slot and then served.
	begin := time.Now()
	c := dial(t, q, true)
	if _, err := q.Accept(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took < 100*time.Millisecond {
		t.Errorf("paced handshake served after %v, want its slot (~150 ms)", took)
	}
	c.Close()

	// The debt decays at ChurnRate a second: 14 young ends (capped at 8)
	// are gone in 0.4 s, and the source is forgotten.
	time.Sleep(800 * time.Millisecond)
	if d := q.pace("x"); d != 0 {
		t.Errorf("after the debt decayed, the source waits %v", d)
	}
	q.mu.Lock()
	n := len(q.churn)
	q.mu.Unlock()
	if n != 0 {
		t.Errorf("%d sources tracked after their debt decayed", n)
	}
}

// Without ChurnRate nothing is tracked or paced.
func TestChurnOff(t *testing.T) {
	var rejected atomic.Int32
	q := start(t, Config{}, &rejected)
	for range 100 {
		q.Charge("x", 1)
	}
	if d := q.pace("x"); d != 0 || len(q.churn) != 0 {
		t.Errorf("pacing off: wait %v, %d sources tracked", d, len(q.churn))
	}
}

// Charges are what young connections cost beyond their work: none
// (an honest client's) is not tracked, however many; a huge one is
// capped at twice the burst, so a source stays paced for at most
// ChurnBurst/ChurnRate seconds after it stopped.
func TestChurnCharges(t *testing.T) {
	var rejected atomic.Int32
	q := start(t, Config{Source: func(net.Conn) string { return "x" }, ChurnRate: 20, ChurnBurst: 4}, &rejected)
	for range 1000 {
		q.Charge("x", 0)
	}
	q.mu.Lock()
	n := len(q.churn)
	q.mu.Unlock()
	if d := q.pace("x"); d != 0 || n != 0 {
		t.Fatalf("after 1000 free ends: wait %v, %d sources tracked", d, n)
	}
	q.Charge("x", 1e9)
	q.mu.Lock()
	debt := q.churn["x"].debt
	q.mu.Unlock()
	if debt > 8 {
		t.Fatalf("debt %v after a huge charge, want at most 2 × ChurnBurst = 8", debt)
	}
	if d := q.pace("x"); d != 0 {
		t.Fatalf("the first handshake past the burst waits %v, want its slot now", d)
	}
	if d := q.pace("x"); d <= 0 {
		t.Fatalf("a source charged past its burst is not paced")
	}
}
