//go:build rdma

package verbs

import (
	"errors"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// connOf unwraps a verbs connection (ringConn embeds *conn).
func connOf(t testing.TB, fc fabric.Conn) *conn {
	t.Helper()
	switch c := fc.(type) {
	case *conn:
		return c
	case ringConn:
		return c.conn
	}
	t.Fatalf("%T is not a verbs connection", fc)
	return nil
}

func bellsOf(t testing.TB, ln fabric.Listener) fabric.Doorbells {
	t.Helper()
	b, ok := ln.(fabric.Doorbells)
	if !ok {
		t.Fatalf("listener %T with Options.Doorbells offers no doorbells", ln)
	}
	return b
}

func ringerOf(t testing.TB, c fabric.Conn) fabric.Ringer {
	t.Helper()
	r, ok := c.(fabric.Ringer)
	if !ok {
		t.Fatalf("dialer conn %T to a listener with bells is no fabric.Ringer", c)
	}
	return r
}

// reapRings polls c until its rings' completions are reaped; they must not
// show up as Completions.
func reapRings(t testing.TB, fc fabric.Conn) {
	t.Helper()
	c := connOf(t, fc)
	cs := make([]fabric.Completion, 8)
	deadline := time.Now().Add(10 * time.Second)
	for c.ringsOut.Load() > 0 {
		n, err := fc.Poll(cs)
		if err != nil {
			t.Fatalf("Poll while reaping rings: %v", err)
		}
		if n != 0 {
			t.Fatalf("Poll returned %d completions with no op posted (ring leaked: %+v)", n, cs[0])
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rings still unreaped after 10s", c.ringsOut.Load())
		}
		runtime.Gosched()
	}
}

// settle waits until the listener has rung the bells of every ring the
// given dialer connections posted and no drain is midway, so none is
// still in flight: a fixed
// sleep is not enough on a loaded machine or in the VM, where a ring can
// take milliseconds to land.
func settle(t testing.TB, b fabric.Doorbells, dialers ...fabric.Conn) {
	t.Helper()
	hub := b.(bellListener).hub
	var sent uint64
	for _, d := range dialers {
		sent += connOf(t, d).ringsPosted.Load()
	}
	deadline := time.Now().Add(30 * time.Second)
	for hub.received.Load() < sent || hub.draining.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d rings received after 30s", hub.received.Load(), sent)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// expectBells checks that exactly the bells in want rang and no other,
// once every ring the dialers posted has landed (settle).
func expectBells(t testing.TB, b fabric.Doorbells, n int, dialers []fabric.Conn, want ...int) {
	t.Helper()
	settle(t, b, dialers...)
	for _, i := range want {
		if rang, err := b.WaitBell(i, 5*time.Second); err != nil || !rang {
			t.Fatalf("bell %d did not ring: %v %v", i, rang, err)
		}
	}
	for i := 0; i < n; i++ {
		if rang, err := b.WaitBell(i, 0); err != nil || rang {
			t.Fatalf("bell %d rang unexpectedly (or failed): %v %v", i, rang, err)
		}
	}
}

// clearBells settles and then clears every bell of b.
func clearBells(t testing.TB, b fabric.Doorbells, n int, dialers ...fabric.Conn) {
	t.Helper()
	settle(t, b, dialers...)
	for i := 0; i < n; i++ {
		b.WaitBell(i, 0)
	}
}

// Without Options.Doorbells neither end has bells to offer or ring.
func TestDoorbellsAbsent(t *testing.T) {
	ln := listenT(t, fabric.Options{})
	if _, ok := ln.(fabric.Doorbells); ok {
		t.Fatalf("listener %T without Options.Doorbells implements fabric.Doorbells", ln)
	}
	l := dialLink(t, ln, fabric.Options{}, 4096)
	if _, ok := l.D.(fabric.Ringer); ok {
		t.Fatalf("dialer conn %T to a listener without bells is a Ringer", l.D)
	}
	if _, ok := l.A.(fabric.Ringer); ok {
		t.Fatalf("acceptor conn %T is a Ringer", l.A)
	}
	if _, err := fabric.Listen(addrFor(t), fabric.Options{Doorbells: fabric.MaxDoorbells + 1}); err == nil {
		t.Fatal("Listen with more than MaxDoorbells bells succeeded")
	}
}

// TestDoorbellLatency: ring-to-wake latency of a waiter blocked in WaitBell.
func TestDoorbellLatency(t *testing.T) {
	ln := listenT(t, fabric.Options{Doorbells: 2})
	bells := bellsOf(t, ln)
	l := dialLink(t, ln, fabric.Options{}, 4096)
	r := ringerOf(t, l.D)
	const n = 200
	lat := make([]time.Duration, 0, n)
	for k := 0; k < n; k++ {
		woke := make(chan time.Time, 1)
		go func() {
			bells.WaitBell(0, 5*time.Second)
			woke <- time.Now()
		}()
		time.Sleep(200 * time.Microsecond) // let it block
		start := time.Now()
		if err := r.RingBell(0); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, (<-woke).Sub(start))
		reapRings(t, l.D)
		settle(t, bells, l.D)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("ring -> WaitBell wake over %d rings: min %v, median %v, p90 %v, max %v", n, lat[0], lat[n/2], lat[n*9/10], lat[n-1])
	if lat[n/2] > time.Second {
		t.Fatalf("median wake latency %v", lat[n/2])
	}
	expectBells(t, bells, 2, []fabric.Conn{l.D})
}

// TestDoorbellOutOfRange: bells the acceptor does not offer are ignored by
// the dialer's RingBell, and by the acceptor if a peer sends them anyway.
func TestDoorbellOutOfRange(t *testing.T) {
	ln := listenT(t, fabric.Options{Doorbells: 2})
	bells := bellsOf(t, ln)
	l := dialLink(t, ln, fabric.Options{}, 4096)
	r := ringerOf(t, l.D)
	for _, i := range []int{-1, 2, 255, 256, 1 << 20} {
		if err := r.RingBell(i); err != nil {
			t.Fatalf("RingBell(%d): %v", i, err)
		}
	}
	if n := connOf(t, l.D).ringsOut.Load(); n != 0 {
		t.Fatalf("%d rings posted for bells the acceptor does not offer", n)
	}
	// A peer that sends them anyway (bypassing the check).
	for _, i := range []uint32{2, 200, 255, 256, 1 << 20, 1<<32 - 1} {
		if err := connOf(t, l.D).postRing(i); err != nil {
			t.Fatalf("raw ring %d: %v", i, err)
		}
	}
	reapRings(t, l.D)
	expectBells(t, bells, 2, []fabric.Conn{l.D})
	if err := r.RingBell(1); err != nil {
		t.Fatal(err)
	}
	reapRings(t, l.D)
	expectBells(t, bells, 2, []fabric.Conn{l.D}, 1)
	if l.D.Err() != nil || l.A.Err() != nil {
		t.Fatalf("connection broken: %v / %v", l.D.Err(), l.A.Err())
	}
}

// TestDoorbellFlood: one dialer rings as fast as it can (more than the
// receives posted, so RNR back-off kicks in) from one goroutine while
// another posts and polls READs on the same connection: every op gets
// exactly one completion, in order; a second connection's rings still get
// through; nothing fails.
func TestDoorbellFlood(t *testing.T) {
	const nb = 4
	ln := listenT(t, fabric.Options{Doorbells: nb})
	bells := bellsOf(t, ln)
	l := dialLink(t, ln, fabric.Options{QueueDepth: 32}, 4096)
	l2 := dialLink(t, ln, fabric.Options{}, 4096)
	r := ringerOf(t, l.D)
	const rings, opsN = 3000, 2000
	start := time.Now()
	var ringErr error
	full := 0
	ringerDone := make(chan struct{})
	go func() {
		defer close(ringerDone)
		for k := 0; k < rings; {
			err := r.RingBell(k % (nb + 2)) // every third ring is out of range
			if errors.Is(err, fabric.ErrQueueFull) {
				full++
				runtime.Gosched() // the poller reaps
				continue
			}
			if err != nil {
				ringErr = err
				return
			}
			k++
		}
	}()
	// Meanwhile a waiter sees bells ring.
	stop := make(chan struct{})
	wakes := make(chan int, 1)
	go func() {
		w := 0
		for {
			select {
			case <-stop:
				wakes <- w
				return
			default:
			}
			for i := 0; i < nb; i++ {
				if rang, _ := bells.WaitBell(i, time.Millisecond); rang {
					w++
				}
			}
		}
	}()
	// Ops on the same connection: one completion each, in order; Poll also
	// reaps the rings' completions (and must hide them).
	ops := make([]fabric.Op, 8)
	cs := make([]fabric.Completion, 16)
	next, posted, window := 0, 0, 0
	deadline := time.Now().Add(60 * time.Second)
	ringing := true
	for next < opsN || ringing {
		select {
		case <-ringerDone:
			ringing = false
		default:
		}
		if posted < opsN && window < 8 {
			k := min(8-window, opsN-posted)
			for i := 0; i < k; i++ {
				ops[i] = fabric.Op{Kind: fabric.OpRead, ID: uint64(posted + i), Local: l.DR, LocalOff: 8 * i, Len: 8, Remote: l.ToA, RemoteOff: 8}
			}
			if err := l.D.Post(ops[:k]); err != nil {
				t.Fatalf("Post during flood: %v", err)
			}
			posted += k
			window += k
		}
		n, err := l.D.Poll(cs)
		if err != nil {
			t.Fatalf("Poll during flood: %v", err)
		}
		for _, c := range cs[:n] {
			if c.Err != nil || c.ID != uint64(next) || c.Kind != fabric.OpRead {
				t.Fatalf("completion %+v, want ID %d OK", c, next)
			}
			next++
			window--
		}
		if time.Now().After(deadline) {
			t.Fatalf("flood: %d of %d ops, %d rings unreaped after 60s", next, opsN, connOf(t, l.D).ringsOut.Load())
		}
		if n == 0 {
			runtime.Gosched()
		}
	}
	if ringErr != nil {
		t.Fatalf("RingBell during flood: %v", ringErr)
	}
	reapRings(t, l.D)
	close(stop)
	w := <-wakes
	t.Logf("flood: %d rings + %d READs in %v (%d ErrQueueFull retries), %d wakes seen", rings, opsN, time.Since(start), full, w)
	if w == 0 {
		t.Fatal("no bell woke during the flood")
	}
	both := []fabric.Conn{l.D, l2.D}
	clearBells(t, bells, nb, both...) // what the flood left
	expectBells(t, bells, nb, both)
	// The other connection's rings get through, and so do this one's.
	if err := ringerOf(t, l2.D).RingBell(3); err != nil {
		t.Fatal(err)
	}
	expectBells(t, bells, nb, both, 3)
	if err := r.RingBell(0); err != nil {
		t.Fatal(err)
	}
	expectBells(t, bells, nb, both, 0)
	if err := fabric.Read(l.D, l.DR, 0, l.ToA, 0, 8); err != nil {
		t.Fatalf("READ after flood: %v", err)
	}
	for _, c := range []fabric.Conn{l.D, l.A, l2.D, l2.A} {
		if err := c.Err(); err != nil {
			t.Fatalf("a connection failed: %v", err)
		}
	}
}

// TestDoorbellAfterPeerClose: rings to an acceptor that closed fail with
// ErrPeerGone (and after the dialer's own Close with ErrClosed), without
// hanging; the listener keeps serving other connections.
func TestDoorbellAfterPeerClose(t *testing.T) {
	ln := listenT(t, fabric.Options{Doorbells: 2})
	bells := bellsOf(t, ln)
	l := dialLink(t, ln, fabric.Options{}, 4096)
	r := ringerOf(t, l.D)
	for k := 0; k < 10; k++ { // rings in flight while the acceptor closes
		r.RingBell(k % 2)
	}
	l.A.Close()
	select {
	case <-l.D.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("dialer did not notice the acceptor closing within 5s")
	}
	if err := r.RingBell(1); !errors.Is(err, fabric.ErrPeerGone) {
		t.Fatalf("RingBell after peer close: %v, want ErrPeerGone", err)
	}
	cs := make([]fabric.Completion, 4)
	if n, err := l.D.Poll(cs); n != 0 || err == nil {
		t.Fatalf("Poll after peer close: %d, %v", n, err)
	}
	l.D.Close()
	if err := r.RingBell(1); !errors.Is(err, fabric.ErrClosed) {
		t.Fatalf("RingBell after Close: %v, want ErrClosed", err)
	}
	// Some of l's rings died with its acceptor; the rest have landed once
	// no drain is midway (the acceptor's Close waited for the drain lock).
	clearBells(t, bells, 2)
	l2 := dialLink(t, ln, fabric.Options{}, 4096)
	if err := ringerOf(t, l2.D).RingBell(1); err != nil {
		t.Fatal(err)
	}
	reapRings(t, l2.D)
	expectBells(t, bells, 2, []fabric.Conn{l2.D}, 1)
}

// TestDoorbellListenerClosed: accepted connections keep their bells'
// receives re-posted after the listener closes, so a dialer that keeps
// ringing (more than the posted receives) never stalls.
func TestDoorbellListenerClosed(t *testing.T) {
	ln, err := fabric.Listen(addrFor(t), fabric.Options{Doorbells: 2})
	if err != nil {
		t.Fatal(err)
	}
	l := dialLink(t, ln, fabric.Options{}, 4096)
	r := ringerOf(t, l.D)
	ln.Close()
	for k := 0; k < 4*bellRecvs; k++ {
		for {
			err := r.RingBell(k % 2)
			if errors.Is(err, fabric.ErrQueueFull) {
				reapRings(t, l.D)
				continue
			}
			if err != nil {
				t.Fatalf("ring %d after listener Close: %v", k, err)
			}
			break
		}
	}
	reapRings(t, l.D)
	if err := fabric.Read(l.D, l.DR, 0, l.ToA, 0, 8); err != nil {
		t.Fatalf("READ: %v", err)
	}
}
