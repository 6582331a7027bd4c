package memcache

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestASCIICommands: what memccapable does not cover: gat/gats, touch,
// flags, negative exptimes, incr wrap, values longer than a connection's
// first buffer, many keys over several partitions in one get.
func TestASCIICommands(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 3, false))
	c := dialDoor(t, d)
	c.send("set a 42 0 3\r\nabc\r\n")
	c.expect("STORED\r\n")
	c.send("gets a\r\n")
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var flags, n int
	var cas uint64
	if _, err := fmt.Fscanf(c.nc, "VALUE a %d %d %d\r\n", &flags, &n, &cas); err != nil || flags != 42 || n != 3 || cas == 0 {
		t.Fatalf("gets: flags %d len %d cas %d: %v", flags, n, cas, err)
	}
	c.expect("abc\r\nEND\r\n")
	c.send("gats 100 a\r\n")
	c.expect(fmt.Sprintf("VALUE a 42 3 %d\r\nabc\r\nEND\r\n", cas)) // touch keeps the cas
	c.send("touch a 0\r\ntouch nobody 10\r\n")
	c.expect("TOUCHED\r\nNOT_FOUND\r\n")
	c.send("set gone 0 -1 1\r\nx\r\nget gone\r\n")
	c.expect("STORED\r\nEND\r\n")
	c.send("set n 0 0 20\r\n18446744073709551615\r\nincr n 2\r\ndecr n 5\r\nincr a 1\r\nincr n x\r\n")
	c.expect("STORED\r\n1\r\n0\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nCLIENT_ERROR invalid numeric delta argument\r\n")
	big := strings.Repeat("v", 40000)
	c.send(fmt.Sprintf("set big 0 0 %d\r\n%s\r\nget big\r\n", len(big), big))
	c.expect(fmt.Sprintf("STORED\r\nVALUE big 0 %d\r\n%s\r\nEND\r\n", len(big), big))
	c.send(fmt.Sprintf("set huge 0 0 %d\r\n%s\r\n", 70000, strings.Repeat("h", 70000)))
	c.expect("SERVER_ERROR object too large for cache\r\n")
	var set, get, want strings.Builder
	get.WriteString("get")
	for i := range 50 {
		fmt.Fprintf(&set, "set k%d 0 0 %d noreply\r\nv%d\r\n", i, len(fmt.Sprint(i))+1, i)
		fmt.Fprintf(&get, " k%d missing%d", i, i)
		fmt.Fprintf(&want, "VALUE k%d 0 %d\r\nv%d\r\n", i, len(fmt.Sprint(i))+1, i)
	}
	c.send(set.String() + get.String() + "\r\n")
	c.expect(want.String() + "END\r\n")
	c.send("flush_all\r\nget k1\r\nstats\r\n")
	c.expect("OK\r\nEND\r\nSTAT pid ")
}

// TestBadInputClosesOnlyThatConnection: an oversize line, a length that
// does not parse, a data block without its end, binary garbage: each
// closes its own connection; another connection goes on.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	good := dialDoor(t, d)
	good.send("set g 0 0 1\r\ng\r\n")
	good.expect("STORED\r\n")
	for _, bad := range []struct{ name, in, answer string }{
		{"line too long", strings.Repeat("x", MaxLine+10), "CLIENT_ERROR line too long\r\n"},
		{"data without its end", "set k 0 0 2\r\nabcd\r\n", "CLIENT_ERROR bad data chunk\r\n"},
		{"length past what can be skipped", "set k 0 0 99999999\r\n", "SERVER_ERROR object too large for cache\r\n"},
		{"binary lengths that do not add up", string(binHeader(opGet, 10, 0, 5)) + "abcde", ""},
		{"binary body over the limit", string(binHeader(opSet, 1, 8, 1<<30)), ""},
	} {
		c := dialDoor(t, d)
		c.send(bad.in)
		got := c.closed()
		if bad.answer != "" && string(got) != bad.answer {
			t.Fatalf("%s: answered %q, want %q and close", bad.name, got, bad.answer)
		}
		good.send("get g\r\n")
		good.expect("VALUE g 0 1\r\ng\r\nEND\r\n")
	}
	if n := d.badInput.Load(); n != 5 {
		t.Fatalf("%d bad-input closes counted, want 5", n)
	}
}

// TestSlowReader: a client that sends gets and never reads their answers
// is disconnected after WriteTimeout; the others are served meanwhile.
func TestSlowReader(t *testing.T) {
	d := startDoor(t, Config{WriteTimeout: 300 * time.Millisecond}, newTestBackend(t, 2, false))
	good := dialDoor(t, d)
	big := strings.Repeat("b", 60000)
	good.send(fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", len(big), big))
	good.expect("STORED\r\n")
	slow := dialDoor(t, d)
	if tc, ok := slow.nc.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	req := strings.Repeat("get big\r\n", 1000)
	go func() {
		slow.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		for range 20 {
			if _, err := io.WriteString(slow.nc, req); err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for d.slowClients.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a client that reads nothing was not disconnected within 10 s")
		}
		good.send("get big\r\n")
		good.expect(fmt.Sprintf("VALUE big 0 %d\r\n%s\r\nEND\r\n", len(big), big))
		time.Sleep(10 * time.Millisecond)
	}
}

func binHeader(op byte, klen uint16, elen byte, blen uint32) []byte {
	h := make([]byte, headerLen)
	h[0], h[1] = binaryReq, op
	binary.BigEndian.PutUint16(h[2:], klen)
	h[4] = elen
	binary.BigEndian.PutUint32(h[8:], blen)
	return h
}

// binRequest builds a binary request.
func binRequest(op byte, extras, key, value []byte, cas uint64) []byte {
	h := binHeader(op, uint16(len(key)), byte(len(extras)), uint32(len(extras)+len(key)+len(value)))
	binary.BigEndian.PutUint32(h[12:], 0xfeedface)
	binary.BigEndian.PutUint64(h[16:], cas)
	return append(append(append(h, extras...), key...), value...)
}

// readPacket reads one binary response: status and body.
func (c *client) readPacket() (status uint16, body []byte) {
	c.tb.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	h := make([]byte, headerLen)
	if _, err := io.ReadFull(c.nc, h); err != nil {
		c.tb.Fatal(err)
	}
	body = make([]byte, binary.BigEndian.Uint32(h[8:]))
	if _, err := io.ReadFull(c.nc, body); err != nil {
		c.tb.Fatal(err)
	}
	if h[0] != binaryResp || binary.BigEndian.Uint32(h[12:]) != 0xfeedface {
		c.tb.Fatalf("bad response header %x", h)
	}
	return binary.BigEndian.Uint16(h[6:]), body
}

// TestSASL: with a token, ascii is refused and binary commands need SASL
// PLAIN with the token as password.
func TestSASL(t *testing.T) {
	d := startDoor(t, Config{AuthToken: "s3cret"}, newTestBackend(t, 1, false))
	a := dialDoor(t, d)
	a.send("get x\r\n")
	if got := a.closed(); !strings.HasPrefix(string(got), "CLIENT_ERROR authentication required") {
		t.Fatalf("ascii with a token: %q", got)
	}
	c := dialDoor(t, d)
	set := binRequest(opSet, make([]byte, 8), []byte("k"), []byte("v"), 0)
	c.send(string(set))
	if st, _ := c.readPacket(); st != stAuthError {
		t.Fatalf("set before auth: status %#x", st)
	}
	c.send(string(binRequest(opSASLList, nil, nil, nil, 0)))
	if st, body := c.readPacket(); st != stOK || string(body) != "PLAIN" {
		t.Fatalf("list mechs: %#x %q", st, body)
	}
	c.send(string(binRequest(opSASLAuth, nil, []byte("PLAIN"), []byte("\x00user\x00wrong"), 0)))
	if st, _ := c.readPacket(); st != stAuthError {
		t.Fatalf("wrong password: status %#x", st)
	}
	c.send(string(binRequest(opSASLAuth, nil, []byte("PLAIN"), []byte("\x00user\x00s3cret"), 0)))
	if st, _ := c.readPacket(); st != stOK {
		t.Fatalf("right password: status %#x", st)
	}
	c.send(string(set))
	if st, _ := c.readPacket(); st != stOK {
		t.Fatalf("set after auth: status %#x", st)
	}
}

// TestProtectedMode: beyond loopback without a token is refused.
func TestProtectedMode(t *testing.T) {
	if _, err := Listen(Config{Addr: "0.0.0.0:0"}, newTestBackend(t, 1, false)); err == nil || !strings.Contains(err.Error(), "protected mode") {
		t.Fatalf("0.0.0.0 without a token: %v", err)
	}
}
