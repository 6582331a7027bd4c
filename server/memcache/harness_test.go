package memcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/kv"
)

// testBackend serves batches from one goroutine per partition of a small
// store, as the server does.
type testBackend struct {
	store *kv.Store
	qs    []chan *Batch
	stop  chan struct{}
	wg    sync.WaitGroup
	// inline runs batches on the caller's goroutine (the fuzz targets:
	// one goroutine, deterministic).
	inline bool
	// skew is added to the store's clock, which stands still at the
	// Unix time the backend was made: tests move time on, exactly.
	skew *atomic.Uint32
}

// newTestBackend is a store as `jakiro server --memcached` makes it: with
// access times (mg l).
func newTestBackend(tb testing.TB, parts int, inline bool) *testBackend {
	return newTestBackendTimes(tb, parts, inline, true)
}

func newTestBackendTimes(tb testing.TB, parts int, inline, accessTimes bool) *testBackend {
	skew, start := new(atomic.Uint32), uint32(time.Now().Unix())
	s, err := kv.New(kv.Config{Partitions: parts, Memory: int64(parts) * 8 << 20, MaxValue: 64 << 10, AccessTimes: accessTimes,
		Now: func() uint32 { return start + skew.Load() }})
	if err != nil {
		tb.Fatal(err)
	}
	b := &testBackend{store: s, stop: make(chan struct{}), inline: inline, skew: skew}
	for p := range parts {
		q := make(chan *Batch, 64)
		b.qs = append(b.qs, q)
		if inline {
			continue
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for {
				select {
				case x := <-q:
					for _, c := range x.Cmds {
						c.Exec(s.Partition(p))
					}
					x.Group.Done()
				case <-b.stop:
					return
				}
			}
		}()
	}
	tb.Cleanup(func() { close(b.stop); b.wg.Wait(); s.Close() })
	return b
}

func (b *testBackend) Partitions() int             { return len(b.qs) }
func (b *testBackend) PartitionOf(hash uint64) int { return b.store.PartitionOf(hash) }
func (b *testBackend) Stopped() <-chan struct{}    { return b.stop }
func (b *testBackend) Now() uint32                 { return b.store.Now() }
func (b *testBackend) MaxValue() int               { return b.store.Config().MaxValue }
func (b *testBackend) Stats() []Stat {
	return []Stat{{"curr_items", "0"}, {"limit_maxbytes", fmt.Sprint(b.store.Config().Memory)}}
}
func (b *testBackend) Enqueue(p int, x *Batch) bool {
	if b.inline {
		for _, c := range x.Cmds {
			c.Exec(b.store.Partition(p))
		}
		x.Group.Done()
		return true
	}
	select {
	case b.qs[p] <- x:
		return true
	case <-b.stop:
		return false
	}
}

// startDoor serves a door on loopback until the test ends.
func startDoor(tb testing.TB, cfg Config, be Backend) *Door {
	tb.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	d, err := Listen(cfg, be)
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); d.Serve(context.Background()) }()
	tb.Cleanup(func() { d.Close(); <-done })
	return d
}

// client is a raw connection with a deadline on every exchange.
type client struct {
	tb testing.TB
	nc net.Conn
}

func dialDoor(tb testing.TB, d *Door) *client {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", d.Addr(), 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nc.Close() })
	return &client{tb, nc}
}

func (c *client) send(s string) {
	c.tb.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.tb.Fatalf("send %q: %v", s, err)
	}
}

// expect reads exactly len(want) bytes and compares.
func (c *client) expect(want string) {
	c.tb.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c.nc, got); err != nil {
		c.tb.Fatalf("want %q: read %q: %v", want, got, err)
	}
	if string(got) != want {
		c.tb.Fatalf("got %q, want %q", got, want)
	}
}

// closed checks the server closes the connection (after any bytes).
func (c *client) closed() []byte {
	c.tb.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c.nc)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) { // a reset: input left unread at close
		c.tb.Fatalf("connection not closed by the server: %v (read %q)", err, b)
	}
	return b
}

// fakeConn feeds a byte string to a connection and discards its answers.
type fakeConn struct {
	r   *bytes.Reader
	out bytes.Buffer
}

func (f *fakeConn) Read(b []byte) (int, error)       { return f.r.Read(b) }
func (f *fakeConn) Write(b []byte) (int, error)      { return f.out.Write(b) }
func (f *fakeConn) Close() error                     { return nil }
func (f *fakeConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (f *fakeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (f *fakeConn) SetDeadline(time.Time) error      { return nil }
func (f *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (f *fakeConn) SetWriteDeadline(time.Time) error { return nil }
