package acceptq

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// readByte is a handshake: one byte from the dialer, which it answers.
func readByte(_ context.Context, c net.Conn) (net.Conn, error) {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return nil, err
	}
	return c, nil
}

func start(t *testing.T, cfg Config, rejected *atomic.Int32) *Queue[net.Conn] {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	q := New(ln, cfg, readByte, func(c net.Conn) {
		rejected.Add(1)
		c.Close()
	})
	t.Cleanup(func() { q.Close() })
	return q
}

func dial(t *testing.T, q *Queue[net.Conn], hello bool) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", q.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if hello {
		c.Write([]byte{1})
	}
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Past the per-source cap the oldest silent socket of that source is
// closed, and a dialer that speaks at once still gets in.
func TestPerSourceEvictsOldest(t *testing.T) {
	var rejected atomic.Int32
	q := start(t, Config{PerSource: 4, Source: func(net.Conn) string { return "one" }}, &rejected)
	silent := make([]net.Conn, 6)
	for i := range silent {
		silent[i] = dial(t, q, false)
	}
	// The two oldest were closed by the acceptor.
	for _, c := range silent[:2] {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the oldest silent socket was not closed: %v", err)
		}
	}
	waitFor(t, "4 pending", func() bool { return q.Pending() == 4 })
	dial(t, q, true)
	if _, err := q.Accept(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}

// A handshake that does not finish within Timeout is closed; Accept
// never sees it.
func TestTimeout(t *testing.T) {
	var rejected atomic.Int32
	q := start(t, Config{Timeout: 50 * time.Millisecond}, &rejected)
	c := dial(t, q, false)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a timed-out handshake was not closed: %v", err)
	}
	waitFor(t, "no pending", func() bool { return q.Pending() == 0 })
}

// Setups nobody accepts wait for room within the timeout, then are
// rejected; Close rejects those still queued.
func TestReadyBoundAndClose(t *testing.T) {
	var rejected atomic.Int32
	q := start(t, Config{MaxReady: 1, Timeout: 200 * time.Millisecond}, &rejected)
	dial(t, q, true)
	dial(t, q, true)
	waitFor(t, "one rejected past MaxReady", func() bool { return rejected.Load() == 1 })
	q.Close()
	if got := rejected.Load(); got != 2 {
		t.Fatalf("%d rejected after Close, want 2", got)
	}
	if _, err := q.Accept(ctxT(t)); !errors.Is(err, fabric.ErrClosed) {
		t.Fatalf("Accept after Close = %v", err)
	}
}

// A hello that has arrived (Config.Arrived) is handshaken on the accept
// loop; when the ready setups are at their bound, the wait for room goes
// to a goroutine and the loop keeps accepting.
func TestArrivedInline(t *testing.T) {
	var rejected, asked atomic.Int32
	q := start(t, Config{MaxReady: 1, Timeout: time.Minute, Arrived: func(net.Conn) bool {
		asked.Add(1)
		return true
	}}, &rejected)
	for range 3 {
		dial(t, q, true)
	}
	// Nobody accepts yet: the second setup waits for room, and the loop
	// must have gone on to the third.
	waitFor(t, "the third hello", func() bool { return asked.Load() == 3 })
	for i := range 3 {
		if _, err := q.Accept(ctxT(t)); err != nil {
			t.Fatalf("accept %d: %v", i, err)
		}
	}
	if n := rejected.Load(); n != 0 {
		t.Errorf("%d setups rejected", n)
	}
}
