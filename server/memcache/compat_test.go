package memcache

import (
	"fmt"
	"strings"
	"testing"
)

// The door answers as memcached 1.6 does where clients and tools saw it
// differ (issue 42), one test per difference.

// A set too large for the cache deletes the key: a reader never gets a
// value older than the last write tried. add keeps it, as memcached.
func TestTooLargeSetDeletesTheKey(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	c := dialDoor(t, d)
	huge := strings.Repeat("h", d.be.MaxValue()+1)
	c.send("set sv 0 0 3\r\nMOO\r\nset kept 0 0 3\r\nOLD\r\n")
	c.expect("STORED\r\nSTORED\r\n")
	c.send(fmt.Sprintf("set sv 0 0 %d\r\n%s\r\nget sv\r\n", len(huge), huge))
	c.expect("SERVER_ERROR object too large for cache\r\nEND\r\n")
	c.send(fmt.Sprintf("add kept 0 0 %d\r\n%s\r\nget kept\r\n", len(huge), huge))
	c.expect("SERVER_ERROR object too large for cache\r\nVALUE kept 0 3\r\nOLD\r\nEND\r\n")
	c.send(fmt.Sprintf("set kept 0 0 %d noreply\r\n%s\r\nget kept\r\n", len(huge), huge))
	c.expect("END\r\n")
}

// A binary set too large answers status 0x03, its value is skipped and the
// connection goes on; the key is deleted (a set), kept (an add).
func TestBinaryTooLargeKeepsTheConnection(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	c := dialDoor(t, d)
	flags := make([]byte, 8)
	huge := make([]byte, d.be.MaxValue()+4096)
	for _, key := range []string{"a", "b"} {
		c.send(string(binRequest(opSet, flags, []byte(key), []byte("old"), 0)))
		if st, _ := c.readPacket(); st != stOK {
			t.Fatalf("set %s: status %#x", key, st)
		}
	}
	c.send(string(binRequest(opSetQ, flags, []byte("a"), huge, 0)) + string(binRequest(opAdd, flags, []byte("b"), huge, 0)))
	for _, what := range []string{"setq", "add"} {
		if st, body := c.readPacket(); st != stTooLarge {
			t.Fatalf("%s too large: status %#x %q, want 0x03", what, st, body)
		}
	}
	c.send(string(binRequest(opGet, nil, []byte("a"), nil, 0)))
	if st, _ := c.readPacket(); st != stNotFound {
		t.Fatalf("get after a too large set: status %#x, want not found", st)
	}
	c.send(string(binRequest(opGet, nil, []byte("b"), nil, 0)))
	if st, body := c.readPacket(); st != stOK || string(body[4:]) != "old" {
		t.Fatalf("get after a too large add: status %#x %q", st, body)
	}
	if n := d.badInput.Load(); n != 0 {
		t.Fatalf("%d connections closed for bad input", n)
	}
}

// A get line longer than the read buffer is read a key at a time: 2,000
// keys of 40 bytes (libmemcached's mget, ~80 KB) and 18,725 keys (~400 KB)
// are all answered; a key too long ends the line with CLIENT_ERROR after
// the answers before it, and the connection goes on.
func TestLongGetLines(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 3, false))
	c := dialDoor(t, d)
	key := func(i int) string { return fmt.Sprintf("%040d", i) }
	var set strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&set, "set %s %d 0 %d noreply\r\n%d\r\n", key(i), i, len(fmt.Sprint(i)), i)
	}
	c.send(set.String())
	for _, n := range []int{2000, 18725} {
		var line, want strings.Builder
		line.WriteString("get")
		for i := range n {
			line.WriteString(" " + key(i%2000))
			fmt.Fprintf(&want, "VALUE %s %d %d\r\n%d\r\n", key(i%2000), i%2000, len(fmt.Sprint(i%2000)), i%2000)
		}
		if line.Len() < 2*MaxLine && n == 18725 || line.Len() < MaxLine {
			t.Fatalf("a line of %d bytes is not longer than the buffer", line.Len())
		}
		go c.nc.Write([]byte(line.String() + "\r\n"))
		c.expect(want.String() + "END\r\n")
	}
	c.send("get " + key(1) + " " + strings.Repeat("x", 300) + " " + key(2) + "\r\nget " + key(3) + "\r\n")
	c.expect("VALUE " + key(1) + " 1 1\r\n1\r\nCLIENT_ERROR bad command line format\r\nVALUE " + key(3) + " 3 1\r\n3\r\nEND\r\n")
}

// Malformed storage and delete lines are answered as memcached 1.6.18
// answers them (checked against it) and the connection goes on; an error
// respects noreply where memcached's does.
func TestMalformedLinesKeepTheConnection(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	for _, tc := range []struct{ in, want string }{
		{"cas foo 0 0 6 \r\nabcdef\r\n", "ERROR\r\nERROR\r\n"}, // the data line is no command either
		{"set k 0 0 -1\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set k 0 0 abc\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set k 0 0 -1 noreply\r\n", ""},
		{"set k 0 0\r\n", "ERROR\r\n"},
		{"set k 0 0 1 2 3\r\nx\r\n", "ERROR\r\nERROR\r\n"},
		{"set k 0 0 1 whatever\r\nx\r\n", "STORED\r\n"},
		{"delete k 10 noreply\r\n", ""},
		{"delete k 10\r\n", "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"},
		{"delete k 0 noreply\r\n", ""},
		{"delete k noreply\r\n", ""},
		{"delete a b c d\r\n", "ERROR\r\n"},
		{"incr k x noreply\r\n", ""},
		{"incr k\r\n", "ERROR\r\n"},
	} {
		c := dialDoor(t, d)
		c.send(tc.in + "version\r\n")
		c.expect(tc.want + "VERSION " + Version + "\r\n")
	}
	if n := d.badInput.Load(); n != 0 {
		t.Fatalf("%d connections closed for bad input", n)
	}
}
