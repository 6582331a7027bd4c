package memcache

import (
	"net"
	"testing"
	"time"
)

// spinConn is a door connection over loopback TCP, set up as the pump
// sets it (pumping, its socket's fd), and the client's end.
func spinConn(t *testing.T, d *Door) (*conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cl, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := newConn(d, nc)
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Control(func(fd uintptr) { c.fd = fd }); err != nil {
		t.Fatal(err)
	}
	c.pumping = true
	c.spinEpoch = d.spin.epoch.Load()
	return c, cl
}

// countReads counts c's socket reads from now on.
func countReads(c *conn) *int {
	n := new(int)
	sys := c.readNow
	c.readNow = func(p []byte) (int, error) { *n++; return sys(p) }
	return n
}

func spinDoor(t *testing.T, spin time.Duration, be Backend) *Door {
	return newDoor(Config{ReadTimeout: time.Second, WriteTimeout: time.Second, RunTimeout: time.Second, Spin: spin}, be, nil)
}

// polling is a backend whose partitions poll for RFP clients.
type polling struct{ *testBackend }

func (polling) Polling() bool { return true }

func TestSpinReadsWhatComes(t *testing.T) {
	d := spinDoor(t, time.Minute, newTestBackend(t, 1, true))
	d.spin.epochEnd.Store(mono() + int64(time.Hour)) // the epoch does not end
	c, cl := spinConn(t, d)
	go func() {
		time.Sleep(20 * time.Millisecond)
		cl.Write([]byte("get k\r\n"))
	}()
	got, stop := c.spin()
	if !got || stop {
		t.Fatalf("spin = %v, %v; want the bytes sent while it spun", got, stop)
	}
	if b, _ := c.r.Peek(c.r.Buffered()); string(b) != "get k\r\n" {
		t.Fatalf("buffered %q", b)
	}
	for i := range d.spin.slots {
		if fd := d.spin.slots[i].Load(); fd != 0 {
			t.Fatalf("slot %d still holds socket %d", i, fd-1)
		}
	}
}

// A spinner stops when its epoch ends, so that the netpoller gets to poll
// for the connections waiting there; it spins again only in a later
// epoch, once the netpoller woke it.
func TestSpinStopsAtEpochEnd(t *testing.T) {
	d := spinDoor(t, time.Minute, newTestBackend(t, 1, true))
	c, _ := spinConn(t, d)
	e := d.spin.epoch.Load()
	d.spin.epochEnd.Store(mono() + int64(20*time.Millisecond))
	start := time.Now()
	if got, stop := c.spin(); got || stop {
		t.Fatalf("spin = %v, %v with nothing sent; want a wait", got, stop)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("spun %v of a minute: the epoch's end did not stop it", took)
	}
	if d.spin.epoch.Load() == e {
		t.Fatal("the epoch did not advance")
	}
	reads := countReads(c)
	if got, stop := c.spin(); got || stop || *reads != 0 {
		t.Fatalf("spin in an ended epoch = %v, %v after %d reads; want a wait at once", got, stop, *reads)
	}
}

func TestSpinNot(t *testing.T) {
	for name, d := range map[string]*Door{
		"off":          spinDoor(t, -1, newTestBackend(t, 1, true)),
		"rfp-clients":  spinDoor(t, time.Minute, polling{newTestBackend(t, 1, true)}),
		"spinners-max": spinDoor(t, time.Minute, newTestBackend(t, 1, true)),
	} {
		t.Run(name, func(t *testing.T) {
			if name == "spinners-max" {
				for i := range d.spin.slots {
					d.spin.slots[i].Store(int32(1000 + i))
				}
			}
			d.spin.epochEnd.Store(mono() + int64(time.Hour))
			c, _ := spinConn(t, d)
			reads := countReads(c)
			if got, stop := c.spin(); got || stop || *reads != 0 {
				t.Fatalf("spin = %v, %v after %d reads; want no spinning", got, stop, *reads)
			}
		})
	}
}

// Bytes for a connection that sleeps in the netpoller, or a connection
// for the listener, end a spinner's epoch at once: the netpoller, which
// does not poll while anything spins, gets to see them.
func TestSpinEndsEpochForSleeper(t *testing.T) {
	for _, what := range []string{"request", "connection"} {
		t.Run(what, func(t *testing.T) {
			d := spinDoor(t, time.Minute, newTestBackend(t, 1, true))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			d.spin.openWatch(ln)
			defer d.spin.closeWatch()
			if d.spin.watch < 0 {
				t.Fatal("no epoll set")
			}
			spinner, _ := spinConn(t, d)
			_, sleeper := spinConn(t, d)
			d.spin.epochEnd.Store(mono() + int64(time.Hour))
			e := d.spin.epoch.Load()
			go func() {
				time.Sleep(20 * time.Millisecond)
				if what == "request" {
					sleeper.Write([]byte("get k\r\n"))
				} else if nc, err := net.Dial("tcp", ln.Addr().String()); err == nil {
					nc.Close()
				}
			}()
			start := time.Now()
			if got, stop := spinner.spin(); got || stop {
				t.Fatalf("spin = %v, %v; want a wait", got, stop)
			}
			if took := time.Since(start); took > 30*time.Second {
				t.Fatalf("spun %v of a minute past a sleeper's %s", took, what)
			}
			if d.spin.epoch.Load() == e {
				t.Fatal("the epoch did not end")
			}
		})
	}
}
