package memcache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/internal/fuzzseed"
)

// arrivals delivers a byte string step bytes at a time, as a socket
// does: the pump's reads find nothing until the next step arrives (its
// wait makes it arrive), a blocking read waits for it.
type arrivals struct {
	in           []byte
	step         int // 0: everything at once
	arrived, off int
	empty        int // the pump's reads that found nothing
}

func (a *arrivals) arrive() {
	if a.step == 0 {
		a.arrived = len(a.in)
		return
	}
	a.arrived = min(len(a.in), a.arrived+a.step)
}

// readNow is the pump's read.
func (a *arrivals) readNow(p []byte) (int, error) {
	if a.off == a.arrived {
		if a.off == len(a.in) {
			return 0, io.EOF
		}
		a.empty++
		return 0, errWouldBlock
	}
	n := copy(p, a.in[a.off:a.arrived])
	a.off += n
	return n, nil
}

// waitRead is RawConn.Read's loop: each wait, the next step arrives.
func (a *arrivals) waitRead(f func(uintptr) bool) error {
	for !f(0) {
		a.arrive()
	}
	return nil
}

// arrivalConn reads arrivals with blocking reads (round() outside the pump).
type arrivalConn struct {
	fakeConn
	a *arrivals
}

func (c *arrivalConn) Read(p []byte) (int, error) {
	if c.a.off == c.a.arrived {
		c.a.arrive()
	}
	return c.a.readNow(p)
}

// serveArrivals serves in, arriving step bytes at a time, with the pump
// or with rounds alone; the answers, and the connection.
func serveArrivals(d *Door, in []byte, step int, pump bool) ([]byte, *conn) {
	a := &arrivals{in: in, step: step}
	f := &arrivalConn{a: a}
	c := newConn(d, f)
	if pump {
		c.readNow, c.waitRead = a.readNow, a.waitRead
	}
	c.serve()
	return f.out.Bytes(), c
}

// Whatever the bytes and however they arrive, the pump never runs a
// parser past the bytes complete counted (which would close the
// connection), and every input ends the connection.
func FuzzPump(f *testing.F) {
	for name, s := range map[string]string{
		"set-get":   "set a 1 0 3\r\nabc\r\nget a b\r\n",
		"lead":      "   set a 0 0 3 \r\nabc\r\nget a\r\n",
		"bad-size":  "set a 0 0 x\r\nget a\r\n",
		"bad-tail":  "set a 0 0 3 x y\r\nabc\r\n",
		"too-big":   "set a 0 0 99999999\r\n",
		"cas":       "cas a 0 0 1 99\r\nx\r\n",
		"no-end":    "get " + strings.Repeat("k", 300),
		"binary":    string(binRequest(opSet, make([]byte, 8), []byte("k"), []byte("v"), 0)) + string(binRequest(opGetK, nil, []byte("k"), nil, 0)),
		"bin-lens":  string(binHeader(opGet, 100, 3, 2)),
		"bin-short": "\x80\x00\x00",
		"meta":      "ms a 3 T1 F2\r\nabc\r\nmg a v k O1\r\nms b x\r\nms c 2 MZ\r\nzz\r\nma n N0 v\r\nmn\r\n",
		"long-get":  "get" + strings.Repeat(" k", 600) + "\r\nset k 0 0 1 x y\r\nz\r\n",
	} {
		fuzzseed.Add(f, name, []byte(s), uint8(3))
	}
	d := fuzzDoor(f)
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		_, c := serveArrivals(d, in, int(step), true)
		if errors.Is(c.pumpErr, errPumpShort) {
			t.Fatalf("a parser read past what complete counted: %q", in)
		}
	})
}

// The pump answers as rounds alone do, however the bytes arrive; a
// request split between arrivals is finished outside it.
func TestPumpAnswersAsRounds(t *testing.T) {
	big := strings.Repeat("v", 70<<10) // over the read buffer: always the slow path
	ins := []string{
		"set a 1 0 3\r\nabc\r\nget a b\r\ngets a\r\nappend a 0 0 2\r\nde\r\nget a\r\n",
		"set n 0 0 1\r\n5\r\nincr n 7\r\ndecr n 20\r\ncas n 0 0 1 1\r\nx\r\ndelete n\r\nget n\r\n",
		"  set a 0 0 3\r\nxyz\r\nget a\r\nset b 0 0 x\r\n",
		"set big 0 0 " + fmt.Sprint(len(big)) + "\r\n" + big + "\r\nget a\r\n",
		string(binRequest(opSet, make([]byte, 8), []byte("k"), []byte("v"), 0)) + "get k\r\n" +
			string(binRequest(opGetK, nil, []byte("k"), nil, 0)) + string(binHeader(opGet, 100, 3, 2)),
	}
	for i, in := range ins {
		want, _ := serveArrivals(fuzzDoor(t), []byte(in), 0, false)
		for _, step := range []int{0, 1, 2, 3, 7, 16, 100} {
			got, c := serveArrivals(fuzzDoor(t), []byte(in), step, true)
			if !bytes.Equal(got, want) {
				t.Errorf("input %d, %d bytes per arrival: pump answered %q, rounds %q", i, step, got, want)
			}
			if errors.Is(c.pumpErr, errPumpShort) {
				t.Errorf("input %d, %d bytes per arrival: %v", i, step, c.pumpErr)
			}
		}
	}
}

// On a socket, a client that sends a request after each answer costs the
// door one read per request: the pump waits for the socket's readiness
// instead of reading it empty first (rounds alone read twice).
func TestPumpReadsOncePerRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Without spinning, which reads on purpose while it waits (spin.go).
	d := newDoor(Config{ReadTimeout: time.Second, WriteTimeout: time.Second, RunTimeout: time.Second, Spin: -1},
		newTestBackend(t, 2, true), nil)
	served := make(chan *conn, 1)
	var reads, empty int
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			served <- nil
			return
		}
		defer nc.Close()
		c := newConn(d, nc)
		if c.waitRead == nil {
			served <- nil
			return
		}
		sysNow := c.readNow
		c.readNow = func(p []byte) (int, error) {
			n, err := sysNow(p)
			if reads++; err == errWouldBlock {
				empty++
			}
			return n, err
		}
		c.serve()
		served <- c
	}()
	cl := &client{t, nil}
	if cl.nc, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	const n = 200
	cl.send("set k 0 0 1\r\nv\r\n")
	cl.expect("STORED\r\n")
	for range n {
		cl.send("get k\r\n")
		cl.expect("VALUE k 0 1\r\nv\r\nEND\r\n")
	}
	// A request in two pieces is finished outside the pump, and the pump
	// takes the next one.
	cl.send("get ")
	time.Sleep(20 * time.Millisecond)
	cl.send("k\r\n")
	cl.expect("VALUE k 0 1\r\nv\r\nEND\r\n")
	cl.send("get k\r\n")
	cl.expect("VALUE k 0 1\r\nv\r\nEND\r\n")
	cl.nc.Close()
	c := <-served
	if c == nil {
		t.Fatal("no raw socket reads on a TCP connection")
	}
	t.Logf("%d requests: %d pump reads, %d found nothing", n+4, reads, empty)
	if empty > n/4 {
		t.Errorf("%d of %d requests cost a read that found nothing", empty, n)
	}
	if errors.Is(c.pumpErr, errPumpShort) {
		t.Error(c.pumpErr)
	}
}
